// bench_grammar_mask: cost of one full grammar mask (Matcher::allowed_tokens) and of the
// sampler's fast path (one token check) per vocabulary, at two grammar positions of a JSON
// schema: inside a string (nearly every token allowed: the worst case for the trie walk) and
// between properties (few allowed). "First" is a fresh matcher (every transition computed
// from the pushdown stacks, no cached mask); the others repeat the mask in the same state, as
// the sampler does inside a long string (served by the matcher's mask cache). Compare with a
// decode step of the same model (bench_engine; docs/performance.md): the mask must stay a
// small fraction of it. Synthetic vocabularies of the
// arch presets: tiny-llama (SPM, 512), llama2-7b (SPM, 32000), llama3-8b (BPE, 128256).
// Second argument: the string property's schema, 0 = {"type":"string"}, 1 = the same with
// "maxLength": 65535 (a counted repetition: the matcher keeps the count in its stacks and
// relaxes it in the cached state, so the two should cost the same but for accept_token).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cctype>
#include <map>

#include "model/arch_presets.h"
#include "model/grammar/json_schema.h"
#include "model/grammar/matcher.h"
#include "model/synthetic_vocab.h"
#include "model/tokenizer/tokenizer.h"

using namespace duet::model;

namespace {

const char* kArch[] = {"tiny-llama", "llama2-7b", "llama3-8b"};

std::shared_ptr<const grammar::TokenTable> table_for(int i) {
    static std::map<int, std::shared_ptr<const grammar::TokenTable>> cache;
    auto& t = cache[i];
    if (t) return t;
    const SyntheticVocab sv = build_synthetic_vocab(arch_preset(kArch[i]));
    Vocab v;
    v.kind = sv.model == "llama" ? TokenizerKind::SPM : TokenizerKind::BPE;
    v.tokens = sv.tokens;
    v.scores = sv.scores;
    for (int32_t ty : sv.token_types) v.types.push_back(TokenType(ty));
    v.merges = sv.merges;
    v.pre = sv.pre;
    v.bos_id = sv.bos_id;
    v.eos_id = sv.eos_id;
    v.eot_id = sv.eot_id.value_or(-1);
    v.add_space_prefix = v.kind == TokenizerKind::SPM;
    t = grammar::TokenTable::from_tokenizer(*Tokenizer::from_vocab(v));
    return t;
}

grammar::Matcher matcher_at(const benchmark::State& st, const char* prefix) {
    static const std::shared_ptr<const grammar::Grammar> g[] = {
        grammar::Grammar::parse(grammar::json_schema_to_grammar(nlohmann::ordered_json::parse(
            R"({"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"}},"required":["name","age"]})"))),
        grammar::Grammar::parse(grammar::json_schema_to_grammar(nlohmann::ordered_json::parse(
            R"({"type":"object","properties":{"name":{"type":"string","maxLength":65535},"age":{"type":"integer"}},)"
            R"("required":["name","age"]})")))};
    grammar::Matcher m(g[st.range(1)], table_for(int(st.range(0))));
    if (!m.accept_bytes(prefix)) throw std::runtime_error("bench prefix rejected");
    return m;
}

void BM_MaskInString(benchmark::State& st) {
    auto m = matcher_at(st, "{\"name\": \"ab");
    std::vector<uint8_t> allowed;
    int64_t n = 0;
    for (auto _ : st) benchmark::DoNotOptimize(n = m.allowed_tokens(allowed));
    st.SetLabel(std::string(kArch[st.range(0)]) + ", vocab " + std::to_string(allowed.size()) + ", allowed " +
                std::to_string(n));
}

// The first mask of a fresh matcher: every transition the walk needs is computed from the
// stacks then (the cost the sampler pays once per new grammar state; later masks reuse it).
void BM_MaskInStringFirst(benchmark::State& st) {
    std::vector<uint8_t> allowed;
    int64_t n = 0;
    for (auto _ : st) {
        st.PauseTiming();
        auto m = matcher_at(st, "{\"name\": \"ab");
        st.ResumeTiming();
        benchmark::DoNotOptimize(n = m.allowed_tokens(allowed));
    }
    st.SetLabel(std::string(kArch[st.range(0)]) + ", vocab " + std::to_string(allowed.size()) + ", allowed " +
                std::to_string(n));
}

void BM_MaskBetweenProperties(benchmark::State& st) {
    auto m = matcher_at(st, "{\"name\": \"ab\"");
    std::vector<uint8_t> allowed;
    int64_t n = 0;
    for (auto _ : st) benchmark::DoNotOptimize(n = m.allowed_tokens(allowed));
    st.SetLabel(std::string(kArch[st.range(0)]) + ", vocab " + std::to_string(allowed.size()) + ", allowed " +
                std::to_string(n));
}

void BM_FastPathTokenCheck(benchmark::State& st) {
    auto m = matcher_at(st, "{\"name\": \"ab");
    const auto& t = m.tokens();
    int32_t id = 0;
    for (auto _ : st) {
        benchmark::DoNotOptimize(m.token_allowed(id));
        id = (id + 7919) % int32_t(t.n_vocab());
    }
    st.SetLabel(kArch[st.range(0)]);
}

// The closing reserve's per-token check (sampler fast path with max_tokens): the state after
// the drawn token and its min_bytes_to_end(), instead of token_allowed() alone.
void BM_ReserveCheck(benchmark::State& st) {
    auto m = matcher_at(st, "{\"name\": \"ab");
    const auto& t = m.tokens();
    int32_t id = 0;
    for (auto _ : st) {
        benchmark::DoNotOptimize(m.min_bytes_after(id));
        id = (id + 7919) % int32_t(t.n_vocab());
    }
    st.SetLabel(kArch[st.range(0)]);
}

// The budgeted mask (allowed_tokens_within), taken only in the last tokens of the budget when
// the first draw would leave too little room: an uncached trie walk with one compare per node.
void BM_MaskWithinBudget(benchmark::State& st) {
    auto m = matcher_at(st, "{\"name\": \"ab");
    std::vector<uint8_t> allowed;
    int64_t n = 0;
    for (auto _ : st) benchmark::DoNotOptimize(n = m.allowed_tokens_within(allowed, 12));
    st.SetLabel(std::string(kArch[st.range(0)]) + ", allowed " + std::to_string(n));
}

// Accepting a plain-word token inside the string (the sampler's step after each draw): with a
// counted string this also steps the exact stacks (a fresh matcher when the string is full).
void BM_AcceptTokenInString(benchmark::State& st) {
    auto m = matcher_at(st, "{\"name\": \"ab");
    const auto& t = m.tokens();
    int32_t id = 0;
    while (id < t.n_vocab() && (t.bytes(id).size() < 3 || !std::all_of(t.bytes(id).begin(), t.bytes(id).end(), ::isalpha)))
        ++id;
    for (auto _ : st)
        if (!m.accept_token(id)) {
            st.PauseTiming();
            m = matcher_at(st, "{\"name\": \"ab");
            st.ResumeTiming();
        }
    st.SetLabel(std::string(kArch[st.range(0)]) + ", token '" + t.bytes(id) + "'");
}

}  // namespace

#define DUET_GRAMMAR_BENCH(name, unit) BENCHMARK(name)->ArgsProduct({{0, 1, 2}, {0, 1}})->Unit(benchmark::unit)
DUET_GRAMMAR_BENCH(BM_MaskInString, kMicrosecond);
DUET_GRAMMAR_BENCH(BM_MaskInStringFirst, kMicrosecond);
DUET_GRAMMAR_BENCH(BM_MaskBetweenProperties, kMicrosecond);
DUET_GRAMMAR_BENCH(BM_FastPathTokenCheck, kNanosecond);
DUET_GRAMMAR_BENCH(BM_ReserveCheck, kNanosecond);
DUET_GRAMMAR_BENCH(BM_MaskWithinBudget, kMicrosecond);
DUET_GRAMMAR_BENCH(BM_AcceptTokenInString, kNanosecond);
BENCHMARK_MAIN();
