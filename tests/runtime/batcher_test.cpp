// The continuous batcher and the prefix cache on a generated model, without HTTP.
#include "runtime/batcher.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "model/grammar/grammar.h"
#include "model/grammar/token_table.h"
#include "runtime/model.h"
#include "runtime/prefix_cache.h"
#include "test_models.h"

namespace duet::runtime {
namespace {

struct Collected {
    explicit Collected(size_t n) : results(n), texts(n) {}  // one slot per request
    std::mutex mu;
    std::condition_variable cv;
    std::vector<GenResult> results;
    std::vector<std::string> texts;
};

GenRequest greedy_request(const Model& m, const std::string& prompt, int64_t max_tokens, Collected& c, size_t slot) {
    GenRequest r;
    r.prompt = m.tokenizer().encode(prompt, true, false);
    r.sampling.temperature = 0;
    r.max_tokens = max_tokens;
    r.ignore_eos = true;  // exactly max_tokens, so the KV demand is known
    r.on_text = [&c, slot](const std::string& t) {
        std::lock_guard<std::mutex> lock(c.mu);
        c.texts[slot] += t;
    };
    r.on_done = [&c, slot](const GenResult& res) {
        std::lock_guard<std::mutex> lock(c.mu);
        c.results[slot] = res;
        c.cv.notify_all();
    };
    return r;
}

// The generated tiny-llama (test_models.h), or null when it cannot be made, and engine options of
// one thread and n_ctx positions: what every test here starts from.
std::shared_ptr<const Model> tiny_llama() {
    const std::string path = test::generated_model("tiny-llama");
    return path.empty() ? nullptr : Model::load(path);
}
EngineOptions one_thread(int64_t n_ctx) {
    EngineOptions eo;
    eo.n_threads = 1;
    eo.n_ctx = n_ctx;
    return eo;
}

TEST(Batcher, PoolRunningDryPreemptsAndRecomputesWithoutChangingTokens) {
    auto model = tiny_llama();
    ASSERT_TRUE(model);
    EngineOptions eo = one_thread(256);
    // Alone: the reference tokens.
    Collected alone(1);
    {
        Batcher b(model, eo, {});
        ASSERT_EQ(b.submit(greedy_request(*model, "Once upon a time", 60, alone, 0)), SubmitStatus::ACCEPTED);
        b.wait_idle();
    }
    ASSERT_EQ(alone.results[0].completion_tokens, 60);
    // Six blocks of 16 positions for eight requests of ~65 positions each: at most one fits whole.
    eo.kv_blocks = 6;
    BatcherOptions bo;
    bo.n_parallel = 8;
    bo.prefix_cache = false;
    Collected c(8);
    Batcher b(model, eo, bo);
    for (size_t i = 0; i < 8; ++i)
        ASSERT_EQ(b.submit(greedy_request(*model, "Once upon a time", 60, c, i)), SubmitStatus::ACCEPTED);
    b.wait_idle();
    EXPECT_GE(b.stats().preemptions, 1u);
    for (size_t i = 0; i < 8; ++i) {
        EXPECT_EQ(c.results[i].finish_reason, "length") << i;
        EXPECT_EQ(c.results[i].tokens, alone.results[0].tokens) << i;
        EXPECT_EQ(c.texts[i], alone.texts[0]) << i;
    }
    EXPECT_EQ(b.stats().kv_blocks_used, 0);
}

TEST(Batcher, RefusesWhatCanNeverFitAndReusesPrefixes) {
    auto model = tiny_llama();
    ASSERT_TRUE(model);
    EngineOptions eo = one_thread(128);
    eo.kv_blocks = 4;
    BatcherOptions bo;
    bo.max_queue = 2;
    Batcher b(model, eo, bo);
    GenRequest too_long;
    too_long.prompt.assign(200, 5);
    EXPECT_EQ(b.submit(std::move(too_long)), SubmitStatus::PROMPT_TOO_LONG);
    GenRequest too_big;
    too_big.prompt.assign(100, 5);  // fits the context, not the 4-block pool
    EXPECT_EQ(b.submit(std::move(too_big)), SubmitStatus::KV_TOO_SMALL);

    Collected c(2);
    const std::string prompt = "Once upon a time there was a little dog who liked to run in the park every day";
    ASSERT_EQ(b.submit(greedy_request(*model, prompt, 4, c, 0)), SubmitStatus::ACCEPTED);
    b.wait_idle();
    ASSERT_EQ(b.submit(greedy_request(*model, prompt, 4, c, 1)), SubmitStatus::ACCEPTED);
    b.wait_idle();
    const int64_t n_prompt = c.results[1].prompt_tokens;
    EXPECT_EQ(c.results[1].cached_tokens, (n_prompt - 1) / 16 * 16);  // every whole block but the last token's
    EXPECT_GT(c.results[1].cached_tokens, 0);
    EXPECT_EQ(c.results[1].tokens, c.results[0].tokens);  // shared KV gives the same continuation
    EXPECT_GT(b.stats().prefix_hit_tokens, 0u);
}

// n > 1 (submit_group): choices 2..n fork the first one's prompt blocks. Greedy, each choice
// must equal a lone request; the pool must be exactly empty afterwards (no leaked refcounts);
// a group larger than the batch is refused.
TEST(Batcher, GroupForksThePromptBlocksAndMatchesLoneRequests) {
    auto model = tiny_llama();
    ASSERT_TRUE(model);
    EngineOptions eo = one_thread(128);
    const std::string prompt = "Once upon a time there was a little dog";  // not a whole number of blocks
    Collected alone(1);
    {
        Batcher b(model, eo, {});
        ASSERT_EQ(b.submit(greedy_request(*model, prompt, 12, alone, 0)), SubmitStatus::ACCEPTED);
        b.wait_idle();
    }
    BatcherOptions bo;
    bo.n_parallel = 3;
    bo.prefix_cache = false;
    Batcher b(model, eo, bo);
    Collected c(3);
    std::vector<GenRequest> group;
    for (size_t i = 0; i < 3; ++i) group.push_back(greedy_request(*model, prompt, 12, c, i));
    ASSERT_EQ(b.submit_group(std::move(group)), SubmitStatus::ACCEPTED);
    b.wait_idle();
    const int64_t n_prompt = alone.results[0].prompt_tokens;
    for (size_t i = 0; i < 3; ++i) {
        EXPECT_EQ(c.results[i].tokens, alone.results[0].tokens) << i;
        EXPECT_EQ(c.texts[i], alone.texts[0]) << i;
        EXPECT_EQ(c.results[i].forked_tokens, i == 0 ? 0 : n_prompt) << i;
    }
    EXPECT_EQ(b.stats().kv_blocks_used, 0);
    std::vector<GenRequest> big;
    for (size_t i = 0; i < 4; ++i) big.push_back(greedy_request(*model, prompt, 1, c, 0));
    EXPECT_EQ(b.submit_group(std::move(big)), SubmitStatus::GROUP_TOO_LARGE);
}

// The warm-up forwards run on the thread that later steps the batch (the kernels' per-thread
// scratch is then ready for the first request), and the constructor returns only after them.
TEST(Batcher, WarmupForwardsRunOnTheEngineThreadBeforeTheConstructorReturns) {
    auto model = tiny_llama();
    ASSERT_TRUE(model);
    std::mutex mu;
    std::vector<std::thread::id> threads;
    EngineOptions eo = one_thread(64);
    eo.on_forward = [&](const ForwardTime&) {
        std::lock_guard<std::mutex> lock(mu);
        threads.push_back(std::this_thread::get_id());
    };
    BatcherOptions bo;
    bo.n_parallel = 2;
    bo.warmup_rounds = 1;
    Batcher b(model, eo, bo);
    {
        std::lock_guard<std::mutex> lock(mu);
        ASSERT_EQ(threads.size(), 2u);  // a prefill and a decode, done before the constructor returned
        EXPECT_NE(threads[0], std::this_thread::get_id());
    }
    Collected c(1);
    ASSERT_EQ(b.submit(greedy_request(*model, "Hello", 2, c, 0)), SubmitStatus::ACCEPTED);
    b.wait_idle();
    std::lock_guard<std::mutex> lock(mu);
    ASSERT_GT(threads.size(), 2u);
    for (const std::thread::id& t : threads) EXPECT_EQ(t, threads[0]);
    EXPECT_EQ(b.stats().kv_blocks_used, b.stats().kv_blocks_total - b.stats().kv_blocks_free);
}

// The warm-up sizes the engine's activation scratch for a whole step (the prompt token budget),
// not just its 16-token dummy prefill: a burst's first big step would otherwise allocate and
// zero it (8.5 ms at 152 tokens of a 4-layer bench-1b) while its requests wait.
TEST(Batcher, WarmupSizesTheScratchForAWholeStep) {
    auto model = tiny_llama();
    ASSERT_TRUE(model);
    auto scratch = [&](int64_t budget, int64_t rounds) {
        BatcherOptions bo;
        bo.n_parallel = 2;
        bo.step_token_budget = budget;
        bo.warmup_rounds = rounds;
        Batcher b(model, one_thread(128), bo);
        return b.stats().scratch_bytes;
    };
    const uint64_t s32 = scratch(32, 1), s96 = scratch(96, 1);
    ASSERT_GT(s32, 0u);
    EXPECT_EQ(s96, 3 * s32);
    EXPECT_EQ(scratch(96, 0), 0u);  // no warm-up: nothing allocated before the first request
}

// Two requests 300 ms apart on an idle engine: with no admission window the first runs alone (its
// one-token request is done in one forward) and the second in a forward of its own; with a window
// longer than the gap both start in the same, single forward, which begins as soon as --parallel
// (2) requests wait, not when the window ends.
int forwards_for_two_requests(int64_t admit_window_us, double& first_queue_ms) {
    auto model = tiny_llama();
    std::atomic<int> forwards{0};
    EngineOptions eo = one_thread(64);
    eo.on_forward = [&](const ForwardTime&) { forwards.fetch_add(1); };
    BatcherOptions bo;
    bo.n_parallel = 2;
    bo.admit_window_us = admit_window_us;
    Collected c(2);
    Batcher b(model, eo, bo);
    EXPECT_EQ(b.submit(greedy_request(*model, "Hello", 1, c, 0)), SubmitStatus::ACCEPTED);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    EXPECT_EQ(b.submit(greedy_request(*model, "Once upon", 1, c, 1)), SubmitStatus::ACCEPTED);
    b.wait_idle();
    std::lock_guard<std::mutex> lock(c.mu);
    EXPECT_EQ(c.results[0].completion_tokens, 1);
    EXPECT_EQ(c.results[1].completion_tokens, 1);
    first_queue_ms = c.results[0].queue_ms;
    return forwards.load();
}

// Prefix reuse from running requests (BatcherOptions::prefix_cache): a queued prompt that starts
// with >= 4 tokens a running request holds shares its KV to the token — here fewer than a block,
// so the partial block is copied on the first write — and continues exactly as alone.
int64_t common_prefix_tokens(const Model& m, const std::string& a, const std::string& b) {
    const auto ta = m.tokenizer().encode(a, true, false), tb = m.tokenizer().encode(b, true, false);
    int64_t n = 0;
    while (n < int64_t(std::min(ta.size(), tb.size())) && ta[size_t(n)] == tb[size_t(n)]) ++n;
    return std::min<int64_t>(n, int64_t(tb.size()) - 1);
}

std::vector<int32_t> alone_tokens(const std::shared_ptr<const Model>& model, const std::string& prompt, int64_t n) {
    Collected c(1);
    BatcherOptions bo;
    bo.prefix_cache = false;
    Batcher b(model, one_thread(128), bo);
    EXPECT_EQ(b.submit(greedy_request(*model, prompt, n, c, 0)), SubmitStatus::ACCEPTED);
    b.wait_idle();
    return c.results[0].tokens;
}

const char* const kLeader = "Once upon a time, client 1 asked";
const char* const kFollower = "Once upon a time, client 2 asked";

TEST(Batcher, QueuedPromptSharesARunningRequestsPrefix) {
    auto model = tiny_llama();
    ASSERT_TRUE(model);
    const int64_t shared = common_prefix_tokens(*model, kLeader, kFollower);
    ASSERT_GE(shared, 4);
    ASSERT_LT(shared, 16);  // inside the first block: the copy-on-write path
    for (bool reuse : {true, false}) {
        BatcherOptions bo;
        bo.n_parallel = 2;
        bo.prefix_cache = reuse;
        Collected c(2);
        Batcher b(model, one_thread(128), bo);
        std::atomic<int> leader_tokens{0};
        std::atomic<bool> follower_in{false};
        GenRequest lead = greedy_request(*model, kLeader, 40, c, 0);
        // The leader holds its second token until the follower is queued, so the follower always
        // meets a running leader (callbacks run outside the batcher's lock).
        lead.on_token = [&](int32_t, const float*) {
            if (++leader_tokens == 2)
                while (!follower_in.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        };
        ASSERT_EQ(b.submit(std::move(lead)), SubmitStatus::ACCEPTED);
        while (leader_tokens.load() < 2) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        const SubmitStatus follower = b.submit(greedy_request(*model, kFollower, 12, c, 1));
        follower_in = true;
        ASSERT_EQ(follower, SubmitStatus::ACCEPTED);
        b.wait_idle();
        EXPECT_EQ(c.results[1].cached_tokens, reuse ? shared : 0);
        EXPECT_EQ(c.results[1].tokens, alone_tokens(model, kFollower, 12));
        EXPECT_EQ(c.results[0].tokens, alone_tokens(model, kLeader, 40));  // the leader's block was copied, not changed
    }
}

// Both queued at once (the admission window holds the burst): the second waits one step for the
// first's prompt instead of computing the shared tokens beside it.
TEST(Batcher, BurstWaitsForTheFirstPromptsPrefix) {
    auto model = tiny_llama();
    ASSERT_TRUE(model);
    BatcherOptions bo;
    bo.n_parallel = 2;
    bo.admit_window_us = int64_t(60) * 1000000;  // until both wait
    Collected c(2);
    Batcher b(model, one_thread(128), bo);
    ASSERT_EQ(b.submit(greedy_request(*model, kLeader, 6, c, 0)), SubmitStatus::ACCEPTED);
    ASSERT_EQ(b.submit(greedy_request(*model, kFollower, 6, c, 1)), SubmitStatus::ACCEPTED);
    b.wait_idle();
    EXPECT_EQ(c.results[1].cached_tokens, common_prefix_tokens(*model, kLeader, kFollower));
    EXPECT_EQ(c.results[0].cached_tokens, 0);
    EXPECT_EQ(c.results[1].tokens, alone_tokens(model, kFollower, 6));
}

TEST(Batcher, AdmissionWindowStartsABurstInOneStep) {
    ASSERT_TRUE(tiny_llama());
    double queue_ms = 0;
    EXPECT_EQ(forwards_for_two_requests(0, queue_ms), 2);
    EXPECT_LT(queue_ms, 300.0);  // admitted before the second request came
    EXPECT_EQ(forwards_for_two_requests(int64_t(60) * 1000000, queue_ms), 1);
    EXPECT_GE(queue_ms, 300.0);     // waited for the second request ...
    EXPECT_LT(queue_ms, 60000.0);   // ... not for the whole minute: two were waiting
}

TEST(Batcher, StopsDuringTheAdmissionWindow) {
    auto model = tiny_llama();
    ASSERT_TRUE(model);
    EngineOptions eo = one_thread(64);
    BatcherOptions bo;
    bo.n_parallel = 4;
    bo.admit_window_us = int64_t(600) * 1000000;  // ten minutes: the test would time out if stop waited it out
    Collected c(1);
    {
        Batcher b(model, eo, bo);
        ASSERT_EQ(b.submit(greedy_request(*model, "Hello", 1, c, 0)), SubmitStatus::ACCEPTED);
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }  // the destructor stops the engine thread inside its window
    std::lock_guard<std::mutex> lock(c.mu);
    EXPECT_FALSE(c.results[0].finish_reason.empty());  // the request was still answered (on_done ran)
}

// A request whose own sampling fails (here its grammar: after its first byte, 5000 alternatives
// are alive at once, more parses than the matcher keeps) failed the whole step, and with it
// every request in the batch. Now it fails alone, with the grammar's message; a group
// of such requests fails leader and forked follower alike; the requests beside them finish with
// the tokens they have alone, and no step counts as failed.
TEST(Batcher, ARequestWhoseSamplingFailsFailsAlone) {
    auto model = tiny_llama();
    ASSERT_TRUE(model);
    const std::string prompt = "Once upon a time";
    const std::vector<int32_t> alone = alone_tokens(model, prompt, 24);
    ASSERT_EQ(alone.size(), 24u);
    BatcherOptions bo;
    bo.n_parallel = 5;
    Collected c(5);
    Batcher b(model, one_thread(128), bo);
    const auto table = model::grammar::TokenTable::from_tokenizer(model->tokenizer());
    std::string text = "root ::= \"x\" v\nv ::= \"0\"";
    for (int i = 1; i < 5000; ++i) text += " | \"" + std::to_string(i) + "\"";
    const auto ambiguous = model::grammar::Grammar::parse(text, "g");
    auto constrained = [&](size_t slot) {
        GenRequest r = greedy_request(*model, prompt, 24, c, slot);
        r.sampling.grammar = ambiguous;
        r.sampling.grammar_tokens = table;
        r.sampling.max_tokens = 24;
        return r;
    };
    std::vector<GenRequest> group;
    group.push_back(constrained(2));
    group.push_back(constrained(3));
    ASSERT_EQ(b.submit(greedy_request(*model, prompt, 24, c, 0)), SubmitStatus::ACCEPTED);
    ASSERT_EQ(b.submit(constrained(1)), SubmitStatus::ACCEPTED);
    ASSERT_EQ(b.submit_group(std::move(group)), SubmitStatus::ACCEPTED);
    ASSERT_EQ(b.submit(greedy_request(*model, prompt, 24, c, 4)), SubmitStatus::ACCEPTED);
    b.wait_idle();
    for (size_t i : {size_t(1), size_t(2), size_t(3)}) {
        EXPECT_EQ(c.results[i].finish_reason, "error") << i;
        EXPECT_EQ(c.results[i].error.rfind("grammar: the text so far can be read in more than 4096 ways", 0), 0u)
            << i << ": " << c.results[i].error;
    }
    for (size_t i : {size_t(0), size_t(4)}) {
        EXPECT_EQ(c.results[i].finish_reason, "length") << i << ": " << c.results[i].error;
        EXPECT_EQ(c.results[i].tokens, alone) << i;
    }
    EXPECT_EQ(b.stats().step_failures, 0u);
    EXPECT_EQ(b.stats().completed, 5u);
    EXPECT_EQ(b.stats().kv_blocks_used - b.stats().prefix_cached_blocks, 0);  // only the prefix cache holds blocks
}

}  // namespace
}  // namespace duet::runtime
