// The TP and PP engines in one process: ranks on threads, joined by an in-memory communicator
// (sum in rank order, like MPI_Allreduce's result on every rank; point-to-point through
// mailboxes), against one engine on the whole model. Rank 0 drives (runtime/tp_rank.h), the
// others follow; rank 0's logits must equal the single engine's up to f32 summation order
// under TP, and exactly under PP (every stage runs the same kernels on the same rows).
#include <gtest/gtest.h>

#include <barrier>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <thread>

#include "../runtime/test_models.h"
#include "../runtime/unsplit_kv_b.h"
#include "parallel/communicator.h"
#include "runtime/tp_rank.h"
#include "runtime/tp_weights.h"

using WR = duet::graph::WeightRole;

using namespace duet;
using namespace duet::runtime;

namespace {

// Ranks of one process, one thread each.
class ThreadGroup {
public:
    explicit ThreadGroup(int n) : n_(n), sync_(n), ptr_(size_t(n)) {}

    class Rank : public parallel::Communicator {
    public:
        Rank(ThreadGroup& g, int r) : g_(g), r_(r) {}
        int rank() const override { return r_; }
        int size() const override { return g_.n_; }
        void all_reduce_sum(float* x, int64_t n) override {
            g_.ptr_[size_t(r_)] = x;
            g_.sync_.arrive_and_wait();
            std::vector<float> sum(size_t(n), 0.0f);
            for (int q = 0; q < g_.n_; ++q)
                for (int64_t i = 0; i < n; ++i) sum[size_t(i)] += static_cast<const float*>(g_.ptr_[size_t(q)])[i];
            g_.sync_.arrive_and_wait();  // everyone has read every x
            std::memcpy(x, sum.data(), size_t(n) * sizeof(float));
        }
        void broadcast(void* data, int64_t n_bytes, int root) override {
            if (r_ == root) g_.ptr_[size_t(root)] = data;
            g_.sync_.arrive_and_wait();
            if (r_ != root) std::memcpy(data, g_.ptr_[size_t(root)], size_t(n_bytes));
            g_.sync_.arrive_and_wait();
        }
        void barrier() override { g_.sync_.arrive_and_wait(); }
        void send(const float* x, int64_t n, int to) override {
            std::lock_guard<std::mutex> lk(g_.mu_);
            g_.box_[{r_, to}].emplace_back(x, x + n);
            g_.cv_.notify_all();
        }
        void recv(float* x, int64_t n, int from) override {
            std::unique_lock<std::mutex> lk(g_.mu_);
            auto& q = g_.box_[{from, r_}];
            g_.cv_.wait(lk, [&] { return !q.empty(); });
            ASSERT_EQ(int64_t(q.front().size()), n);
            std::memcpy(x, q.front().data(), size_t(n) * sizeof(float));
            q.pop_front();
        }
        [[noreturn]] void abort(int) override { std::abort(); }
        const char* kind() const override { return "threads"; }

    private:
        ThreadGroup& g_;
        int r_;
    };

private:
    int n_;
    std::barrier<> sync_;
    std::vector<void*> ptr_;
    std::mutex mu_;
    std::condition_variable cv_;
    std::map<std::pair<int, int>, std::deque<std::vector<float>>> box_;  // (from, to): messages in order
};

// Logits of an n_prompt-token prefill (every row) and n_decode decode steps.
std::vector<float> logits_of(Engine& e, int n_prompt, int n_decode) {
    SequenceKv s;
    std::vector<float> all;
    ForwardOutput out;
    std::vector<int32_t> prompt, decode;
    for (int i = 0; i < n_prompt; ++i) prompt.push_back(int32_t((1 + 17 * i) % 300));
    for (int i = 0; i < n_decode; ++i) decode.push_back(int32_t((5 + 11 * i) % 300));
    SeqInput in{prompt, &s, true};
    EXPECT_EQ(e.forward({&in, 1}, out), ForwardStatus::OK);
    all = out.logits;
    for (int32_t t : decode) {
        SeqInput d{{&t, 1}, &s, false};
        EXPECT_EQ(e.forward({&d, 1}, out), ForwardStatus::OK);
        all.insert(all.end(), out.logits.begin(), out.logits.end());
    }
    s.release(e.kv_cache());
    return all;
}

// Max |tp - one| over every logit, with tp on `tp` thread ranks (or pp stages when pp > 1,
// tp then 1).
float max_diff(const std::string& path, int tp, int n_prompt = 5, int n_decode = 3, DType kv = DType::F32,
               int pp = 1, bool fuse = false) {
    auto m = Model::load(path);
    EngineOptions o;
    o.n_threads = 1;
    o.kv_type = kv;
    o.fuse = fuse;  // the ranks' graphs fused too (RoPE with the KV write indexes the stage's own cache layers)
    Engine one(m, o);
    const std::vector<float> want = logits_of(one, n_prompt, n_decode);
    const int n = tp * pp;
    ThreadGroup g(n);
    std::vector<std::unique_ptr<ThreadGroup::Rank>> comm;
    for (int r = 0; r < n; ++r) comm.push_back(std::make_unique<ThreadGroup::Rank>(g, r));
    std::vector<float> got;
    std::vector<std::thread> followers;
    for (int r = 1; r < n; ++r)
        followers.emplace_back([&, r] {
            TpRank rank(m, *comm[size_t(r)], tp, pp);
            auto e = rank.make_engine(o);
            rank.follow(*e);
        });
    {
        TpRank rank(m, *comm[0], tp, pp);
        auto e = rank.make_engine(o);
        got = logits_of(*e, n_prompt, n_decode);
        rank.finish();
    }
    for (auto& t : followers) t.join();
    EXPECT_EQ(got.size(), want.size());
    float d = 0;
    for (size_t i = 0; i < want.size() && i < got.size(); ++i) d = std::max(d, std::fabs(got[i] - want[i]));
    return d;
}

TEST(TpEngine, TwoThreadRanksGiveTheSingleEnginesLogits) {
    // Logits of these models are O(1); f32 summation order moves them by ~1e-6.
    EXPECT_LT(max_diff(test::generated_model("tiny-mistral", "f32"), 2), 1e-4f);
    EXPECT_LT(max_diff(test::generated_model("tiny-qwen2", "f32"), 2), 1e-4f);
    EXPECT_LT(max_diff(test::generated_model("small-llama", "f16"), 2), 1e-4f);
}

TEST(TpEngine, LongerRunsOnAnF16CacheStayAtSummationOrder) {
    // 20 prompt tokens (the GEMM paths) and 23 decode steps; the f16 KV cache rounds K and V,
    // which can move a logit by more than an f32 ulp but stays far below any token gap.
    EXPECT_LT(max_diff(test::generated_model("small-llama", "f32"), 2, 20, 23, DType::F16), 1e-3f);
    EXPECT_LT(max_diff(test::generated_model("tiny-qwen2", "f32"), 2, 20, 23, DType::F16), 1e-3f);
}

TEST(TpEngine, FourRanksReplicatingKvHeadsGiveTheSameLogits) {
    EXPECT_LT(max_diff(test::generated_model("tiny-mistral", "f32"), 4), 1e-4f);  // 2 KV heads on 4 ranks
}

// Mixture-of-Experts (every expert's features split, the router replicated) and latent
// attention (split by heads, the latent cache whole on every rank): prefill and decode logits
// of two and four ranks against one engine.
TEST(TpEngine, ExpertAndLatentAttentionModelsGiveTheSingleEnginesLogits) {
    for (const char* arch : {"tiny-mixtral", "tiny-qwen2moe", "tiny-qwen3moe", "tiny-deepseek2", "tiny-deepseek3"}) {
        EXPECT_LT(max_diff(test::generated_model(arch, "f32"), 2, 12, 6), 1e-4f) << arch;
        EXPECT_LT(max_diff(test::generated_model(arch, "f32"), 4), 1e-4f) << arch;  // 4 heads: one per rank
    }
    EXPECT_LT(max_diff(test::generated_model("tiny-deepseek2-yarn", "f32"), 2, 20, 8, DType::F16), 1e-3f);
    // W_kv_b unsplit: each rank's rows of it are its heads', split per head at load
    EXPECT_LT(max_diff(test::with_unsplit_kv_b(test::generated_model("tiny-deepseek2", "f32"), "tp_kv_b"), 2), 1e-4f);
}

// A rank reads its slice of every expert (the stride between experts stays the file's): the
// ranks' bytes add up to the file's, plus the replicated tensors once per extra rank.
TEST(TpEngine, ExpertRanksReadTheirSliceOfEveryExpert) {
    auto m = Model::load(test::generated_model("tiny-deepseek2", "f32"));
    const model::Weights& w = m->weights();
    uint64_t ranks = 0, replicated = 0;
    for (int r = 0; r < 2; ++r) {
        const graph::TpShard sh = graph::tp_shard(model::model_shape(m->hparams()), 2, r);
        ranks += shard_bytes(shard_weights(w, m->hparams(), sh));
    }
    w.for_each([&](const model::TensorRef& t) { replicated += t.n_bytes(); });
    for (const model::RoleTensors& l : w.layers)
        for (const graph::TensorSpec& t : graph::tensor_catalogue())
            if (t.binding == graph::Binding::BLOCK && t.tp != graph::TpSplit::REPLICATED &&
                t.kind != graph::WeightKind::FUSED)
                replicated -= (t.part == graph::Part::WEIGHT ? l[t.role] : l.bias_of(t.role)).n_bytes();
    EXPECT_EQ(ranks, w.total_bytes() + replicated);
}

TEST(PpEngine, TwoStagesGiveTheSingleEnginesLogitsExactly) {
    EXPECT_EQ(max_diff(test::generated_model("tiny-mistral", "f32"), 1, 5, 3, DType::F32, 2), 0.0f);
    EXPECT_EQ(max_diff(test::generated_model("small-llama", "f16"), 1, 20, 23, DType::F16, 2), 0.0f);
    EXPECT_EQ(max_diff(test::generated_model("tiny-qwen2", "f32"), 1, 5, 3, DType::F32, 2), 0.0f);
    EXPECT_EQ(max_diff(test::generated_model("small-llama", "f16"), 1, 20, 23, DType::F16, 2, true), 0.0f);
    // q8_0 with --fuse: each stage's RMSNorms fused into their matmuls' input quantisation
    EXPECT_EQ(max_diff(test::generated_model("tiny-mistral", "q8_0"), 1, 20, 5, DType::F16, 2, true), 0.0f);
}

// Each stage's KV cache holds its layers only, and its weights are its layers' plus the
// embedding (stage 0) or the output norm and head (the last stage): together the file's.
TEST(PpEngine, AStageHoldsAndReadsOnlyItsLayers) {
    auto m = Model::load(test::generated_model("small-llama", "f32"));
    const int64_t n_layer = m->hparams().n_layer;
    ASSERT_GE(n_layer, 2);
    ThreadGroup g(2);
    ThreadGroup::Rank c0(g, 0), c1(g, 1);
    EngineOptions o;
    o.n_threads = 1;
    uint64_t bytes[2] = {0, 0};
    int64_t kv_layers[2] = {0, 0};
    std::thread follower([&] {
        TpRank rank(m, c1, 1, 2);
        auto e = rank.make_engine(o);
        bytes[1] = rank.shard_bytes();
        kv_layers[1] = e->kv_cache().config().n_layer;
        rank.follow(*e);
    });
    {
        TpRank rank(m, c0, 1, 2);
        auto e = rank.make_engine(o);
        bytes[0] = rank.shard_bytes();
        kv_layers[0] = e->kv_cache().config().n_layer;
        rank.finish();
    }
    follower.join();
    EXPECT_EQ(kv_layers[0], n_layer / 2);
    EXPECT_EQ(kv_layers[1], n_layer - n_layer / 2);
    const model::Weights& w = m->weights();
    const uint64_t tied = w[WR::LM_HEAD].data == w[WR::TOKEN_EMBD].data ? w[WR::TOKEN_EMBD].n_bytes() : 0;  // on both ends
    EXPECT_EQ(bytes[0] + bytes[1], w.total_bytes() + tied);
    EXPECT_LT(bytes[0], w.total_bytes());
    EXPECT_LT(bytes[1], w.total_bytes());
}

TEST(PpEngine, TpAndPpTogetherAreAClearError) {
    auto c = parallel::make_single_process_communicator();
    try {
        check_parallel_world(2, 2, *c);
        FAIL() << "no error";
    } catch (const std::exception& e) {
        EXPECT_STREQ(e.what(), "--tp 2 with --pp 2: the real engine runs tensor or pipeline parallelism, not both "
                               "(allowed: --tp 1 or --pp 1; duet bench models both)");
    }
}

// A pool of 2 blocks holds one sequence of 5 tokens (blocks of 4). Rank 0 releases sequence A
// and starts B while A's blocks are still held by rank 1 (it hears of no release): rank 1's
// forward finds its pool full, drops A (the sequence it stepped least recently) and runs B,
// whose logits still equal one engine's.
TEST(TpEngine, AFollowerDropsWhatRankZeroReleased) {
    auto m = Model::load(test::generated_model("tiny-mistral", "f32"));
    EngineOptions o;
    o.n_threads = 1;
    o.kv_type = DType::F32;
    o.block_tokens = 4;
    o.kv_blocks = 2;
    const std::vector<int32_t> a = {3, 4, 5, 6, 7}, b = {9, 8, 7, 6, 5};
    const auto prefill = [](Engine& e, SequenceKv& s, const std::vector<int32_t>& t, ForwardOutput& out) {
        SeqInput in{t, &s, false};
        return e.forward({&in, 1}, out);
    };
    Engine one(m, o);
    ForwardOutput want;
    {
        SequenceKv s;
        ASSERT_EQ(prefill(one, s, b, want), ForwardStatus::OK);
        s.release(one.kv_cache());
    }
    ThreadGroup g(2);
    ThreadGroup::Rank c0(g, 0), c1(g, 1);
    std::thread follower([&] {
        TpRank rank(m, c1, 2);
        auto e = rank.make_engine(o);
        rank.follow(*e);
    });
    ForwardOutput got;
    {
        TpRank rank(m, c0, 2);
        auto e = rank.make_engine(o);
        SequenceKv sa, sb;  // both alive: different keys
        ASSERT_EQ(prefill(*e, sa, a, got), ForwardStatus::OK);
        sa.release(e->kv_cache());
        ASSERT_EQ(prefill(*e, sb, b, got), ForwardStatus::OK);
        sb.release(e->kv_cache());
        rank.finish();
    }
    follower.join();
    ASSERT_EQ(got.logits.size(), want.logits.size());
    for (size_t i = 0; i < want.logits.size(); ++i) ASSERT_NEAR(got.logits[i], want.logits[i], 1e-4) << i;
}

}  // namespace
