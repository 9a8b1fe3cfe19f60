// parse_json_schema_text: JSON text -> ordered_json in linear time with a nesting limit.
//
// Why not ordered_json::parse: nlohmann's ordered_map is a vector of pair<const string, json>,
// whose move may throw, so every reallocation while an object grows deep-copies the members
// already in it, and every insertion searches the keys linearly. A 1500-deep schema of 114 KB
// took 15 s to parse that way (json::parse: 0.02 s), an object of 120 000 keys 45 s. Here each
// container is assembled bottom-up from plain vectors and moved in once, with a reserved size.
#include <fmt/format.h>

#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "core/error.h"
#include "model/grammar/json_schema.h"

namespace duet::model::grammar {
namespace {

using ojson = nlohmann::ordered_json;

class Builder : public nlohmann::json_sax<ojson> {
public:
    Builder(int max_depth, std::string source) : max_depth_(max_depth), source_(std::move(source)) {}
    ojson result;
    std::string error;

    bool null() override { return value(ojson(nullptr)); }
    bool boolean(bool v) override { return value(ojson(v)); }
    bool number_integer(number_integer_t v) override { return value(ojson(v)); }
    bool number_unsigned(number_unsigned_t v) override { return value(ojson(v)); }
    bool number_float(number_float_t v, const string_t&) override { return value(ojson(v)); }
    bool string(string_t& v) override { return value(ojson(std::move(v))); }
    bool binary(binary_t&) override { return fail_with("binary values are not JSON"); }
    bool start_object(std::size_t) override { return open(true); }
    bool start_array(std::size_t) override { return open(false); }
    bool key(string_t& k) override {
        Frame& f = stack_.back();
        if (!f.keys.insert(k).second) return fail_with(fmt::format("duplicate key '{}' in an object", k));
        f.key = std::move(k);
        return true;
    }
    bool end_object() override {
        Frame f = std::move(stack_.back());
        stack_.pop_back();
        ojson obj = ojson::object();
        auto& m = obj.get_ref<ojson::object_t&>();
        m.reserve(f.members.size());  // no reallocation below: members are moved in, never copied
        for (auto& [k, v] : f.members) m.emplace_back(std::move(k), std::move(v));
        return value(std::move(obj));
    }
    bool end_array() override {
        Frame f = std::move(stack_.back());
        stack_.pop_back();
        ojson arr = ojson::array();
        arr.get_ref<ojson::array_t&>() = std::move(f.items);
        return value(std::move(arr));
    }
    bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
        return fail_with(e.what());
    }

private:
    struct Frame {
        bool object = false;
        std::string key;
        std::vector<std::pair<std::string, ojson>> members;
        std::vector<ojson> items;
        std::unordered_set<std::string> keys;
    };
    std::vector<Frame> stack_;
    int max_depth_;
    std::string source_;

    bool fail_with(const std::string& what) {
        if (error.empty()) error = what;
        return false;
    }
    bool open(bool object) {
        if (int(stack_.size()) >= max_depth_)
            return fail_with(fmt::format("JSON nests deeper than {} levels (the limit on JSON nesting)", max_depth_));
        stack_.push_back({});
        stack_.back().object = object;
        return true;
    }
    bool value(ojson v) {
        if (stack_.empty()) {
            result = std::move(v);
        } else if (stack_.back().object) {
            Frame& f = stack_.back();
            f.members.emplace_back(std::move(f.key), std::move(v));
        } else {
            stack_.back().items.push_back(std::move(v));
        }
        return true;
    }
};

}  // namespace

nlohmann::ordered_json parse_json_schema_text(std::string_view text, std::string_view source, int max_depth) {
    Builder b(max_depth, std::string(source));
    const bool ok = ojson::sax_parse(text.begin(), text.end(), &b);
    if (!ok) fail("{}: {}", source, b.error.empty() ? "not valid JSON" : b.error);
    return std::move(b.result);
}

}  // namespace duet::model::grammar
