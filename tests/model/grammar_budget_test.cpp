// The closing reserve in the sampler: a forced tool call sampled from adversarial logits (a
// "model" that never wants to close a string, an object or the call) under max_tokens always
// ends in a call that parses and validates whenever max_tokens holds the shortest completion
// (the grammar's min_bytes_to_end() + 1 for end-of-generation), for the SPM and both byte-level
// BPE synthetic vocabularies; without the reserve the same run is cut mid-string.
#include <gtest/gtest.h>

#include <random>

#include "model/arch_presets.h"
#include "model/chat_tools.h"
#include "model/grammar/json_schema.h"
#include "model/grammar/matcher.h"
#include "model/sampler.h"
#include "model/synthetic_vocab.h"
#include "model/tokenizer/tokenizer.h"

namespace duet::model {
namespace {

using grammar::Grammar;
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

const char* kParams = R"({"type":"object","properties":{
  "city":{"type":"string","minLength":2},
  "when":{"type":"string","format":"date"},
  "days":{"type":"integer","minimum":1,"maximum":14},
  "tags":{"type":"array","items":{"type":"string"},"minItems":1}},
  "required":["city","when","days","tags"],"additionalProperties":false})";

struct Sampled {
    std::string text;
    bool ended = false;  // by end-of-generation
};

// Samples up to max_tokens tokens from logits that push away from every closing character.
Sampled sample(const Tokenizer& tok, SamplerParams p, int64_t max_tokens, std::mt19937_64& g) {
    Sampler s(p, tok.n_vocab());
    std::normal_distribution<float> d(0, 2);
    std::vector<float> logits(size_t(tok.n_vocab()));
    Sampled r;
    for (int64_t i = 0; i < max_tokens; ++i) {
        for (int32_t t = 0; t < int32_t(logits.size()); ++t) {
            const std::string piece = p.grammar_tokens->bytes(t);
            const bool closes = piece.find_first_of("\"}]") != std::string::npos || tok.is_eog(t);
            logits[size_t(t)] = d(g) + (closes ? -30.0f : 0.0f);
        }
        const int32_t t = s.sample(logits.data());
        s.accept(t);
        if (tok.is_eog(t)) {
            r.ended = true;
            break;
        }
        r.text += p.grammar_tokens->bytes(t);
    }
    return r;
}

class ToolCallBudget : public ::testing::TestWithParam<const char*> {};

TEST_P(ToolCallBudget, ForcedToolCallsAlwaysCloseWithinMaxTokens) {
    const auto tok = synthetic_tokenizer(GetParam());
    ToolFunction fn;
    fn.name = "get_weather";
    fn.parameters = nlohmann::ordered_json::parse(kParams);
    SamplerParams p;
    p.temperature = 1.0f;
    p.top_k = 0, p.top_p = 1.0f, p.min_p = 0.0f;
    p.grammar = Grammar::parse(tool_call_grammar(ChatTemplate::CHATML, {fn}), "tools");
    p.grammar_tokens = TokenTable::from_tokenizer(*tok);
    const int64_t need = int64_t(grammar::Matcher(p.grammar, p.grammar_tokens).min_bytes_to_end()) + 1;
    std::mt19937_64 g(9);
    for (int run = 0; run < 12; ++run) {
        const int64_t max_tokens = need + std::vector<int64_t>{0, 1, 3, 10, 40, 120}[size_t(run % 6)];
        p.seed = uint64_t(run);
        p.max_tokens = max_tokens;
        const Sampled r = sample(*tok, p, max_tokens, g);
        EXPECT_TRUE(r.ended) << "max_tokens " << max_tokens << ": " << r.text;
        const auto parsed = parse_tool_calls(ChatTemplate::CHATML, r.text);
        ASSERT_TRUE(parsed && parsed->calls.size() == 1) << "max_tokens " << max_tokens << ": " << r.text;
        const auto args = nlohmann::json::parse(parsed->calls[0].arguments, nullptr, false);
        ASSERT_TRUE(args.is_object()) << r.text;
        EXPECT_TRUE(args["city"].is_string() && args["city"].get<std::string>().size() >= 2) << r.text;
        EXPECT_TRUE(args["when"].is_string() && args["when"].get<std::string>().size() == 10) << r.text;
        EXPECT_TRUE(args["days"].is_number_integer() && args["days"] >= 1 && args["days"] <= 14) << r.text;
        EXPECT_TRUE(args["tags"].is_array() && !args["tags"].empty()) << r.text;
        EXPECT_EQ(args.size(), 4u) << r.text;
    }
    // The same adversarial run without the reserve never closes its first string.
    p.max_tokens = 0;
    const Sampled open = sample(*tok, p, need + 40, g);
    EXPECT_FALSE(open.ended) << open.text;
    EXPECT_FALSE(parse_tool_calls(ChatTemplate::CHATML, open.text).has_value()) << open.text;
}

TEST_P(ToolCallBudget, TheGuaranteesConditionHolds) {
    // the reserve is counted in bytes: a count of tokens because every byte is a token
    EXPECT_TRUE(TokenTable::from_tokenizer(*synthetic_tokenizer(GetParam()))->has_every_byte());
}

// A vocabulary without a token for some byte: the byte reserve no longer bounds the tokens, and
// the grammar may allow a text that no token continues. Here "}" is no token, so after the
// closing quote nothing can follow: the reserve (2 bytes) said the text could close, the sampler
// ends the generation there with end-of-generation, and the matcher says the text is not
// complete, which is what a caller must report (finish_reason "length"), never the text as valid.
TEST(ToolCallBudget, WithoutATokenPerByteADeadEndIsReportedIncomplete) {
    const std::vector<std::string> pieces = {"{\"", "a", "b", "\"", "\":", " ", ""};
    auto table = std::make_shared<TokenTable>(pieces, std::vector<uint8_t>{0, 0, 0, 0, 0, 0, 1});
    EXPECT_FALSE(table->has_every_byte());
    SamplerParams p;
    p.temperature = 0.0f;  // greedy: always "a" while it is allowed
    p.grammar = Grammar::parse(R"(root ::= "{\"" [ab]* "\"}")", "g");
    p.grammar_tokens = table;
    p.max_tokens = 6;
    Sampler s(p, table->n_vocab());
    EXPECT_EQ(s.matcher()->min_bytes_to_end(), 4u);  // {"" then } in bytes: fits 6 tokens
    const std::vector<float> logits = {0, 5, 1, 0, 0, 0, 0};
    std::string text;
    int32_t t = -1;
    for (int i = 0; i < 6; ++i) {
        t = s.sample(logits.data());
        s.accept(t);
        if (table->is_eog(t)) break;
        text += table->bytes(t);
    }
    EXPECT_EQ(text, "{\"aa\"");  // the reserve closed the string in time; "}" has no token
    EXPECT_TRUE(table->is_eog(t));
    EXPECT_FALSE(s.matcher()->can_end());  // ended, but incomplete: not a valid text
}

INSTANTIATE_TEST_SUITE_P(TokenizerKinds, ToolCallBudget, ::testing::Values("tiny-llama", "tiny-qwen2", "tiny-llama3"));

}  // namespace
}  // namespace duet::model
