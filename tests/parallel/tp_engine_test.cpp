// The TP engine in one process: two ranks on two threads, joined by an in-memory communicator
// (sum in rank order, like MPI_Allreduce's result on every rank), against one engine on the
// whole model. Rank 0 drives (runtime/tp_rank.h), rank 1 follows; rank 0's logits must equal
// the single engine's up to f32 summation order, for prefill (every row) and decode.
#include <gtest/gtest.h>

#include <barrier>
#include <cmath>
#include <cstring>
#include <thread>

#include "../runtime/test_models.h"
#include "parallel/communicator.h"
#include "runtime/tp_rank.h"

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
};

// Logits of a 5-token prefill (every row) and 3 decode steps.
std::vector<float> logits_of(Engine& e) {
    SequenceKv s;
    std::vector<float> all;
    ForwardOutput out;
    const std::vector<int32_t> prompt = {1, 17, 42, 99, 7};
    SeqInput in{prompt, &s, true};
    EXPECT_EQ(e.forward({&in, 1}, out), ForwardStatus::OK);
    all = out.logits;
    for (int32_t t : {5, 300, 11}) {
        SeqInput d{{&t, 1}, &s, false};
        EXPECT_EQ(e.forward({&d, 1}, out), ForwardStatus::OK);
        all.insert(all.end(), out.logits.begin(), out.logits.end());
    }
    s.release(e.kv_cache());
    return all;
}

// Max |tp - one| over every logit, with tp on `tp` thread ranks.
float max_diff(const std::string& path, int tp) {
    auto m = Model::load(path);
    EngineOptions o;
    o.n_threads = 1;
    o.kv_type = DType::F32;
    Engine one(m, o);
    const std::vector<float> want = logits_of(one);
    ThreadGroup g(tp);
    std::vector<std::unique_ptr<ThreadGroup::Rank>> comm;
    for (int r = 0; r < tp; ++r) comm.push_back(std::make_unique<ThreadGroup::Rank>(g, r));
    std::vector<float> got;
    std::vector<std::thread> followers;
    for (int r = 1; r < tp; ++r)
        followers.emplace_back([&, r] {
            TpRank rank(m, *comm[size_t(r)], tp);
            auto e = rank.make_engine(o);
            rank.follow(*e);
        });
    {
        TpRank rank(m, *comm[0], tp);
        auto e = rank.make_engine(o);
        got = logits_of(*e);
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

TEST(TpEngine, FourRanksReplicatingKvHeadsGiveTheSameLogits) {
    EXPECT_LT(max_diff(test::generated_model("tiny-mistral", "f32"), 4), 1e-4f);  // 2 KV heads on 4 ranks
}

}  // namespace
