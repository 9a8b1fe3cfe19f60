// Op records from the engine's dispatch point: one per executed operator, closed-form
// shapes, bytes and FLOPs.
#include <gtest/gtest.h>

#include <map>

#include "runtime/engine.h"
#include "test_models.h"

using namespace duet;
using namespace duet::runtime;
using graph::OpKind;
using graph::WeightRole;

namespace {

std::map<OpKind, int> count_kinds(const graph::OpTrace& t) {
    std::map<OpKind, int> c;
    for (const auto& r : t) ++c[r.kind];
    return c;
}

std::shared_ptr<const Model> load(const std::string& preset, const std::string& dtype) {
    const std::string path = test::generated_model(preset, dtype);
    return path.empty() ? nullptr : Model::load(path);
}

Engine make_engine(const std::shared_ptr<const Model>& m) {
    EngineOptions o;
    o.n_threads = 1;
    o.kv_type = DType::F16;
    o.n_ctx = 32;
    o.n_seq_max = 2;
    return Engine(m, o);
}

TEST(OpTrace, OneRecordPerOperatorOfARaggedBatch) {
    for (const std::string preset : {"tiny-llama", "tiny-qwen2"}) {
        auto m = load(preset, "f32");
        ASSERT_TRUE(m) << preset;
        const auto& hp = m->hparams();
        Engine e = make_engine(m);
        graph::OpTrace trace;
        e.set_trace(&trace);
        SequenceKv a, b;
        const std::vector<int32_t> ta = {1, 2, 3, 4, 5}, tb = {6, 7};
        std::vector<SeqInput> batch = {{ta, &a, false}, {tb, &b, true}};
        ForwardOutput out;
        ASSERT_EQ(e.forward(batch, out), ForwardStatus::OK);
        const int L = int(hp.n_layer);
        auto c = count_kinds(trace);
        EXPECT_EQ(c[OpKind::EMBED], 1);
        EXPECT_EQ(c[OpKind::RMSNORM], 2 * L + 1);
        EXPECT_EQ(c[OpKind::MATMUL], 7 * L + 1);  // qwen2's q/k/v biases are matmul epilogues
        EXPECT_EQ(c[OpKind::ROPE], L);            // q and k together
        EXPECT_EQ(c[OpKind::KV_WRITE], L);
        EXPECT_EQ(c[OpKind::ATTENTION], L);  // all sequences of the batch
        EXPECT_EQ(c[OpKind::SWIGLU], L);
        EXPECT_EQ(c[OpKind::ADD], 2 * L);
        EXPECT_EQ(c[OpKind::OUTPUT], 1);
        EXPECT_EQ(trace.size(), size_t(4 + 15 * L));
        // The order of sim/op_trace.h, layer by layer.
        const OpKind layer_order[] = {OpKind::RMSNORM, OpKind::MATMUL, OpKind::MATMUL,   OpKind::MATMUL,
                                      OpKind::ROPE,    OpKind::KV_WRITE, OpKind::ATTENTION, OpKind::MATMUL,
                                      OpKind::ADD,     OpKind::RMSNORM, OpKind::MATMUL,   OpKind::MATMUL,
                                      OpKind::SWIGLU,  OpKind::MATMUL,  OpKind::ADD};
        EXPECT_EQ(trace[0].kind, OpKind::EMBED);
        for (int l = 0; l < L; ++l)
            for (int i = 0; i < 15; ++i) {
                EXPECT_EQ(trace[size_t(1 + 15 * l + i)].kind, layer_order[i]) << "layer " << l << " op " << i;
                EXPECT_EQ(trace[size_t(1 + 15 * l + i)].layer, l);
            }
        // Ragged attention: 5 + 2 queries, contexts 5 and 2 -> pairs 15 + 3.
        const graph::OpRecord& at = trace[7];
        ASSERT_EQ(at.kind, OpKind::ATTENTION);
        EXPECT_EQ(at.m, 7);
        EXPECT_EQ(at.n, 5);
        EXPECT_EQ(at.weight_bytes, uint64_t(2 * (5 + 2) * hp.n_embd_kv() * 2));  // f16 KV
        EXPECT_DOUBLE_EQ(at.flops, 4.0 * double(hp.n_head * hp.head_dim) * 18.0);
        EXPECT_EQ(trace[5].n, hp.n_embd_q() + hp.n_embd_kv());  // ROPE
        EXPECT_EQ(trace[6].n, 2 * hp.n_embd_kv());              // KV_WRITE
        EXPECT_EQ(trace[6].out_bytes, uint64_t(7 * 2 * hp.n_embd_kv() * 2));
        // Layers in order, LM head last with layer -1, everything of this batch is prefill.
        const graph::OpRecord& head = trace[trace.size() - 2];
        EXPECT_EQ(head.role, WeightRole::LM_HEAD);
        EXPECT_EQ(head.layer, -1);
        EXPECT_EQ(head.m, 1 + 2);  // last row of a, all rows of b
        EXPECT_EQ(trace.back().kind, OpKind::OUTPUT);
        EXPECT_EQ(trace.back().m, 2);
        EXPECT_EQ(trace.back().n, hp.n_vocab);
        for (const auto& r : trace) {
            EXPECT_EQ(r.phase, graph::Phase::PREFILL);
            EXPECT_EQ(r.n_seq, 2);
        }
        // A decode step of one sequence: everything is DECODE with m == 1.
        trace.clear();
        const std::vector<int32_t> one = {9};
        SeqInput step{one, &a, false};
        ASSERT_EQ(e.forward({&step, 1}, out), ForwardStatus::OK);
        for (const auto& r : trace) {
            EXPECT_EQ(r.phase, graph::Phase::DECODE);
            EXPECT_EQ(r.n_seq, 1);
            if (r.kind == OpKind::MATMUL || r.kind == OpKind::ATTENTION) {
                EXPECT_EQ(r.m, 1);
            }
        }
        a.release(e.kv_cache());
        b.release(e.kv_cache());
    }
}

TEST(OpTrace, MatmulAndAttentionRecordsAreClosedForm) {
    auto m = load("tiny-llama", "q8_0");
    ASSERT_TRUE(m);
    const auto& hp = m->hparams();
    Engine e = make_engine(m);
    graph::OpTrace trace;
    e.set_trace(&trace);
    SequenceKv s;
    const std::vector<int32_t> prompt = {1, 2, 3, 4, 5, 6};
    SeqInput in{prompt, &s, false};
    ForwardOutput out;
    ASSERT_EQ(e.forward({&in, 1}, out), ForwardStatus::OK);
    const std::vector<int32_t> next = {7};
    SeqInput step{next, &s, false};
    trace.clear();
    ASSERT_EQ(e.forward({&step, 1}, out), ForwardStatus::OK);

    int seen_q = 0, seen_attn = 0;
    for (const auto& r : trace) {
        if (r.kind == OpKind::MATMUL && r.role == WeightRole::FFN_DOWN && r.layer == 1) {
            ++seen_q;
            EXPECT_EQ(r.m, 1);
            EXPECT_EQ(r.n, hp.n_embd);
            EXPECT_EQ(r.k, hp.n_ff);
            EXPECT_EQ(r.weight_dtype, DType::Q8_0);
            // q8_0: 34 bytes per 32 weights
            EXPECT_EQ(r.weight_bytes, uint64_t(hp.n_embd) * uint64_t(hp.n_ff / 32 * 34));
            EXPECT_EQ(r.in_bytes, uint64_t(hp.n_ff) * 4);
            EXPECT_EQ(r.out_bytes, uint64_t(hp.n_embd) * 4);
            EXPECT_DOUBLE_EQ(r.flops, 2.0 * double(hp.n_embd) * double(hp.n_ff));
        }
        if (r.kind == OpKind::ATTENTION && r.layer == 0) {
            ++seen_attn;
            EXPECT_EQ(r.m, 1);
            EXPECT_EQ(r.n, 7);  // context: 6 prompt + this token
            EXPECT_EQ(r.k, hp.head_dim);
            EXPECT_EQ(r.n_head, hp.n_head);
            EXPECT_EQ(r.n_head_kv, hp.n_head_kv);
            EXPECT_EQ(r.weight_bytes, uint64_t(2 * 7 * hp.n_embd_kv() * 2));  // K and V rows in f16
            EXPECT_DOUBLE_EQ(r.flops, 4.0 * double(hp.n_head * hp.head_dim) * 7.0);
        }
    }
    EXPECT_EQ(seen_q, 1);
    EXPECT_EQ(seen_attn, 1);
    s.release(e.kv_cache());
}

TEST(OpTrace, PrefillAttentionCountsCausalPairs) {
    auto m = load("tiny-llama", "f32");
    ASSERT_TRUE(m);
    const auto& hp = m->hparams();
    Engine e = make_engine(m);
    graph::OpTrace trace;
    e.set_trace(&trace);
    SequenceKv s;
    const std::vector<int32_t> prompt = {1, 2, 3, 4};
    SeqInput in{prompt, &s, false};
    ForwardOutput out;
    ASSERT_EQ(e.forward({&in, 1}, out), ForwardStatus::OK);
    for (const auto& r : trace) {
        if (r.kind == OpKind::ATTENTION) {  // pairs 1 + 2 + 3 + 4 = 10
            EXPECT_DOUBLE_EQ(r.flops, 4.0 * double(hp.n_head * hp.head_dim) * 10.0);
        }
    }
    s.release(e.kv_cache());
}

}  // namespace
