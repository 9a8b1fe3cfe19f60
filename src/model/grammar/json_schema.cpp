#include "model/grammar/json_schema.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "core/error.h"

namespace duet::model::grammar {
namespace {

using ojson = nlohmann::ordered_json;

const std::set<std::string> kAnnotations = {"title",   "description", "default", "examples", "format",
                                            "$schema", "$id",         "$comment", "$defs",   "definitions"};
const std::set<std::string> kHandled = {"type",     "properties", "required",  "additionalProperties",
                                        "items",    "minItems",   "maxItems",  "minLength",
                                        "maxLength", "enum",      "const",     "anyOf",
                                        "oneOf",    "$ref"};

std::string sanitize(std::string_view s) {
    std::string out;
    for (char c : s) out += std::isalnum(uint8_t(c)) ? c : '-';
    if (out.empty()) out = "x";
    return out.substr(0, 40);
}

int count_in(const ojson& s, const char* key, int fallback, const std::string& path, const std::string& source) {
    auto it = s.find(key);
    if (it == s.end()) return fallback;
    if (!it->is_number_integer() || it->get<int64_t>() < 0 || it->get<int64_t>() > 1000)
        fail("{}: {}/{}: must be an integer from 0 to 1000 (got {})", source, path, key, it->dump());
    return int(it->get<int64_t>());
}

// {m,n} suffix ("" for {0,inf}, i.e. callers use * themselves).
std::string repeat(int lo, int hi) {
    if (hi < 0) return fmt::format("{{{},}}", lo);
    return fmt::format("{{{},{}}}", lo, hi);
}

}  // namespace

std::string grammar_literal(std::string_view text) {
    std::string out = "\"";
    for (char c : text) {
        const uint8_t b = uint8_t(c);
        if (c == '"') out += "\\\"";
        else if (c == '\\') out += "\\\\";
        else if (c == '\n') out += "\\n";
        else if (c == '\r') out += "\\r";
        else if (c == '\t') out += "\\t";
        else if (b < 0x20 || b == 0x7F) out += fmt::format("\\x{:02x}", b);
        else out += c;
    }
    return out + "\"";
}

std::string json_value_rules() {
    return R"(value ::= object | array | string | number | boolean | null
object ::= "{" ws ( string ws ":" ws value ws ( "," ws string ws ":" ws value ws )* )? "}"
array ::= "[" ws ( value ws ( "," ws value ws )* )? "]"
string ::= "\"" char* "\""
char ::= [^"\\\x00-\x1f] | "\\" ( ["\\/bfnrt] | "u" ( [0-9a-cA-Ce-fE-F] hex hex hex | [dD] [0-7] hex hex ) )
hex ::= [0-9a-fA-F]
integer ::= "-"? ( "0" | [1-9] [0-9]{0,15} )
number ::= integer ( "." [0-9]{1,16} )? ( [eE] [-+]? [0-9]{1,2} )?
boolean ::= "true" | "false"
null ::= "null"
ws ::= " "?
)";
}

std::string json_object_grammar() { return "root ::= object\n" + json_value_rules(); }

struct JsonSchemaCompiler::Ctx {
    const ojson* root;
    std::map<std::string, std::string> refs;  // "#/$defs/x" -> rule name
};

std::string JsonSchemaCompiler::fresh(const std::string& base) {
    std::string name = sanitize(base);
    for (int i = 2; std::find(used_.begin(), used_.end(), name) != used_.end(); ++i)
        name = sanitize(base) + "-" + std::to_string(i);
    used_.push_back(name);
    return name;
}

std::string JsonSchemaCompiler::add(const ojson& schema, std::string_view name) {
    Ctx ctx{&schema, {}};
    return visit(schema, "s-" + std::string(name), "", ctx);
}

std::string JsonSchemaCompiler::rules() const { return out_ + json_value_rules(); }

std::string JsonSchemaCompiler::visit(const ojson& s, const std::string& name, const std::string& path, Ctx& ctx) {
    const std::string where = path.empty() ? "/" : path;
    if (s.is_boolean()) {
        if (s.get<bool>()) return "value";
        fail("{}: {}: the schema 'false' matches nothing", source_, where);
    }
    if (!s.is_object()) fail("{}: {}: a schema must be an object, got {}", source_, where, s.dump());
    for (const auto& [k, _] : s.items())
        if (!kAnnotations.count(k) && !kHandled.count(k))
            fail("{}: {}: keyword '{}' is not supported (supported: type, properties, required, "
                 "additionalProperties, items, minItems, maxItems, minLength, maxLength, enum, const, anyOf, oneOf, "
                 "$ref; annotations are ignored)",
                 source_, where, k);
    const std::string rule = fresh(name);
    std::string body;
    if (auto ref = s.find("$ref"); ref != s.end()) {
        const std::string r = ref->is_string() ? ref->get<std::string>() : "";
        std::string key;
        for (const char* prefix : {"#/$defs/", "#/definitions/"})
            if (r.rfind(prefix, 0) == 0) key = r.substr(std::string(prefix).size()), body = prefix;
        const char* section = body == "#/$defs/" ? "$defs" : "definitions";
        if (key.empty() || !ctx.root->contains(section) || !(*ctx.root)[section].contains(key))
            fail("{}: {}/$ref: '{}' does not name an entry of #/$defs or #/definitions", source_, path, r);
        auto known = ctx.refs.find(r);
        if (known == ctx.refs.end()) {
            const std::string target = fresh(name + "-" + key);
            used_.pop_back();  // visit() claims it
            known = ctx.refs.emplace(r, target).first;
            visit((*ctx.root)[section][key], target, "/" + std::string(section) + "/" + key, ctx);
        }
        body = known->second;
    } else if (auto e = s.find("const"); e != s.end()) {
        body = grammar_literal(e->dump());
    } else if (auto en = s.find("enum"); en != s.end()) {
        if (!en->is_array() || en->empty()) fail("{}: {}/enum: must be a non-empty array", source_, path);
        for (const auto& v : *en) body += (body.empty() ? "" : " | ") + grammar_literal(v.dump());
    } else if (auto any = s.contains("anyOf") ? s.find("anyOf") : s.find("oneOf"); any != s.end()) {
        const std::string key = s.contains("anyOf") ? "anyOf" : "oneOf";
        if (!any->is_array() || any->empty()) fail("{}: {}/{}: must be a non-empty array", source_, path, key);
        for (size_t i = 0; i < any->size(); ++i)
            body += (i ? " | " : "") + visit((*any)[i], name + "-" + std::to_string(i),
                                             fmt::format("{}/{}/{}", path, key, i), ctx);
    } else {
        std::vector<std::string> types;
        if (auto t = s.find("type"); t == s.end()) {
            types = {""};
        } else if (t->is_string()) {
            types = {t->get<std::string>()};
        } else if (t->is_array() && !t->empty()) {
            for (const auto& x : *t) types.push_back(x.is_string() ? x.get<std::string>() : x.dump());
        } else {
            fail("{}: {}/type: must be a type name or a non-empty array of them", source_, path);
        }
        for (const std::string& t : types) {
            std::string alt;
            if (t.empty()) alt = s.contains("properties") ? object_rule(s, name, path, ctx) : "value";
            else if (t == "object") alt = object_rule(s, name, path, ctx);
            else if (t == "array") {
                const std::string item = s.contains("items") ? visit(s["items"], name + "-item", path + "/items", ctx)
                                                             : "value";
                const int lo = count_in(s, "minItems", 0, path, source_), hi = count_in(s, "maxItems", -1, path, source_);
                if (hi >= 0 && hi < lo) fail("{}: {}: maxItems {} is below minItems {}", source_, where, hi, lo);
                if (hi == 0) alt = "\"[\" ws \"]\"";
                else if (lo == 0)
                    alt = fmt::format("\"[\" ws ( {} ws ( \",\" ws {} ws ){} )? \"]\"", item, item, repeat(0, hi < 0 ? -1 : hi - 1));
                else
                    alt = fmt::format("\"[\" ws {} ws ( \",\" ws {} ws ){} \"]\"", item, item,
                                      repeat(lo - 1, hi < 0 ? -1 : hi - 1));
            } else if (t == "string") {
                const int lo = count_in(s, "minLength", 0, path, source_), hi = count_in(s, "maxLength", -1, path, source_);
                if (hi >= 0 && hi < lo) fail("{}: {}: maxLength {} is below minLength {}", source_, where, hi, lo);
                alt = lo == 0 && hi < 0 ? "string" : fmt::format("\"\\\"\" char{} \"\\\"\"", repeat(lo, hi));
            } else if (t == "number" || t == "integer" || t == "boolean" || t == "null") {
                alt = t;
            } else {
                fail("{}: {}/type: '{}' is not a JSON Schema type (allowed: object, array, string, number, integer, "
                     "boolean, null)",
                     source_, path, t);
            }
            body += (body.empty() ? "" : " | ") + alt;
        }
    }
    out_ += rule + " ::= " + body + "\n";
    return rule;
}

// Properties in schema order, required ones first; an optional property may be left out.
std::string JsonSchemaCompiler::object_rule(const ojson& s, const std::string& name, const std::string& path, Ctx& ctx) {
    const std::string where = path.empty() ? "/" : path;
    std::set<std::string> required;
    if (auto r = s.find("required"); r != s.end()) {
        if (!r->is_array()) fail("{}: {}/required: must be an array of property names", source_, path);
        for (const auto& k : *r) {
            if (!k.is_string()) fail("{}: {}/required: must be an array of property names", source_, path);
            required.insert(k.get<std::string>());
        }
    }
    const ojson props = s.value("properties", ojson::object());
    if (!props.is_object()) fail("{}: {}/properties: must be an object", source_, path);
    for (const auto& k : required)
        if (!props.contains(k)) fail("{}: {}/required: '{}' is not in properties", source_, path, k);
    const auto extra = s.find("additionalProperties");
    if (props.empty()) {
        if (extra == s.end() || (extra->is_boolean() && extra->get<bool>())) return "object";
        if (extra->is_boolean()) return "\"{\" ws \"}\"";
        const std::string v = visit(*extra, name + "-value", path + "/additionalProperties", ctx);
        return fmt::format("\"{{\" ws ( string ws \":\" ws {} ws ( \",\" ws string ws \":\" ws {} ws )* )? \"}}\"", v, v);
    }
    std::vector<std::string> req, opt;  // "key" ws ":" ws value, per property
    for (const auto& [k, sub] : props.items()) {
        const std::string v = visit(sub, name + "-" + k, path + "/properties/" + k, ctx);
        const std::string kv = fmt::format("{} ws \":\" ws {}", grammar_literal(ojson(k).dump()), v);
        (required.count(k) ? req : opt).push_back(kv);
    }
    std::string body = "\"{\" ws";
    for (size_t i = 0; i < req.size(); ++i) body += (i ? " \",\" ws " : " ") + req[i] + " ws";
    if (!req.empty()) {
        for (const auto& kv : opt) body += " ( \",\" ws " + kv + " ws )?";
    } else {
        // a_i: any in-order subset of opt[i..], comma separated, no leading comma.
        std::string next = "\"\"";
        for (size_t i = opt.size(); i-- > 0;) {
            std::string tail;
            for (size_t j = i + 1; j < opt.size(); ++j) tail += " ( \",\" ws " + opt[j] + " ws )?";
            const std::string a = fresh(name + "-opt");
            out_ += fmt::format("{} ::= {} ws{} | {}\n", a, opt[i], tail, next);
            next = a;
        }
        body += " " + next;
    }
    return body + " \"}\"";
}

std::string json_schema_to_grammar(const ojson& schema, std::string_view source) {
    JsonSchemaCompiler c(source);
    const std::string root = c.add(schema, "root");
    return "root ::= " + root + "\n" + c.rules();
}

}  // namespace duet::model::grammar
