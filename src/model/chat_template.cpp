#include "model/chat_template.h"

#include "core/error.h"

namespace duet::model {

namespace {

constexpr std::string_view kWhitespace = " \t\n\r\f\v";

std::string trim(std::string_view s) {  // Python str.strip() / Jinja trim on ASCII whitespace
    const size_t b = s.find_first_not_of(kWhitespace);
    if (b == std::string_view::npos) return {};
    const size_t e = s.find_last_not_of(kWhitespace);
    return std::string(s.substr(b, e - b + 1));
}

void check_roles(const std::vector<ChatMessage>& msgs) {
    for (size_t i = 0; i < msgs.size(); ++i) {
        const std::string& r = msgs[i].role;
        if (r != "system" && r != "user" && r != "assistant")
            fail("chat message {}: role \"{}\" is not supported (allowed: system, user, assistant)", i, r);
    }
}

// Llama-2 and Mistral: an optional leading system message, then user/assistant alternating,
// starting with user. Returns the index of the first non-system message.
size_t check_alternation(ChatTemplate t, const std::vector<ChatMessage>& msgs) {
    const size_t first = !msgs.empty() && msgs[0].role == "system" ? 1 : 0;
    for (size_t i = first; i < msgs.size(); ++i) {
        const char* want = (i - first) % 2 == 0 ? "user" : "assistant";
        if (msgs[i].role != want)
            fail("chat message {}: role \"{}\" where the {} template expects \"{}\" (an optional first system "
                 "message, then user and assistant alternating, starting with user)",
                 i, msgs[i].role, chat_template_name(t), want);
    }
    return first;
}

std::string render_llama2(const std::vector<ChatMessage>& msgs, std::string_view bos, std::string_view eos) {
    const size_t first = check_alternation(ChatTemplate::LLAMA2, msgs);
    std::string out;
    for (size_t i = first; i < msgs.size(); ++i) {
        std::string content = msgs[i].content;
        if (i == first && first == 1) content = "<<SYS>>\n" + msgs[0].content + "\n<</SYS>>\n\n" + content;
        if (msgs[i].role == "user") {
            out.append(bos).append("[INST] ").append(trim(content)).append(" [/INST]");
        } else {
            out.append(" ").append(trim(content)).append(" ").append(eos);
        }
    }
    return out;
}

std::string render_mistral(const std::vector<ChatMessage>& msgs, std::string_view bos, std::string_view eos) {
    const size_t first = check_alternation(ChatTemplate::MISTRAL, msgs);
    std::string out(bos);
    for (size_t i = first; i < msgs.size(); ++i) {
        if (msgs[i].role == "user") {
            std::string content = msgs[i].content;
            if (i == first && first == 1) content = msgs[0].content + "\n\n" + content;
            out.append("[INST] ").append(content).append(" [/INST]");
        } else {
            out.append(msgs[i].content).append(eos);
        }
    }
    return out;
}

}  // namespace

std::optional<ChatTemplate> detect_chat_template(std::string_view src) {
    const auto has = [&](std::string_view m) { return src.find(m) != std::string_view::npos; };
    if (has("<|start_header_id|>") && has("<|eot_id|>")) return ChatTemplate::LLAMA3;
    if (has("<|im_start|>")) return ChatTemplate::CHATML;
    if (has("[INST]") && has("<<SYS>>")) return ChatTemplate::LLAMA2;
    if (has("[INST]")) return ChatTemplate::MISTRAL;
    return std::nullopt;
}

ChatTemplate chat_template_from_name(std::string_view name) {
    if (name == "llama2" || name == "llama-2") return ChatTemplate::LLAMA2;
    if (name == "llama3" || name == "llama-3") return ChatTemplate::LLAMA3;
    if (name == "chatml" || name == "qwen") return ChatTemplate::CHATML;
    if (name == "mistral") return ChatTemplate::MISTRAL;
    fail("chat template \"{}\" is not known (allowed: llama2, llama3, chatml, mistral)", name);
}

std::string_view chat_template_name(ChatTemplate t) {
    switch (t) {
        case ChatTemplate::LLAMA2: return "llama2";
        case ChatTemplate::LLAMA3: return "llama3";
        case ChatTemplate::CHATML: return "chatml";
        case ChatTemplate::MISTRAL: return "mistral";
    }
    return "?";
}

std::string render_chat(ChatTemplate t, const std::vector<ChatMessage>& msgs, bool add_generation_prompt,
                        std::string_view bos, std::string_view eos) {
    check_roles(msgs);
    std::string out;
    switch (t) {
        case ChatTemplate::LLAMA2:
            return render_llama2(msgs, bos, eos);  // the prompt already ends with " [/INST]"
        case ChatTemplate::MISTRAL:
            return render_mistral(msgs, bos, eos);
        case ChatTemplate::LLAMA3:
            out.append(bos);
            for (const ChatMessage& m : msgs)
                out.append("<|start_header_id|>").append(m.role).append("<|end_header_id|>\n\n")
                    .append(trim(m.content)).append("<|eot_id|>");
            if (add_generation_prompt) out.append("<|start_header_id|>assistant<|end_header_id|>\n\n");
            return out;
        case ChatTemplate::CHATML:
            for (const ChatMessage& m : msgs)
                out.append("<|im_start|>").append(m.role).append("\n").append(m.content).append("<|im_end|>\n");
            if (add_generation_prompt) out.append("<|im_start|>assistant\n");
            return out;
    }
    return out;
}

}  // namespace duet::model
