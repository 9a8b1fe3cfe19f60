#include "server/tool_call_stream.h"

#include "server/openai_render.h"

namespace duet::server {

using nlohmann::json;

namespace {

std::string_view ltrim(std::string_view s) {
    const size_t b = s.find_first_not_of(" \t\r\n");
    return b == std::string_view::npos ? std::string_view() : s.substr(b);
}

json content_delta(const std::string& text) { return {{"content", text}}; }

}  // namespace

ToolCallStream::ToolCallStream(Mode mode, model::ChatTemplate tmpl, std::vector<std::string> tool_names)
    : mode_(mode), tmpl_(tmpl), names_(std::move(tool_names)),
      state_(mode == Mode::PLAIN ? State::TEXT : mode == Mode::FORCED ? State::CALL_HEADER : State::UNDECIDED),
      call_id_("call_" + random_hex(24)) {}

json ToolCallStream::header_delta(size_t index, const model::ChatToolCall& c) const {
    return {{"tool_calls", json::array({{{"index", index},
                                         {"id", c.id},
                                         {"type", "function"},
                                         {"function", {{"name", c.name}, {"arguments", ""}}}}})}};
}

json ToolCallStream::args_delta(size_t index, const std::string& args) {
    return {{"tool_calls", json::array({{{"index", index}, {"function", {{"arguments", args}}}}})}};
}

std::vector<json> ToolCallStream::feed(const std::string& piece) {
    std::vector<json> out;
    all_ += piece;
    buf_ += piece;
    if (state_ == State::UNDECIDED) {
        const std::string_view t = ltrim(buf_);
        const std::string_view marker = model::tool_call_marker(tmpl_);
        const size_t n = std::min(t.size(), marker.size());
        if (t.substr(0, n) != marker.substr(0, n)) state_ = State::TEXT;  // cannot be a call
        else if (t.size() >= marker.size()) state_ = State::CALL_ARGS;    // a call in free text: decided at finish()
    }
    if (state_ == State::TEXT) {
        if (!buf_.empty()) out.push_back(content_delta(buf_));
        content_ += buf_;
        buf_.clear();
    } else if (state_ == State::CALL_HEADER) {
        for (const auto& name : names_) {
            const std::string prefix = model::tool_call_prefix(tmpl_, name);
            if (buf_.rfind(prefix, 0) != 0) continue;
            calls_.push_back({call_id_, name, ""});
            out.push_back(header_delta(0, calls_.back()));
            buf_.erase(0, prefix.size());
            state_ = State::CALL_ARGS;
            called_ = true;
            break;
        }
    }
    if (state_ == State::CALL_ARGS && mode_ == Mode::FORCED) {
        const size_t hold = model::tool_call_suffix(tmpl_).size();
        if (buf_.size() > hold) {
            const std::string args = buf_.substr(0, buf_.size() - hold);
            calls_.back().arguments += args;
            out.push_back(args_delta(0, args));
            buf_.erase(0, args.size());
        }
    }
    return out;
}

std::vector<json> ToolCallStream::finish() {
    std::vector<json> out;
    if (state_ == State::CALL_ARGS && mode_ == Mode::FORCED) {
        const std::string suffix = model::tool_call_suffix(tmpl_);
        if (buf_.size() >= suffix.size() && buf_.compare(buf_.size() - suffix.size(), suffix.size(), suffix) == 0) {
            const std::string args = buf_.substr(0, buf_.size() - suffix.size());
            calls_.back().arguments += args;
            if (!args.empty()) out.push_back(args_delta(0, args));
            buf_.clear();
            return out;
        }
        // Cut short (max_tokens, even the shortest completion did not fit): what was generated
        // goes out as unfinished arguments to a stream that already sent the call's start, but a
        // whole response never presents it as a call (finish_reason says "length").
        calls_.back().arguments += buf_;
        if (!buf_.empty()) out.push_back(args_delta(0, buf_));
        buf_.clear();
        called_ = false;
        content_ = all_;
        return out;
    }
    if (state_ == State::CALL_ARGS || state_ == State::UNDECIDED) {  // AUTO: a call, or text after all
        if (auto parsed = model::parse_tool_calls(tmpl_, all_)) {
            called_ = true;
            content_ = parsed->content;
            if (!content_.empty()) out.push_back(content_delta(content_));
            for (size_t i = 0; i < parsed->calls.size(); ++i) {
                model::ChatToolCall c = parsed->calls[i];
                c.id = i == 0 ? call_id_ : "call_" + random_hex(24);
                out.push_back(header_delta(i, c));
                out.push_back(args_delta(i, c.arguments));
                calls_.push_back(c);
            }
        } else {
            content_ += buf_;
            if (!buf_.empty()) out.push_back(content_delta(buf_));
        }
        buf_.clear();
        return out;
    }
    if (!buf_.empty()) {  // FORCED cut short before the name was complete, or left-over text
        content_ += buf_;
        out.push_back(content_delta(buf_));
        buf_.clear();
    }
    return out;
}

}  // namespace duet::server
