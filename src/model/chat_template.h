#pragma once
// Chat templates of the four common model families, rendered natively (no Jinja engine).
// The exact strings each produces are documented in docs/tokenizers.md; they match what
// the families' own tokenizer.chat_template Jinja renders for the same messages.
//
// The rendered text contains the special tokens as text (e.g. "<|im_start|>", and bos when
// the family's template writes it); encode it with add_bos = false, parse_special = true.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace duet::model {

enum class ChatTemplate { LLAMA2, LLAMA3, CHATML, MISTRAL };

struct ChatMessage {
    std::string role;  // "system", "user" or "assistant"
    std::string content;
};

// Recognises a family from the Jinja source in tokenizer.chat_template by its distinctive
// markers; nullopt when none matches.
std::optional<ChatTemplate> detect_chat_template(std::string_view jinja_source);

// "llama2", "llama3", "chatml", "mistral" (aliases "llama-2", "llama-3", "qwen"); anything else
// throws duet::Error listing the allowed names.
ChatTemplate chat_template_from_name(std::string_view name);
std::string_view chat_template_name(ChatTemplate t);

// Throws duet::Error for a role the template cannot express (naming the role, its index
// and the allowed roles), e.g. a system message that is not first.
std::string render_chat(ChatTemplate t, const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                        std::string_view bos, std::string_view eos);

}  // namespace duet::model
