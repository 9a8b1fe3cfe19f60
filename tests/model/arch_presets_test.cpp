// The preset table: names others depend on, and shapes checked against the parameter counts
// the model publishers state (Hugging Face model cards / safetensors metadata).
#include "model/arch_presets.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace duet::model {
namespace {

TEST(ArchPresets, FixedNamesExist) {
    for (const char* name : {"tiny-llama", "tiny-llama3", "tiny-mistral", "tiny-qwen2", "llama2-7b", "llama3-8b",
                             "mistral-7b", "qwen2.5-0.5b", "qwen2.5-7b", "bench-1b"}) {
        EXPECT_NE(find_arch_preset(name), nullptr) << name;
    }
    EXPECT_EQ(find_arch_preset("gpt-5"), nullptr);
    EXPECT_EQ(arch_preset_names().size(), arch_presets().size());
}

TEST(ArchPresets, UnknownNameListsKnownOnes) {
    try {
        arch_preset("llama9", "--arch");
        FAIL();
    } catch (const Error& e) {
        EXPECT_EQ(std::string(e.what()),
                  "unknown --arch 'llama9' (known: tiny-llama, tiny-llama3, tiny-mistral, tiny-qwen2, small-llama, tiny-mixtral, "
                  "tiny-qwen2moe, tiny-qwen3moe, tiny-deepseek2, tiny-deepseek3, tiny-deepseek2-yarn, "
                  "llama2-7b, llama2-13b, llama2-70b, llama3-8b, llama3-70b, mistral-7b, qwen2.5-0.5b, qwen2.5-7b, qwen2.5-72b, "
                  "bench-1b, mixtral-8x7b, qwen3-30b-a3b, qwen3-235b-a22b, deepseek-v3)");
    }
}

TEST(ArchPresets, ParameterCountsMatchPublishedModels) {
    EXPECT_EQ(find_arch_preset("llama2-7b")->n_params(), 6738415616);
    EXPECT_EQ(find_arch_preset("llama3-8b")->n_params(), 8030261248);
    EXPECT_EQ(find_arch_preset("mistral-7b")->n_params(), 7241732096);
    EXPECT_EQ(find_arch_preset("qwen2.5-0.5b")->n_params(), 494032768);
    EXPECT_EQ(find_arch_preset("qwen2.5-7b")->n_params(), 7615616512);
    EXPECT_EQ(find_arch_preset("bench-1b")->n_params(), 1100048384);
    // the 13B/70B-class presets (safetensors metadata of the same Hugging Face repositories)
    EXPECT_EQ(find_arch_preset("llama2-13b")->n_params(), 13015864320);
    EXPECT_EQ(find_arch_preset("llama2-70b")->n_params(), 68976648192);
    EXPECT_EQ(find_arch_preset("llama3-70b")->n_params(), 70553706496);
    EXPECT_EQ(find_arch_preset("qwen2.5-72b")->n_params(), 72706203648);
}

TEST(ArchPresets, TinyPresetsCoverEveryVariant) {
    const ArchPreset& l = *find_arch_preset_info("tiny-llama");
    EXPECT_EQ(l.tokenizer, TokenizerKind::SPM);
    EXPECT_EQ(l.hparams.n_head, l.hparams.n_head_kv);  // MHA
    EXPECT_FALSE(l.hparams.tied_output);
    const ArchPreset& l3 = *find_arch_preset_info("tiny-llama3");
    EXPECT_EQ(l3.tokenizer, TokenizerKind::BPE);
    EXPECT_EQ(l3.tokenizer_pre, "llama-bpe");
    EXPECT_TRUE(l3.hparams.has_rope_freqs);
    EXPECT_LT(l3.hparams.n_head_kv, l3.hparams.n_head);
    EXPECT_EQ(l3.hparams.rope_freq_base, 500000.0f);
    const ArchPreset& m = *find_arch_preset_info("tiny-mistral");
    EXPECT_EQ(m.tokenizer, TokenizerKind::SPM);
    EXPECT_EQ(m.hparams.n_gqa(), 4);
    EXPECT_EQ(m.hparams.arch, Arch::LLAMA);
    const ArchPreset& q = *find_arch_preset_info("tiny-qwen2");
    EXPECT_EQ(q.tokenizer_pre, "qwen2");
    EXPECT_TRUE(q.hparams.qkv_bias && q.hparams.tied_output && q.hparams.rope_neox);
    for (const ArchPreset& p : arch_presets()) {
        if (!p.tiny) continue;
        EXPECT_GE(p.hparams.head_dim, 16) << p.name;
        EXPECT_GE(p.hparams.n_vocab, 300) << p.name;
        EXPECT_LE(p.hparams.n_vocab, 600) << p.name;
        EXPECT_EQ(p.hparams.n_layer, 2) << p.name;
        EXPECT_EQ(p.hparams.n_ff % 32, 0) << p.name;  // q8_0 / q4_0 rows
    }
}

}  // namespace
}  // namespace duet::model
