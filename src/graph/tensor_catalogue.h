#pragma once
// The tensor catalogue: one row per weight tensor a model family may have, the only place a
// block's matrices are listed (llama.cpp keeps the same kind of table, LLM_TENSOR_NAMES).
// Everything that needs "the weights of a model" walks these rows instead of naming them:
// weight binding and parameter counts (model/weights.h, model/hparams.h), the synthetic
// writer (model/synthetic_writer.h), the weight sources (runtime/weight_source.h), tensor-
// parallel slicing (runtime/tp_weights.h, graph/shard_tensor_parallel.h), the sibling-matmul
// fusion (graph/fuse_matmuls.h) and the role names of reports (graph/op_types.h).
//
// A row is one tensor: a weight role (graph/op_types.h) and its part (the weight itself, or
// the f32 bias of a matrix role). Columns:
//   gguf      its name in a GGUF file; "%d" stands for the block index in BLOCK rows
//   binding   INPUT: read before the blocks (pipeline stage 0); SHARED: read by every block
//             (every stage); BLOCK: one per layer; OUTPUT: read after the blocks (last stage)
//   kind      MATRIX: a matmul weight (any matmul dtype); TABLE: rows gathered by token id
//             (matmul dtypes too); VECTOR: f32 (norm weights, biases, rope factors); FUSED: no
//             tensor of its own, the rows of its parts stacked (built by a graph pass)
//   rows/cols the shape as symbols of the hyperparameters (Dim): rows = ggml ne1 = output
//             features, cols = ne0 = input features (contiguous); a VECTOR has rows ONE
//   stack     ggml ne2: ONE, or the number of experts for a per-expert stack (MoE)
//   when      the model has the tensor: ALWAYS, or only with a hyperparameter flag (a
//             condition may also depend on the block: present() takes the layer)
//   tp        how tensor parallelism splits it: REPLICATED; ROWS (column-parallel: each rank
//             its range of output features; a bias follows its matrix's rows); COLS (row-
//             parallel: each rank its range of input features, the products are partial sums
//             combined by a collective); STACK (each rank its range of the stack: latent
//             attention's per-head W_UK / W_UV). A per-expert stack splits every expert alike.
//             The range follows the split Dim (graph/parallel.h: Q_DIM, O_DIM, KV_B and N_HEAD
//             by query heads, KV_DIM by KV heads, N_FF / N_FF_EXP / N_FF_SHEXP by the dense,
//             routed-expert and shared-expert FFN ranges). The router, the low-rank
//             projections of latent attention and their norms are REPLICATED: every rank
//             routes alike and holds the whole latent KV row.
//   fused     the fused role whose matrix stacks this one (ATTN_QKV, FFN_GATE_UP), in row order
//   residual  the matrix writes into the residual stream (attention output, FFN down): its
//             synthetic initialisation is scaled down by 1/sqrt(2 n_layer)
//   q4km      llama.cpp's Q4_K_M mix for the tensor (LLAMA_FTYPE_MOSTLY_Q4_K_M in
//             llama_tensor_get_type): BASE; MORE_BITS_LAYERS (Q6_K in its use_more_bits
//             layers: attn_v, ffn_down); Q6_K (always: output.weight)
//   expert    NONE, ROUTED (one of the router's experts; stack = N_EXPERT), SHARED (the
//             always-on shared expert of a MoE layer)
//   falls_back_to  when `when` does not hold, the role reads this role's tensor (the tied
//             lm-head reads the embedding table)
//   title     how error messages name the tensor (the TP slicing's "attention-output columns")
// Row order is file order: the synthetic writer emits INPUT and SHARED rows, then each block's
// rows, then OUTPUT rows, so Q, K, V (and gate, up) lie back to back and fuse in place.
//
// Adding a family: its new roles go into graph/op_types.h and their rows here (new Dims and
// When conditions in dim_value / present), then its builder (docs/architectures.md).
// Thread safety: immutable tables, pure functions.
#include <cstdint>
#include <span>
#include <string>

#include "graph/model_shape.h"
#include "graph/op_types.h"
#include "graph/parallel.h"

namespace duet::graph {

enum class Part : uint8_t { WEIGHT, BIAS };
enum class Binding : uint8_t { INPUT, SHARED, BLOCK, OUTPUT };
enum class WeightKind : uint8_t { MATRIX, TABLE, VECTOR, FUSED };
// Symbols of the hyperparameters a shape is written in (dim_value gives the number).
enum class Dim : uint8_t {
    ONE,
    N_VOCAB,
    N_EMBD,
    Q_DIM,     // n_head * head_dim
    KV_DIM,    // n_head_kv * head_dim
    N_FF,
    ROT_HALF,  // n_rot / 2 (rope frequency factors)
    SUM_OF_PARTS,  // FUSED rows: the sum of the parts' rows
    // Mixture-of-Experts and latent attention (graph/model_shape.h)
    HEAD_DIM,      // head_dim
    N_HEAD,        // n_head (the stack of a per-head matrix)
    N_EXPERT,      // n_expert (the stack of a per-expert matrix)
    N_FF_EXP,      // one routed expert's width
    N_FF_SHEXP,    // the shared experts' width
    Q_LORA,        // q_lora_rank
    KV_LORA,       // kv_lora_rank
    KV_A,          // kv_lora_rank + qk_rope_head_dim (the latent and the shared RoPE key)
    QK_NOPE,       // qk_nope_head_dim
    V_HEAD,        // v_head_dim
    MLA_OUT,       // n_head * v_head_dim (the attention output projection's input)
    O_DIM,         // the attention output projection's input: MLA_OUT with latent attention, else Q_DIM
    KV_B,          // n_head * (qk_nope_head_dim + v_head_dim) (the unsplit W_kv_b's rows)
};
// DENSE_FFN: the layer has the dense FFN (every layer of a dense model; the leading dense layers
// of a Mixture-of-Experts one); MOE: the layer has experts (ModelShape::moe_layer); MOE_SHEXP:
// an expert layer with shared experts (n_ff_shexp > 0); MOE_SHEXP_GATE: one whose shared expert
// is gated (qwen2moe); MOE_PROBS_BIAS: an expert layer whose router has a selection bias
// (exp_probs_b); QK_NORM: Qwen3's per-head q/k norms.
// Attention: Q_FULL: one n_embd -> n_head * head_dim query matrix (every model but latent attention
// with a low-rank query); KV_DENSE: separate K and V projections (every model but latent
// attention); MLA: latent attention; MLA_Q_LORA: latent attention with q_lora_rank > 0;
// MLA_KV_SPLIT / MLA_KV_B: W_kv_b stored as attn_k_b + attn_v_b (newer llama.cpp) / as attn_kv_b.
enum class When : uint8_t {
    ALWAYS,
    QKV_BIAS,
    UNTIED_OUTPUT,
    ROPE_FREQS,
    DENSE_FFN,
    MOE,
    MOE_SHEXP,
    MOE_SHEXP_GATE,
    QK_NORM,
    MOE_PROBS_BIAS,
    Q_FULL,
    KV_DENSE,
    MLA,
    MLA_Q_LORA,
    MLA_KV_SPLIT,
    MLA_KV_B,
};
enum class TpSplit : uint8_t { REPLICATED, ROWS, COLS, STACK };
enum class Q4kmMix : uint8_t { BASE, MORE_BITS_LAYERS, Q6_K };
enum class Expert : uint8_t { NONE, ROUTED, SHARED };

struct TensorSpec {
    WeightRole role;
    Part part;
    const char* name;  // the role's name in reports and traces (WEIGHT rows; BIAS rows repeat it)
    const char* gguf;  // nullptr for FUSED rows
    Binding binding;
    WeightKind kind;
    Dim rows, cols;
    Dim stack = Dim::ONE;
    When when = When::ALWAYS;
    TpSplit tp = TpSplit::REPLICATED;
    WeightRole fused = WeightRole::NONE;
    bool residual = false;
    Q4kmMix q4km = Q4kmMix::BASE;
    Expert expert = Expert::NONE;
    WeightRole falls_back_to = WeightRole::NONE;
    const char* title = nullptr;  // how messages name a split matrix ("attention-output"); nullptr: `name`
    bool keep_f32 = false;
};

// Every row, in file order.
std::span<const TensorSpec> tensor_catalogue();

// The WEIGHT row of `role` / its BIAS row (nullptr when the role has no bias). DUET_CHECKs
// that the role has a row (every role but NONE has one).
const TensorSpec& weight_spec(WeightRole role);
const TensorSpec* bias_spec(WeightRole role);

// The number a Dim stands for in `s` (SUM_OF_PARTS is resolved by spec_rows).
int64_t dim_value(Dim d, const ModelShape& s);
// Rows and columns of the spec's tensor in `s` (FUSED: the parts' rows summed).
int64_t spec_rows(const TensorSpec& t, const ModelShape& s);
int64_t spec_cols(const TensorSpec& t, const ModelShape& s);
// Elements of the tensor (rows * cols * stack; one layer for BLOCK rows).
int64_t spec_elems(const TensorSpec& t, const ModelShape& s);
// The model `s` has this tensor in block `layer` (-1 for the rows outside the blocks): its
// `when` holds. A condition may depend on the layer (a family whose first blocks are dense
// and the others Mixture-of-Experts adds one). FUSED rows are never in a file: false.
bool present(const TensorSpec& t, const ModelShape& s, int64_t layer = -1);
// The GGUF name of the tensor in block `layer` (ignored outside BLOCK rows).
std::string gguf_name(const TensorSpec& t, int64_t layer);

// Parameters in a model's weights: every present tensor (BLOCK rows once per layer that has them).
int64_t count_params(const ModelShape& s);

// The parts of a fused role in row order (empty for a role that is not fused).
std::span<const WeightRole> fused_parts(WeightRole fused);
// The fused role `role` is a part of (NONE when it is not a part of one).
WeightRole fused_role_of(WeightRole role);

// The Dim tensor parallelism splits in `t`: ROWS its rows (a bias vector: its elements, the
// rows of its matrix), COLS its columns, STACK its stack; REPLICATED rows: their cols (never
// split).
Dim tp_split_dim(const TensorSpec& t);
// The range of a split Dim that rank sh.rank holds (Q_DIM, O_DIM, MLA_OUT, KV_B: its query
// heads' features; N_HEAD: its query heads; KV_DIM: its KV heads' features; N_FF, N_FF_EXP,
// N_FF_SHEXP: its FFN ranges); any other Dim is not split: [0, dim_value).
Range tp_range(Dim d, const TpShard& sh, const ModelShape& full);

// The FFN's input projections (the parts of FFN_GATE_UP, or the fused matrix itself): the
// matrices read right after attention, which an MLP prefetch warms during it.
bool ffn_input_matmul(WeightRole role);

// Number of WeightRole values (for tables indexed by role).
constexpr int kWeightRoleCount = int(WeightRole::FFN_EXP_PROBS_B) + 1;

}  // namespace duet::graph
