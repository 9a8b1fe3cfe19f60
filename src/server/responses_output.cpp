#include "server/responses_output.h"

#include "server/openai_render.h"

namespace duet::server {

using nlohmann::json;
using nlohmann::ordered_json;

namespace {

ordered_json text_part(const std::string& text) {
    return {{"type", "output_text"}, {"annotations", json::array()}, {"logprobs", json::array()}, {"text", text}};
}

}  // namespace

void ResponsesOutput::open_message(std::vector<ordered_json>& out) {
    close("completed", out);
    const size_t index = items_.size();
    const std::string id = "msg_" + random_hex(32);
    ordered_json item = {
        {"id", id}, {"type", "message"}, {"status", "in_progress"}, {"content", json::array()}, {"role", "assistant"}};
    out.push_back({{"type", "response.output_item.added"}, {"output_index", index}, {"item", item}});
    item["content"].push_back(text_part(""));
    items_.push_back(item);
    out.push_back({{"type", "response.content_part.added"},
                   {"item_id", id},
                   {"output_index", index},
                   {"content_index", 0},
                   {"part", text_part("")}});
    open_ = Open::MESSAGE;
}

void ResponsesOutput::close(const char* status, std::vector<ordered_json>& out) {
    if (open_ == Open::NONE) return;
    const size_t index = items_.size() - 1;
    ordered_json& item = items_[index];
    const std::string id = item["id"];
    if (open_ == Open::MESSAGE) {
        const std::string text = item["content"][0]["text"];
        out.push_back({{"type", "response.output_text.done"},
                       {"item_id", id},
                       {"output_index", index},
                       {"content_index", 0},
                       {"text", text},
                       {"logprobs", json::array()}});
        out.push_back({{"type", "response.content_part.done"},
                       {"item_id", id},
                       {"output_index", index},
                       {"content_index", 0},
                       {"part", item["content"][0]}});
    } else {
        out.push_back({{"type", "response.function_call_arguments.done"},
                       {"item_id", id},
                       {"output_index", index},
                       {"name", item["name"]},
                       {"arguments", item["arguments"]}});
    }
    item["status"] = status;
    out.push_back({{"type", "response.output_item.done"}, {"output_index", index}, {"item", item}});
    open_ = Open::NONE;
}

std::vector<ordered_json> ResponsesOutput::feed(const json& delta) {
    std::vector<ordered_json> out;
    if (auto c = delta.find("content");
        c != delta.end() && c->is_string() && !c->get_ref<const std::string&>().empty()) {
        if (open_ != Open::MESSAGE) open_message(out);
        const size_t index = items_.size() - 1;
        const std::string piece = *c;
        items_[index]["content"][0]["text"] = items_[index]["content"][0]["text"].get<std::string>() + piece;
        out.push_back({{"type", "response.output_text.delta"},
                       {"item_id", items_[index]["id"]},
                       {"output_index", index},
                       {"content_index", 0},
                       {"delta", piece},
                       {"logprobs", json::array()}});
    }
    auto calls = delta.find("tool_calls");
    if (calls == delta.end()) return out;
    for (const json& tc : *calls) {
        const json& fn = tc.at("function");
        if (tc.contains("id")) {  // a call's header: a new item
            dropping_ = !parallel_ && tc.at("index").get<size_t>() > 0;
            if (dropping_) continue;
            close("completed", out);
            ordered_json item = {{"id", "fc_" + random_hex(32)}, {"type", "function_call"},
                                 {"status", "in_progress"},      {"arguments", ""},
                                 {"call_id", tc.at("id")},       {"name", fn.at("name")}};
            out.push_back({{"type", "response.output_item.added"}, {"output_index", items_.size()}, {"item", item}});
            items_.push_back(item);
            open_ = Open::CALL;
        }
        const std::string args = fn.value("arguments", "");
        if (dropping_ || args.empty() || open_ != Open::CALL) continue;
        const size_t index = items_.size() - 1;
        items_[index]["arguments"] = items_[index]["arguments"].get<std::string>() + args;
        out.push_back({{"type", "response.function_call_arguments.delta"},
                       {"item_id", items_[index]["id"]},
                       {"output_index", index},
                       {"delta", args}});
    }
    return out;
}

std::vector<ordered_json> ResponsesOutput::finish(bool incomplete) {
    std::vector<ordered_json> out;
    if (items_.empty()) open_message(out);
    close(incomplete ? "incomplete" : "completed", out);
    return out;
}

std::string ResponsesOutput::output_text() const {
    std::string s;
    for (const auto& it : items_)
        if (it["type"] == "message") s += it["content"][0]["text"].get<std::string>();
    return s;
}

}  // namespace duet::server
