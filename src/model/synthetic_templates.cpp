// The chat templates of the model families, as their tokenizer_config.json ships them, so
// that generated models exercise the same template detection as downloaded ones.
#include <map>

#include "core/error.h"
#include "model/synthetic_vocab.h"

namespace duet::model {
namespace {

const std::map<std::string, std::string, std::less<>>& templates() {
    static const std::map<std::string, std::string, std::less<>> t = {
        {"llama-2",
         "{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}{% set system_message = "
         "messages[0]['content'] %}{% else %}{% set loop_messages = messages %}{% set system_message = false %}"
         "{% endif %}{% for message in loop_messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) "
         "%}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}"
         "{% if loop.index0 == 0 and system_message != false %}{% set content = '<<SYS>>\\n' + system_message + "
         "'\\n<</SYS>>\\n\\n' + message['content'] %}{% else %}{% set content = message['content'] %}{% endif %}"
         "{% if message['role'] == 'user' %}{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}{% elif "
         "message['role'] == 'assistant' %}{{ ' '  + content.strip() + ' ' + eos_token }}{% endif %}{% endfor %}"},
        {"llama-3",
         "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = "
         "'<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + "
         "'<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}{{ content }}"
         "{% endfor %}{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}"
         "{% endif %}"},
        {"chatml",
         "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ "
         "'<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + "
         "message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if "
         "add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"},
        {"mistral",
         "{{ bos_token }}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) "
         "%}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}"
         "{% if message['role'] == 'user' %}{{ '[INST] ' + message['content'] + ' [/INST]' }}{% elif "
         "message['role'] == 'assistant' %}{{ message['content'] + eos_token}}{% else %}{{ raise_exception('Only "
         "user and assistant roles are supported!') }}{% endif %}{% endfor %}"},
    };
    return t;
}

}  // namespace

const std::string& chat_template_text(std::string_view family) {
    auto it = templates().find(family);
    if (it == templates().end()) {
        std::string known;
        for (const auto& name : chat_template_families()) known += (known.empty() ? "" : ", ") + name;
        fail("unknown chat template family '{}' (known: {})", family, known);
    }
    return it->second;
}

std::vector<std::string> chat_template_families() {
    std::vector<std::string> names;
    for (const auto& [name, text] : templates()) names.push_back(name);
    return names;
}

}  // namespace duet::model
