// The tokenizers `duet gen-model` writes (model/synthetic_writer.h) load and work: kind and
// pre-tokenizer as the preset says, round trips, real merges, special tokens, end of
// generation, and the chat template recognised from tokenizer.chat_template.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "format/gguf.h"
#include "model/chat_template.h"
#include "model/synthetic_writer.h"
#include "model/tokenizer/tokenizer.h"

namespace duet::model {
namespace {

TEST(TokenizerSynthetic, EveryTinyPresetsVocabularyWorks) {
    int n_checked = 0;
    for (const ArchPreset& preset : arch_presets()) {
        if (!preset.tiny) continue;
        SCOPED_TRACE(preset.name);
        const std::string path = (std::filesystem::temp_directory_path() /
                                  ("duet_tok_syn_" + std::to_string(::getpid()) + "_" + preset.name + ".gguf"))
                                     .string();
        SyntheticOptions opt;
        opt.n_layer = 1;
        opt.n_threads = 1;
        write_synthetic_model(path, preset, opt);
        auto file = format::GgufFile::open(path);
        auto tok = Tokenizer::from_gguf(file);
        EXPECT_EQ(tok->kind_enum(), preset.tokenizer);
        EXPECT_EQ(tok->n_vocab(), preset.hparams.n_vocab);
        if (preset.tokenizer == TokenizerKind::BPE) {
            EXPECT_EQ(tok->vocab().pre, preset.tokenizer_pre);
        }

        const std::string english = "Once upon a time, the little dog went to the park with her friend.";
        const auto ids = tok->encode(english, false, false);
        // Even the smallest (384 tokens, 125 of them merges) must merge common English.
        EXPECT_LT(ids.size(), english.size() * 3 / 4);
        EXPECT_EQ(tok->decode(ids), english);
        const std::string utf8 = "caf\xC3\xA9 \xE4\xB8\xAD\xE6\x96\x87 \xF0\x9F\x98\x80 bad\xFF";
        EXPECT_EQ(tok->decode(tok->encode(utf8, true, false)), utf8);
        ASSERT_GE(tok->eos(), 0);
        EXPECT_TRUE(tok->is_eog(tok->eos()));

        const auto jinja = file.find_string("tokenizer.chat_template");
        ASSERT_TRUE(jinja.has_value());
        const auto detected = detect_chat_template(*jinja);
        ASSERT_TRUE(detected.has_value());
        EXPECT_EQ(*detected, chat_template_from_name(preset.chat_template));

        // The rendered prompt's special tokens are single tokens of this vocabulary.
        const std::string bos = tok->bos() >= 0 ? tok->token_text(tok->bos()) : "";
        const std::string prompt =
            render_chat(*detected, {{"user", "Hello"}}, true, bos, tok->token_text(tok->eos()));
        const auto pids = tok->encode(prompt, false, true);
        int n_control = 0;
        for (int32_t id : pids) n_control += tok->is_control(id);
        EXPECT_GE(n_control, 1) << prompt;
        std::filesystem::remove(path);
        ++n_checked;
    }
    EXPECT_GE(n_checked, 4);
}

}  // namespace
}  // namespace duet::model
