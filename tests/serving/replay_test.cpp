// One scheduler, two executors: requests submitted to the real batcher (a generated tiny-llama
// on the host CPU) are recorded with the rounds that first saw them and the rounds' times; the
// same arrivals replayed through the simulator executor with those step times must give the
// same step compositions (admissions, preemptions, prompt chunks, decode tokens) in the same order.
#include <gtest/gtest.h>

#include <memory>
#include <mutex>
#include <random>
#include <thread>

#include "runtime/batcher.h"
#include "runtime/model.h"
#include "sched/block_pool.h"
#include "serving/serving_run.h"
#include "test_models.h"

namespace duet::serving {
namespace {

struct Recorded {
    std::vector<int64_t> arrived;
    std::vector<sched::Admission> admitted;
    std::vector<sched::SeqId> preempted, ended;
    std::vector<sched::Chunk> chunks;
};

Recorded recorded(const std::vector<int64_t>& arrived, const sched::Step& s) {
    return {arrived, s.admitted, s.preempted, s.ended, s.chunks};
}

void expect_same(const std::vector<Recorded>& real, const std::vector<Recorded>& sim) {
    ASSERT_EQ(real.size(), sim.size());
    for (size_t k = 0; k < real.size(); ++k) {
        EXPECT_EQ(real[k].arrived, sim[k].arrived) << "step " << k;
        ASSERT_EQ(real[k].admitted.size(), sim[k].admitted.size()) << "step " << k;
        for (size_t i = 0; i < real[k].admitted.size(); ++i) {
            EXPECT_EQ(real[k].admitted[i].id, sim[k].admitted[i].id) << "step " << k;
            EXPECT_EQ(real[k].admitted[i].first, sim[k].admitted[i].first) << "step " << k;
            EXPECT_EQ(real[k].admitted[i].cached_tokens, sim[k].admitted[i].cached_tokens) << "step " << k;
        }
        EXPECT_EQ(real[k].preempted, sim[k].preempted) << "step " << k;
        EXPECT_EQ(real[k].ended, sim[k].ended) << "step " << k;
        EXPECT_EQ(real[k].chunks, sim[k].chunks) << "step " << k;
    }
}

struct ReplayStats {
    uint64_t preemptions = 0, prefix_hit_tokens = 0;
    int64_t sim_cached_tokens = 0;
};

// Submits bursts of random requests to a real batcher (kv_blocks blocks of 16 tokens; with
// `system` > 0 every other request starts with the same `system` tokens), then replays the
// recorded arrivals and step times through the simulator executor and compares every step.
ReplayStats replay(int64_t kv_blocks, int64_t system) {
    ReplayStats st;
    const std::string path = test::generated_model("tiny-llama");
    EXPECT_FALSE(path.empty());
    if (path.empty()) return st;
    const auto model = runtime::Model::load(path);
    runtime::EngineOptions eo;
    eo.n_threads = 1;
    eo.n_ctx = 256;
    eo.kv_blocks = kv_blocks;
    runtime::BatcherOptions bo;
    bo.n_parallel = 4;
    bo.step_token_budget = 24;  // prompts arrive in chunks beside decode tokens

    std::mutex mu;
    std::vector<runtime::StepRecord> rounds;
    bo.on_step = [&](const runtime::StepRecord& r) {
        std::lock_guard<std::mutex> lock(mu);
        rounds.push_back(r);
    };
    // The arrival sequence: bursts and pauses, random prompts (token ids) and output lengths.
    std::mt19937 rng(5);
    const int32_t n_vocab = int32_t(model->hparams().n_vocab);
    std::vector<int32_t> system_prompt;
    for (int64_t t = 0; t < system; ++t) system_prompt.push_back(std::uniform_int_distribution<int32_t>(3, n_vocab - 1)(rng));
    std::vector<ServingRequest> reqs;
    {
        runtime::Batcher b(model, eo, bo);
        const int burst[] = {5, 1, 2, 4, 1, 3};
        for (int g = 0; g < 6; ++g) {
            for (int i = 0; i < burst[g]; ++i) {
                runtime::GenRequest r;
                if (reqs.size() % 2 == 0) r.prompt = system_prompt;
                const int64_t n_own = std::uniform_int_distribution<int64_t>(g == 0 ? 40 : 5, 80)(rng);
                for (int64_t t = 0; t < n_own; ++t)
                    r.prompt.push_back(std::uniform_int_distribution<int32_t>(3, n_vocab - 1)(rng));
                r.sampling.temperature = 0;
                r.max_tokens = std::uniform_int_distribution<int64_t>(g == 0 ? 30 : 1, 60)(rng);
                r.ignore_eos = true;
                reqs.push_back({0, int64_t(r.prompt.size()), r.max_tokens,
                                std::make_shared<const std::vector<int32_t>>(r.prompt)});
                EXPECT_EQ(b.submit(std::move(r)), runtime::SubmitStatus::ACCEPTED);
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(g % 2 ? 2 : 15));
        }
        b.wait_idle();
        st.preemptions = b.stats().preemptions;
        st.prefix_hit_tokens = b.stats().prefix_hit_tokens;
        EXPECT_EQ(b.stats().completed, reqs.size());
    }
    // Arrival of each request = the time of the round that first saw it; step k lasts until
    // round k + 1 began.
    EXPECT_FALSE(rounds.empty());
    if (rounds.empty()) return st;
    const int64_t t0 = rounds[0].t_ns;
    std::vector<Recorded> real;
    for (const runtime::StepRecord& r : rounds) {
        for (sched::SeqId id : r.arrived) reqs[size_t(id)].arrival_ns = r.t_ns - t0;
        std::vector<int64_t> arrived(r.arrived.begin(), r.arrived.end());
        real.push_back(recorded(arrived, r.step));
    }
    auto timer = [&](const sched::Step&, int64_t k) {
        return size_t(k) + 1 < rounds.size() ? rounds[size_t(k) + 1].t_ns - rounds[size_t(k)].t_ns : int64_t(1000);
    };
    sched::SchedulerOptions so;
    so.n_parallel = bo.n_parallel;
    so.step_token_budget = bo.step_token_budget;
    so.n_ctx = eo.n_ctx;
    std::vector<Recorded> sim;
    sched::BlockPool pool(eo.kv_blocks, 16);
    pool.set_tokens([&](sched::SeqId id) { return std::span<const int32_t>(*reqs[size_t(id)].tokens); });
    const ServingResult res =
        run_serving(reqs, so, pool, timer,
                    [&](int64_t, const std::vector<int64_t>& arrived, const sched::Step& s, const sched::Scheduler&,
                        const sched::KvPool&) { sim.push_back(recorded(arrived, s)); });
    expect_same(real, sim);
    EXPECT_EQ(res.steps, int64_t(rounds.size()));
    for (const RequestOutcome& o : res.requests) {
        EXPECT_EQ(o.generated, o.output_tokens);
        st.sim_cached_tokens += o.cached_tokens;
    }
    return st;
}

// A pool small enough that decoding runs it dry: recompute preemptions in both executors.
TEST(Replay, TheRealBatcherAndTheSimulatorMakeTheSameStepsThroughPreemptions) {
    const ReplayStats st = replay(12, 0);
    EXPECT_GT(st.preemptions, 0u);  // the case that matters most is exercised
}

// Half the requests share a 40-token system prompt: the prefix cache and running-prefix sharing
// decide the same admissions and the same reused tokens in both executors.
TEST(Replay, TheRealBatcherAndTheSimulatorShareTheSamePrefixes) {
    const ReplayStats st = replay(64, 40);
    EXPECT_GT(st.sim_cached_tokens, 0);
}

}  // namespace
}  // namespace duet::serving
