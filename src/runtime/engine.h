#pragma once
// The forward pass of Llama / Mistral / Qwen2, the Mixture-of-Experts families (Mixtral,
// Qwen2-MoE, Qwen3-MoE) and DeepSeek-V2/V3 (latent attention: a latent KV cache) over a ragged
// batch of sequences.
//
// forward(batch) takes any number of sequences, each with its own new tokens and its own
// block table (SequenceKv); sequence s's new tokens sit at positions kv.n_tokens() ..
// kv.n_tokens() + n - 1. All new tokens of the batch go through the weight matmuls together
// (one GEMM streams each weight once for the whole batch); attention runs per sequence over
// its own KV blocks. Single-prompt generation is a batch of one, prefill is a batch entry with
// many tokens, decode one with one token, and continuous batching (issue 5) mixes both in one
// call — no other forward exists.
//
// The forward is the model's graph (graph/graph.h, built once at construction from the
// hparams, optionally rewritten by the fusion pass): the engine walks its nodes in order and
// calls the Dispatcher (runtime/dispatch.h) once per node, which records a graph::OpRecord per
// operator when a trace is set; every weight matmul goes through the WeightSource
// (runtime/weight_source.h), replaceable for another weight layout. Scratch activations live
// in one arena laid out by the graph's static memory plan (graph/memory_plan.h).
//
// Ownership: the engine shares the Model, owns one ThreadPool, the KvCache and the scratch
// buffers. Sequences (SequenceKv) are owned by the caller but hold blocks of this engine's
// cache: release them through kv_cache() before the engine goes away.
// Thread safety: none; one thread drives an engine.
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "core/dtype.h"
#include "core/thread_pool.h"
#include "graph/graph.h"
#include "graph/memory_plan.h"
#include "runtime/dispatch.h"
#include "runtime/kv_cache.h"
#include "runtime/mlp_prefetch.h"
#include "runtime/model.h"
#include "runtime/tp_hook.h"
#include "runtime/weight_source.h"
#include "graph/lowering.h"
#include "graph/op_record.h"

namespace duet::runtime {

// One forward's execute time (host wall clock, the whole forward incl. KV reservation).
struct ForwardTime {
    int64_t index = 0;     // forwards of this engine so far, from 0
    bool prefill = false;  // any sequence had more than one new token
    int64_t n_tokens = 0, n_seqs = 0;
    double wall_ms = 0;
};

struct EngineOptions {
    int n_threads = 0;              // <= 0: all hardware threads
    DType kv_type = DType::F16;     // F32, F16 or Q8_0 (int8 with per-32-value scales, runtime/kv_cache.h)
    int64_t n_ctx = 0;              // positions per sequence; 0: min(n_ctx_train, 4096)
    int64_t n_seq_max = 1;          // sequences the KV pool is sized for
    int64_t block_tokens = 16;      // positions per KV block
    int64_t kv_blocks = 0;          // 0: enough for n_seq_max sequences of n_ctx positions
    // run graph::fuse_all: Q/K/V and gate/up as one GEMM each, RoPE + KV write, RMSNorm into quantised matmuls
    bool fuse = false;
    bool static_plan = true;        // false: per-op allocation, no activation reuse (graph::plan_memory_without_reuse)
    // Runtime knobs (config/runtime_knobs.h), plain here so the engine does not read config:
    bool reference_attention = false;  // VLLM_ATTENTION_BACKEND=TORCH_SDPA: the scalar reference kernel
    uint64_t prefetch_mlp_bytes = 0;   // VLLM_ASCEND_ENABLE_PREFETCH_MLP: per-layer gate/up prefetch budget (0: off)
    // VLLM_ASCEND_MODEL_EXECUTE_TIME_OBSERVE: called after every forward with its wall time.
    std::function<void(const ForwardTime&)> on_forward;
};


// One sequence of a batch.
struct SeqInput {
    std::span<const int32_t> tokens;  // new tokens, at least one
    SequenceKv* kv = nullptr;         // its block table; the engine reserves, writes and commits
    bool all_logits = false;          // logits for every new token; default only the last
};

enum class ForwardStatus {
    OK,
    KV_FULL,       // the block pool cannot hold the new tokens: nothing was computed or changed
    CTX_EXCEEDED,  // a sequence would pass n_ctx positions: nothing was computed or changed
};

// Logits of one forward: rows [n_rows][n_vocab]; sequence s owns rows
// row_begin[s] .. row_begin[s] + (all_logits ? n_tokens : 1) - 1.
struct ForwardOutput {
    int64_t n_vocab = 0;
    std::vector<float> logits;
    std::vector<int64_t> row_begin;
    const float* row(size_t seq, int64_t i = 0) const { return logits.data() + (row_begin[seq] + i) * n_vocab; }
    // The last row of sequence seq (its next-token distribution).
    const float* last(size_t seq) const {
        const int64_t end = seq + 1 < row_begin.size() ? row_begin[seq + 1] : int64_t(logits.size()) / n_vocab;
        return logits.data() + (end - 1) * n_vocab;
    }
};

class Engine {
public:
    Engine(std::shared_ptr<const Model> model, const EngineOptions& opts);  // throws duet::Error on bad options
    // Runs `graph` instead of the model family's builder (a new architecture before it has a
    // builder, tests). Its shapes must match the model's tensors; opts.fuse is applied to it.
    Engine(std::shared_ptr<const Model> model, const EngineOptions& opts, graph::Graph graph);
    // Runs `graph` over `weights` instead of the model's own (a tensor-parallel rank's slices,
    // runtime/tp_weights.h; the graph then is the TP pass's, whose shape holds the local head
    // and FFN counts). `weights` must outlive the engine.
    Engine(std::shared_ptr<const Model> model, const EngineOptions& opts, graph::Graph graph,
           const model::Weights& weights);
    ~Engine();
    Engine(const Engine&) = delete;
    Engine& operator=(const Engine&) = delete;

    // Runs the batch. Token ids out of range throw duet::Error (bad input); a full pool or
    // context is a ForwardStatus. On OK every sequence's kv has advanced by its tokens.
    ForwardStatus forward(std::span<const SeqInput> batch, ForwardOutput& out);

    const Model& model() const { return *model_; }
    const std::shared_ptr<const Model>& model_ptr() const { return model_; }
    const model::Hparams& hparams() const { return model_->hparams(); }
    KvCache& kv_cache() { return *kv_; }
    ThreadPool& pool() { return pool_; }
    const EngineOptions& options() const { return opts_; }
    int64_t n_ctx() const { return opts_.n_ctx; }

    // Tracing: records of every operator of every following forward are appended to `trace`
    // (nullptr: off). The trace must outlive its use.
    void set_trace(graph::OpTrace* trace) { dispatch_.set_trace(trace); }
    Dispatcher& dispatcher() { return dispatch_; }
    // The graph this engine executes (after passes).
    const graph::Graph& graph() const { return graph_; }
    // The weights read in place (the default weight source), with the graph's fused matrices.
    const PlainWeightSource& plain_weights() const { return plain_; }
    // Replaces the weight layout (nullptr: back to the plain GGUF tensors). Not owned. Every
    // weight matmul reads through it, the expert and per-head stacks included (matmul_stack).
    void set_weight_source(const WeightSource* w);
    // Tensor and pipeline parallelism (runtime/tp_rank.h): the hook runs the graph's ALL_REDUCE,
    // SEND and RECV nodes and hears of every forward. Not owned; nullptr: none (a TP graph then fails at its first
    // collective).
    void set_tp_hook(TpHook* h) { tp_ = h; }
    // The MLP prefetcher (null unless opts.prefetch_mlp_bytes > 0).
    const MlpPrefetch* mlp_prefetch() const { return prefetch_.get(); }
    // Bytes of the activation scratch now allocated (the arena of the memory plan).
    uint64_t scratch_bytes() const { return uint64_t(arena_.size()) * sizeof(float); }
    // Allocates (and zeroes) the scratch for forwards of up to n_tok tokens now, so the first
    // forward that large does not pay for it: growing it took 8.5 ms at 152 tokens of a 4-layer
    // bench-1b (page faults and zeroing; measured on the Xeon KVM guest of docs/performance.md). Never shrinks it.
    void reserve_tokens(int64_t n_tok) { ensure_scratch(n_tok); }
    const graph::MemoryPlan& memory_plan() const { return mem_; }

private:
    // What one forward needs besides the tensors.
    struct Step {
        std::span<const SeqInput> batch;
        const int32_t* tokens;
        int64_t n_tok, n_rows;
        graph::Batch lowering;  // the forward the nodes' records are lowered for (graph/lowering.h)
    };
    void run_node(const graph::Node& node, const Step& st);
    void write_kv(const graph::Node& node, const Step& st);
    void rope_write_kv(const graph::Node& node, const Step& st);  // ROPE_KV_WRITE
    Dispatcher::RopeParams rope_params() const;
    void attend(const graph::Node& node, const Step& st);
    // The Mixture-of-Experts FFN (graph/moe_builder.h), runtime/engine_moe.cpp.
    void moe_route(const graph::Node& node, const Step& st);
    void moe_matmul(const graph::Node& node, const Step& st);
    void moe_combine(const graph::Node& node, const Step& st);
    // Multi-head latent attention (graph/mla_builder.h), runtime/engine_mla.cpp.
    void mla_rope(const graph::Node& node, const Step& st);
    void mla_write_kv(const graph::Node& node, const Step& st);
    void head_matmul(const graph::Node& node, const Step& st);
    void mla_attend(const graph::Node& node, const Step& st);
    void init_mla();    // the attention scale and YaRN rotation; split_kv_b when the file needs it
    void split_kv_b();  // a file's unsplit W_kv_b into f32 per-head halves (mla_split_)
    const model::TensorRef& head_weights(graph::WeightRole role, int32_t layer) const;
    // One row of n floats into the KV cache's type (F32, F16, Q8_0).
    static void store_kv_row(const float* src, uint8_t* dst, int64_t n, DType type);
    void ensure_scratch(int64_t n_tok);
    float* ptr(int32_t t) const { return ptr_[size_t(t)]; }
    int64_t stride(int32_t t) const { return graph_.row_stride(t); }

    std::shared_ptr<const Model> model_;
    EngineOptions opts_;
    TpHook* tp_ = nullptr;
    int32_t kv_layer0_ = 0;  // the first layer of this engine's pipeline stage (its KV cache's layer 0)
    ThreadPool pool_;
    std::unique_ptr<KvCache> kv_;
    PlainWeightSource plain_;
    graph::Graph graph_;
    graph::MemoryPlan mem_;
    Dispatcher dispatch_;
    kernels::RopeOrder rope_order_;
    std::vector<const float*> node_vec_;   // per node: norm weight or matmul bias (null: none)
    std::vector<const float*> node_norm_;  // per node: the weights of an RMSNorm fused into a matmul
    std::vector<int64_t> keep_rows_;       // a fused output norm's x rows (the rows whose logits are wanted)

    // Scratch: the arena of the memory plan for scratch_tokens_ rows; ptr_ per tensor id.
    int64_t scratch_tokens_ = 0;
    std::vector<float> arena_;
    std::vector<float*> ptr_;
    std::unique_ptr<MlpPrefetch> prefetch_;
    int64_t n_forwards_ = 0;
    std::vector<int32_t> tokens_;
    std::vector<int64_t> pos_;
    std::vector<graph::SeqSpan> seq_spans_;  // the forward's sequences, for the lowering
    std::vector<const void*> kptr_, vptr_;
    std::vector<uint8_t*> kdst_, vdst_;  // per token: its K and V cache rows (rope_write_kv)
    std::vector<Dispatcher::AttentionSeq> attn_seqs_;
    // The routing of the layer being run (MOE_ROUTE writes it, its MOE_MATMULs read it): per token
    // its n_expert_used expert ids; per expert the slots t * n_expert_used + j routed to it, in
    // token order. A MOE_MATMUL gathers every chosen expert's rows into moe_x_ (expert after
    // expert; gathered row r is slot moe_order_[r]), hands moe_groups_ to the weight source's
    // matmul_stack, which writes moe_y_, and scatters its rows back. head_groups_: a HEAD_MATMUL's heads.
    std::vector<int32_t> moe_ids_;
    std::vector<std::vector<int64_t>> moe_slots_;
    std::vector<int64_t> moe_order_;
    std::vector<StackRows> moe_groups_, head_groups_;
    std::vector<float> moe_x_, moe_y_;
    // Latent attention: a sequence's cached rows of one layer as f32 [n_ctx][kv_lora_rank +
    // qk_rope_head_dim]; one cache row being written; per layer the f32 halves of W_kv_b of a
    // file that stores it whole (empty otherwise).
    std::vector<float> mla_ctx_, mla_row_;
    struct MlaSplit {
        std::vector<float> k_b, v_b;  // [n_head][kv_lora_rank][qk_nope], [n_head][v_head][kv_lora_rank]
        model::TensorRef k_b_ref, v_b_ref;
    };
    std::vector<MlaSplit> mla_split_;
    float mla_kq_scale_ = 0.0f;   // 1/sqrt(qk_nope + qk_rope), times YaRN's mscale^2
    kernels::YarnRope mla_yarn_;  // used when hparams().rope_yarn
};

}  // namespace duet::runtime
