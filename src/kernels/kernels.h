#pragma once
// Host CPU kernels: the contract the engine codes against. Each entry point picks the best
// implementation for this CPU once (core/cpu_features.h: AVX-512, AVX2, scalar) and keeps
// the scalar reference in kernels/ref/ as the oracle the tests compare against.
//
// Per-ISA tables (scalar reference, AVX2, AVX-512) are in kernels/kernel_table.h; kernels/membw.h
// measures the memory bandwidth the decode GEMV is judged against.
//
// Conventions: raw pointers, element counts and strides; row-major; activations f32.
// A weight matrix W has n rows of k elements each, stored in `wtype` (ggml block layout
// for quantised types: each row is k / block_elems blocks); row r starts at
// w + r * w_row_stride_bytes. The engine calls these from one thread and passes the
// pool; kernels split their work over it.
#include <cstddef>
#include <cstdint>

#include "core/dtype.h"
#include "core/thread_pool.h"

namespace duet::kernels {

// y[i][j] = sum_l x[i][l] * W[j][l]  for i < m (tokens), j < n (output features).
// x: [m][k] with row stride x_stride (floats); y: [m][n] with row stride y_stride (floats).
// m == 1..few runs as GEMV (weights streamed once), larger m as blocked GEMM.
// Quantised weights are never dequantised as whole matrices: activations are quantised per
// block (q8) and dot products run on integers where the type allows it.
// Accuracy: f32/f16/bf16 weights give the exact product up to f32 summation order. For
// q8_0/q4_0/q5_0 the optimised paths quantise x in blocks of 32 (scale amax/127) and for q4_k/q6_k
// in ggml's Q8_K blocks of 256, so each x element moves by at most half its block's step:
// |y - y_exact| <= sum_l (step_l / 2) |w_l| (about 0.4 % of sum |x w| in the worst case, far
// less on average); the scalar path (DUET_ISA=scalar) dequantises and is exact up to rounding.
// Errors: throws duet::Error for an unsupported wtype, k not a multiple of its block size,
// strides smaller than the rows. Thread safety: concurrent calls must use different pools.
void matmul(const float* x, int64_t m, int64_t k, int64_t x_stride, const void* w, DType wtype,
            size_t w_row_stride_bytes, int64_t n, float* y, int64_t y_stride, ThreadPool& pool);

// A weight matrix stored as a grid of dense blocks — the PIM layout (layout/pim_layout.h) read
// through its block index. Block b holds rows [row0, row0 + rows) x elements [k0, k0 + kelems)
// of W, row-major with rows row_stride_bytes apart (k0 and kelems multiples of the dtype's block
// size: quantised blocks are kept whole). The blocks tile [0, n) x [0, k) exactly; the blocks of
// one row range are consecutive and in increasing k0 (the index's row-block-major order).
struct WeightBlock {
    const void* data = nullptr;
    int64_t row0 = 0, rows = 0, k0 = 0, kelems = 0;
    size_t row_stride_bytes = 0;
};
struct BlockedWeights {
    DType wtype = DType::F16;
    int64_t n = 0, k = 0;
    const WeightBlock* blocks = nullptr;
    int64_t n_blocks = 0;
    // Q8_0 split into int8 quants and their scales (the int8 PIM layout, config [pim] precision =
    // int8): with wtype Q8_0 and scales set, the blocks hold only the int8 quants (one byte per
    // element, k0 and kelems multiples of 32) and the f16 scale of quant block b (elements
    // [32 b, 32 b + 32)) of row r is scales[r * scale_stride + b]. The numbers are Q8_0's.
    const uint16_t* scales = nullptr;  // [n][scale_stride], scale_stride >= k / 32
    int64_t scale_stride = 0;
};

// y = x W^T as matmul(), reading W in place block by block — no gather back to row-major.
// Threads take whole row ranges. For m <= 4 (decode) on the SIMD tables, and for split Q8_0 at
// any m, each register tile of matmul()'s micro-kernel runs over all k-blocks of its range,
// switching pointers at block edges or carrying its vector accumulators from block to block (the
// k-blocks of every row range must share one k partition, each but the last a multiple of 16
// elements): the result is bit-identical to matmul() with the same table, split Q8_0 to
// matmul() of the Q8_0 rows. Otherwise the micro-kernel runs on each block and the k-blocks' partial sums are added in
// increasing k0: the products are matmul()'s (activation blocks are quantised alike, as k0 is a
// multiple of the quantisation block), only the order of the f32 summation differs (identical
// when a row range is one block). The scalar table computes split Q8_0 as its matmul() does on
// the Q8_0 rows (dequantised weights, f64 sums): identical too. Throws duet::Error naming the
// block that does not tile the matrix, and for what matmul() rejects.
void matmul_blocked(const float* x, int64_t m, int64_t k, int64_t x_stride, const BlockedWeights& w, float* y,
                    int64_t y_stride, ThreadPool& pool);

// One product of a group for matmul_grouped: y = x W^T with x [m][k] (rows x_stride floats
// apart), W n rows of w_row_stride_bytes, y [m][n] (rows y_stride floats apart).
struct MatmulGroup {
    const float* x = nullptr;
    int64_t m = 0, x_stride = 0;
    const void* w = nullptr;
    size_t w_row_stride_bytes = 0;
    float* y = nullptr;
    int64_t y_stride = 0;
};
// matmul() of every group (one k, n and wtype for all: a MoE layer's experts, each on the rows
// routed to it) as one parallel section: the work items are (group, block of n_block output
// columns; the last block of a group takes the remainder), taken by the threads from a shared
// counter and each run whole on one thread with matmul()'s kernel for the group's m. So a group of
// a few rows does not pay a parallel section of its own and both threads stay busy on it; each
// thread quantises a group's x once for all the items of it that it takes. Each weight byte is
// read once. n_block <= 0 picks a block (256 columns, fewer when there are few items). The
// results are matmul()'s of each group with the same table up to the f32 summation order of a
// column block cut inside a register tile (none when n_block is a multiple of 16). Throws what
// matmul() throws for a group.
void matmul_grouped(const MatmulGroup* groups, int64_t n_groups, int64_t k, DType wtype, int64_t n, int64_t n_block,
                    ThreadPool& pool);

// y = x / sqrt(mean(x^2) + eps) * weight, over n elements. y may alias x.
void rmsnorm(const float* x, const float* weight, float* y, int64_t n, float eps);

// ---- RMSNorm fused into the next matmul's input quantisation (graph/fuse_rmsnorm_matmul.h) ----
// matmul() quantises x inside the call for quantised weights. The fused path splits that: one
// kernel normalises each row and writes it straight in the format the matmul quantises to (no
// f32 normed row in memory), and matmul_quantized() takes those activations. Bit-identical to
// rmsnorm() then matmul() on the same table: the same per-element normalisation and the same
// per-block quantiser feed the same integer kernels.
enum class ActFormat : uint8_t {
    F32,    // f32 rows [m][k]: float weights on every table, every type on the scalar reference
            // (it dequantises the weights and never quantises x)
    Q8_32,  // 32-value blocks (q8_0, q4_0, q5_0 on the SIMD tables): int8 quants [m][k], then f32
            // scales amax/127 [m][k/32], then int32 sums of each block's quants [m][k/32]
    Q8_K,   // ggml's Q8_K blocks of 256 (q4_k, q6_k on the SIMD tables): quant::BlockQ8_K [m][k/256]
};
const char* act_format_name(ActFormat f);  // "f32", "q8_32", "q8_k"
// The format the active table's matmul() feeds weights of `wtype` with.
ActFormat act_format(DType wtype);
// Bytes of m rows of k activations in format f (k a multiple of the format's block: 32, 256).
size_t act_bytes(ActFormat f, int64_t m, int64_t k);
// out = the rows rmsnorm(x_r) * weight in format f, for r = rows[i] (nullptr: r = i), i < m;
// row r of x starts at x + r * x_stride; out holds act_bytes(f, m, k) bytes. Throws duet::Error
// when this table's matmul takes no weight type in f, or k is not a multiple of f's block.
void rmsnorm_quantize(const float* x, int64_t x_stride, const int64_t* rows, int64_t m, int64_t k,
                      const float* weight, float eps, ActFormat f, void* out, ThreadPool& pool);
// y = x W^T as matmul(), with x given as rmsnorm_quantize's output (format f, m rows of k):
// bit-identical to matmul() on the f32 rows that output came from. Throws duet::Error when f
// is not act_format(wtype) of this table (naming both), and for what matmul() rejects.
void matmul_quantized(const void* xq, ActFormat f, int64_t m, int64_t k, const void* w, DType wtype,
                      size_t w_row_stride_bytes, int64_t n, float* y, int64_t y_stride, ThreadPool& pool);

enum class RopeOrder {
    NORM,  // rotate adjacent pairs (x[2i], x[2i+1]) — ggml's mode 0, Llama GGUF files
    NEOX,  // rotate halves (x[i], x[i + n_rot/2]) — mode 2, Qwen2
};
// Rotates the first n_rot dims (n_rot even, <= head_dim, else duet::Error) of each of n_head heads of one token at
// position `pos`, in place: x is [n_head][head_dim]. theta_i = pos * freq_base^(-2i/n_rot) / freq_factors[i]
// (freq_factors may be null = all 1; Llama-3.1's rope_freqs tensor), times freq_scale.
void rope(float* x, int64_t n_head, int64_t head_dim, int64_t n_rot, int64_t pos, float freq_base, float freq_scale,
          const float* freq_factors, RopeOrder order);

// YaRN RoPE (DeepSeek-V2/V3's files), adjacent pairs, in place: head h's first n_rot values at
// x + h * head_stride. Pair i (theta_i = freq_base^(-2i/n_rot)) turns by
// pos * theta_i * (freq_scale * (1 - r_i) + r_i), r_i = 1 - clamp((i - corr_low) / (corr_high -
// corr_low), 0, 1): the high frequencies extrapolate, the low ones interpolate; cos and sin are
// multiplied by `magnitude` (ggml's rope_yarn with ext_factor 1).
struct YarnRope {
    float freq_base = 10000.0f, freq_scale = 1.0f;
    float corr_low = 0.0f, corr_high = 0.0f;  // pair indices (ggml's corr_dims)
    float magnitude = 1.0f;
};
// freq_scale = 1 / factor; the correction dimensions are where a frequency turns beta_fast and
// beta_slow times over orig_ctx positions (floor / ceil, clamped to 0 .. n_rot - 1).
YarnRope yarn_rope(int64_t n_rot, float freq_base, float factor, int64_t orig_ctx, float beta_fast, float beta_slow,
                   float magnitude);
void rope_yarn(float* x, int64_t n_head, int64_t head_stride, int64_t n_rot, int64_t pos, const YarnRope& y);

// In place softmax over n elements.
void softmax(float* x, int64_t n);

// out[i] = silu(gate[i]) * up[i]. out may alias gate.
void swiglu(const float* gate, const float* up, float* out, int64_t n);

// KV cache as a block table: K and V for token t of a sequence live in block
// blocks[t / block_tokens], row t % block_tokens; each row is [n_head_kv][head_dim] in kv_type
// (F32 or F16). k_blocks[b] / v_blocks[b] point at block b's first row.
struct KvView {
    const void* const* k_blocks;
    const void* const* v_blocks;
    int64_t block_tokens;
    DType kv_type;
};

// Causal grouped-query attention for n_q query tokens of one sequence whose positions are
// pos0 .. pos0 + n_q - 1; keys/values for positions 0 .. pos0 + n_q - 1 are already in kv.
// q: [n_q][n_head][head_dim] (RoPE applied); out: [n_q][n_head][head_dim].
// Head h reads KV head h / (n_head / n_head_kv). scale is usually 1/sqrt(head_dim).
// Work is split over the pool by (query token, KV head); throws duet::Error on shapes that do
// not fit (kernel_table.h check_attention_args).
void attention(const float* q, int64_t n_q, int64_t pos0, int64_t n_head, int64_t n_head_kv, int64_t head_dim,
               const KvView& kv, float scale, float* out, ThreadPool& pool);

// Multi-head latent attention in the absorbed form (DeepSeek-V2/V3; graph/mla_builder.h): n_q query
// tokens of one sequence at positions pos0 .. pos0 + n_q - 1 against its cached rows 0 .. pos0 +
// n_q - 1, each [kv_lora_rank latent | rope_dim RoPE key], f32, back to back in `kv`. Query token i,
// head h: score_u = (lat[i][h] . latent_u + pe[i][h] . key_u) * scale, causal softmax over u, then
// out[i][h] = sum_u p_u latent_u (kv_lora_rank values; the caller up-projects them per head).
struct MlaQuery {
    const float* lat;        // [n_q][n_head][kv_lora_rank], rows lat_stride floats apart
    int64_t lat_stride;
    const float* pe;         // head h of token i: rope_dim floats at pe + i * pe_stride + h * pe_head_stride
    int64_t pe_stride, pe_head_stride;
    int64_t n_head, kv_lora_rank, rope_dim;
};
// out rows out_stride floats apart. The (query token, head) pairs of a block of tokens are the rows
// of two f32 matmuls (scores, then the weighted latent), each split over the pool; throws
// duet::Error on shapes that do not fit.
void mla_attention(const MlaQuery& q, int64_t n_q, int64_t pos0, const float* kv, float scale, float* out,
                   int64_t out_stride, ThreadPool& pool);

// Converts one row of n elements of `type` to f32 (used for embedding lookups).
void dequantize_row(const void* src, DType type, float* dst, int64_t n);

// The implementation chosen for this CPU, for logs ("avx512", "avx2", "scalar").
const char* kernel_isa();

}  // namespace duet::kernels
