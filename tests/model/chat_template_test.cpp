// Chat templates: exact renderings per family, detection from each family's Jinja source,
// names and errors.
#include "model/chat_template.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "../error_message.h"

namespace duet::model {
namespace {

const std::vector<ChatMessage> kConv = {
    {"system", "You are terse."}, {"user", "Hi there"}, {"assistant", "Hello."}, {"user", " How are you? "}};

using test::error_of;

TEST(ChatTemplate, Llama2) {
    EXPECT_EQ(render_chat(ChatTemplate::LLAMA2, kConv, true, "<s>", "</s>"),
              "<s>[INST] <<SYS>>\nYou are terse.\n<</SYS>>\n\nHi there [/INST] Hello. </s>"
              "<s>[INST] How are you? [/INST]");
    EXPECT_EQ(render_chat(ChatTemplate::LLAMA2, {{"user", "Q"}}, true, "<s>", "</s>"), "<s>[INST] Q [/INST]");
}

TEST(ChatTemplate, Llama3) {
    EXPECT_EQ(render_chat(ChatTemplate::LLAMA3, kConv, true, "<|begin_of_text|>", "<|end_of_text|>"),
              "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nYou are terse.<|eot_id|>"
              "<|start_header_id|>user<|end_header_id|>\n\nHi there<|eot_id|>"
              "<|start_header_id|>assistant<|end_header_id|>\n\nHello.<|eot_id|>"
              "<|start_header_id|>user<|end_header_id|>\n\nHow are you?<|eot_id|>"
              "<|start_header_id|>assistant<|end_header_id|>\n\n");
    EXPECT_EQ(render_chat(ChatTemplate::LLAMA3, {{"user", "Q"}}, false, "<|begin_of_text|>", ""),
              "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nQ<|eot_id|>");
}

TEST(ChatTemplate, ChatMl) {
    EXPECT_EQ(render_chat(ChatTemplate::CHATML, kConv, true, "", "<|im_end|>"),
              "<|im_start|>system\nYou are terse.<|im_end|>\n<|im_start|>user\nHi there<|im_end|>\n"
              "<|im_start|>assistant\nHello.<|im_end|>\n<|im_start|>user\n How are you? <|im_end|>\n"
              "<|im_start|>assistant\n");
    EXPECT_EQ(render_chat(ChatTemplate::CHATML, {{"user", "Q"}}, false, "", ""), "<|im_start|>user\nQ<|im_end|>\n");
}

TEST(ChatTemplate, Mistral) {
    EXPECT_EQ(render_chat(ChatTemplate::MISTRAL, kConv, true, "<s>", "</s>"),
              "<s>[INST] You are terse.\n\nHi there [/INST]Hello.</s>[INST]  How are you?  [/INST]");
    EXPECT_EQ(render_chat(ChatTemplate::MISTRAL, {{"user", "Q"}}, true, "<s>", "</s>"), "<s>[INST] Q [/INST]");
}

TEST(ChatTemplate, RoleOrderErrors) {
    EXPECT_EQ(error_of([] { render_chat(ChatTemplate::LLAMA2, {{"assistant", "x"}}, true, "<s>", "</s>"); }),
              "chat message 0: role \"assistant\" where the llama2 template expects \"user\" (an optional first "
              "system message, then user and assistant alternating, starting with user)");
    EXPECT_EQ(error_of([] {
                  render_chat(ChatTemplate::MISTRAL, {{"user", "a"}, {"system", "b"}}, true, "<s>", "</s>");
              }),
              "chat message 1: role \"system\" where the mistral template expects \"assistant\" (an optional first "
              "system message, then user and assistant alternating, starting with user)");
    EXPECT_EQ(error_of([] { render_chat(ChatTemplate::CHATML, {{"robot", "x"}}, true, "", ""); }),
              "chat message 0: role \"robot\" is not supported (allowed: system, user, assistant)");
}

TEST(ChatTemplate, Names) {
    EXPECT_EQ(chat_template_from_name("llama2"), ChatTemplate::LLAMA2);
    EXPECT_EQ(chat_template_from_name("llama3"), ChatTemplate::LLAMA3);
    EXPECT_EQ(chat_template_from_name("chatml"), ChatTemplate::CHATML);
    EXPECT_EQ(chat_template_from_name("qwen"), ChatTemplate::CHATML);
    EXPECT_EQ(chat_template_from_name("llama-2"), ChatTemplate::LLAMA2);
    EXPECT_EQ(chat_template_from_name("llama-3"), ChatTemplate::LLAMA3);
    EXPECT_EQ(chat_template_from_name("mistral"), ChatTemplate::MISTRAL);
    for (auto t : {ChatTemplate::LLAMA2, ChatTemplate::LLAMA3, ChatTemplate::CHATML, ChatTemplate::MISTRAL})
        EXPECT_EQ(chat_template_from_name(chat_template_name(t)), t);
    EXPECT_EQ(error_of([] { chat_template_from_name("vicuna"); }),
              "chat template \"vicuna\" is not known (allowed: llama2, llama3, chatml, mistral)");
}

// The tokenizer.chat_template sources these families ship (Hugging Face tokenizer_config.json).
constexpr const char* kLlama2Jinja =
    "{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}{% set system_message = "
    "messages[0]['content'] %}{% else %}{% set loop_messages = messages %}{% set system_message = false %}{% endif "
    "%}{% for message in loop_messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ "
    "raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% if "
    "loop.index0 == 0 and system_message != false %}{% set content = '<<SYS>>\\n' + system_message + "
    "'\\n<</SYS>>\\n\\n' + message['content'] %}{% else %}{% set content = message['content'] %}{% endif %}{% if "
    "message['role'] == 'user' %}{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}{% elif message['role'] "
    "== 'assistant' %}{{ ' '  + content.strip() + ' ' + eos_token }}{% endif %}{% endfor %}";
constexpr const char* kLlama3Jinja =
    "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = '<|start_header_id|>' + "
    "message['role'] + '<|end_header_id|>\\n\\n'+ message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 "
    "%}{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}{% if add_generation_prompt %}{{ "
    "'<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{% endif %}";
constexpr const char* kQwen2Jinja =
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ "
    "'<|im_start|>system\\nYou are a helpful assistant<|im_end|>\\n' }}{% endif %}{{'<|im_start|>' + "
    "message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt "
    "%}{{ '<|im_start|>assistant\\n' }}{% endif %}";
constexpr const char* kMistralJinja =
    "{{ bos_token }}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ "
    "raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% if "
    "message['role'] == 'user' %}{{ '[INST] ' + message['content'] + ' [/INST]' }}{% elif message['role'] == "
    "'assistant' %}{{ message['content'] + eos_token}}{% else %}{{ raise_exception('Only user and assistant roles "
    "are supported!') }}{% endif %}{% endfor %}";

TEST(ChatTemplate, DetectsEachFamilyFromItsJinja) {
    EXPECT_EQ(detect_chat_template(kLlama2Jinja), ChatTemplate::LLAMA2);
    EXPECT_EQ(detect_chat_template(kLlama3Jinja), ChatTemplate::LLAMA3);
    EXPECT_EQ(detect_chat_template(kQwen2Jinja), ChatTemplate::CHATML);
    EXPECT_EQ(detect_chat_template(kMistralJinja), ChatTemplate::MISTRAL);
    EXPECT_EQ(detect_chat_template("{{ messages }}"), std::nullopt);
    EXPECT_EQ(detect_chat_template(""), std::nullopt);
}

}  // namespace
}  // namespace duet::model
