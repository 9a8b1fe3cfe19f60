// Grammar-constrained sampling over real tokenizer kinds (the synthetic SPM and byte-level
// BPE vocabularies): the trie mask equals a token-by-token check, and sampling from random
// logits always produces text the grammar accepts, ending only where it may end.
#include <gtest/gtest.h>

#include <random>

#include "model/arch_presets.h"
#include "model/grammar/json_schema.h"
#include "model/grammar/matcher.h"
#include "model/sampler.h"
#include "model/synthetic_vocab.h"
#include "model/tokenizer/tokenizer.h"

namespace duet::model {
namespace {

using grammar::Grammar;
using grammar::Matcher;
using grammar::TokenTable;

std::unique_ptr<Tokenizer> synthetic_tokenizer(const char* arch) {
    const SyntheticVocab sv = build_synthetic_vocab(arch_preset(arch));
    Vocab v;
    v.kind = sv.model == "llama" ? TokenizerKind::SPM : TokenizerKind::BPE;
    v.tokens = sv.tokens;
    v.scores = sv.scores;
    for (int32_t t : sv.token_types) v.types.push_back(TokenType(t));
    v.merges = sv.merges;
    v.pre = sv.pre;
    v.bos_id = sv.bos_id;
    v.eos_id = sv.eos_id;
    v.eot_id = sv.eot_id.value_or(-1);
    v.unk_id = sv.unk_id.value_or(-1);
    v.add_bos = sv.add_bos;
    v.add_space_prefix = v.kind == TokenizerKind::SPM;
    return Tokenizer::from_vocab(v);
}

const char* kSchema = R"({"type":"object","properties":{
  "city":{"type":"string","maxLength":6},
  "unit":{"enum":["celsius","fahrenheit"]},
  "days":{"type":"array","items":{"type":"integer"},"maxItems":3}},
  "required":["city","unit"]})";

class GrammarSampling : public ::testing::TestWithParam<const char*> {};

TEST_P(GrammarSampling, TrieMaskEqualsTokenByTokenCheck) {
    auto tok = synthetic_tokenizer(GetParam());
    auto table = TokenTable::from_tokenizer(*tok);
    auto g = Grammar::parse(grammar::json_schema_to_grammar(nlohmann::ordered_json::parse(kSchema)));
    Matcher m(g, table);
    std::mt19937_64 rng(11);
    std::vector<uint8_t> allowed;
    for (int step = 0; step < 40 && !m.must_end(); ++step) {
        const int64_t n = m.allowed_tokens(allowed);
        int64_t count = 0;
        std::vector<int32_t> ids;
        for (int32_t id = 0; id < int32_t(table->n_vocab()); ++id) {
            ASSERT_EQ(bool(allowed[size_t(id)]), m.token_allowed(id)) << "step " << step << " token " << id;
            if (allowed[size_t(id)]) {
                ++count;
                if (!table->is_eog(id)) ids.push_back(id);
            }
        }
        EXPECT_EQ(n, count);
        if (ids.empty()) break;
        ASSERT_TRUE(m.accept_token(ids[rng() % ids.size()]));
    }
}

TEST_P(GrammarSampling, SampledTextAlwaysParsesAndValidates) {
    auto tok = synthetic_tokenizer(GetParam());
    const int64_t n_vocab = tok->n_vocab();
    SamplerParams p;
    p.grammar = Grammar::parse(grammar::json_schema_to_grammar(nlohmann::ordered_json::parse(kSchema)));
    p.grammar_tokens = TokenTable::from_tokenizer(*tok);
    std::mt19937_64 g(5);
    std::normal_distribution<float> d(0, 3);
    for (int run = 0; run < 20; ++run) {
        p.seed = uint64_t(run);
        p.temperature = run % 4 == 0 ? 0.0f : 1.0f;
        p.top_k = run % 3 == 0 ? 40 : 0;
        Sampler s(p, n_vocab);
        std::vector<int32_t> out;
        bool ended = false;
        for (int i = 0; i < 600 && !ended; ++i) {
            std::vector<float> logits(static_cast<size_t>(n_vocab));
            for (auto& x : logits) x = d(g);
            // A model that loves ending: EOS gets the highest logit every step.
            logits[size_t(tok->eos())] = 10.0f;
            const int32_t t = s.sample(logits.data());
            s.accept(t);
            if (tok->is_eog(t)) {
                ended = true;
                EXPECT_TRUE(s.matcher()->can_end());
            } else {
                out.push_back(t);
            }
        }
        ASSERT_TRUE(ended) << "run " << run;
        std::string text;
        for (int32_t t : out) text += tok->token_to_piece(t);
        const auto v = nlohmann::json::parse(text, nullptr, false);
        ASSERT_FALSE(v.is_discarded()) << text;
        ASSERT_TRUE(v.is_object()) << text;
        EXPECT_TRUE(v["city"].is_string() && v["city"].get<std::string>().size() <= 6 * 4) << text;
        EXPECT_TRUE(v["unit"] == "celsius" || v["unit"] == "fahrenheit") << text;
        if (v.contains("days")) {
            EXPECT_TRUE(v["days"].is_array() && v["days"].size() <= 3) << text;
        }
        EXPECT_LE(v.size(), 3u) << text;
    }
}

INSTANTIATE_TEST_SUITE_P(TokenizerKinds, GrammarSampling, ::testing::Values("tiny-llama", "tiny-qwen2", "tiny-llama3"));

TEST(GrammarSampling, WithoutTruncationTheMaskedDistributionIsExact) {
    // Vocabulary: "a", "b", "c", EOS; grammar allows "a" or "b" then ends.
    auto table = std::make_shared<TokenTable>(std::vector<std::string>{"a", "b", "c", ""},
                                              std::vector<uint8_t>{0, 0, 0, 1});
    SamplerParams p;
    p.temperature = 1.0f;
    p.top_k = 0;
    p.top_p = 1.0f;
    p.min_p = 0.0f;
    p.grammar = Grammar::parse("root ::= \"a\" | \"b\"");
    p.grammar_tokens = table;
    const float logits[4] = {0.0f, std::log(3.0f), 5.0f, 6.0f};  // c and EOS dominate but are masked
    int counts[4] = {0, 0, 0, 0};
    const int n = 20000;
    for (int i = 0; i < n; ++i) {
        p.seed = uint64_t(i);
        Sampler s(p, 4);
        counts[s.sample(logits)]++;
    }
    EXPECT_EQ(counts[2] + counts[3], 0);
    // p(a) = 1/4, p(b) = 3/4 after renormalisation; 5 sigma of a binomial with n = 20000.
    EXPECT_NEAR(counts[0] / double(n), 0.25, 5 * std::sqrt(0.25 * 0.75 / n));
}

}  // namespace
}  // namespace duet::model
