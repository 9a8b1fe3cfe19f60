#pragma once
// One implementation of every kernel of kernels.h per instruction-set level. kernels.cpp picks
// one table at start-up (core/cpu_features.h isa_level(), which honours DUET_ISA); tests reach
// every table this CPU can run and compare it with the scalar reference table.
// Tables are immutable statics; calling through them is as thread-safe as the kernels.
#include "core/cpu_features.h"
#include "kernels/kernels.h"

namespace duet::kernels {

struct KernelTable {
    const char* name;  // "scalar", "avx2", "avx512"
    void (*matmul)(const float* x, int64_t m, int64_t k, int64_t x_stride, const void* w, DType wtype,
                   size_t w_row_stride_bytes, int64_t n, float* y, int64_t y_stride, ThreadPool& pool);
    void (*rmsnorm)(const float* x, const float* weight, float* y, int64_t n, float eps);
    void (*rope)(float* x, int64_t n_head, int64_t head_dim, int64_t n_rot, int64_t pos, float freq_base,
                 float freq_scale, const float* freq_factors, RopeOrder order);
    void (*softmax)(float* x, int64_t n);
    void (*swiglu)(const float* gate, const float* up, float* out, int64_t n);
    void (*attention)(const float* q, int64_t n_q, int64_t pos0, int64_t n_head, int64_t n_head_kv, int64_t head_dim,
                      const KvView& kv, float scale, float* out, ThreadPool& pool);
    void (*dequantize_row)(const void* src, DType type, float* dst, int64_t n);
    // matmul_blocked for f32 weights whose k-blocks (but a range's last) are whole multiples of 16
    // elements: one register tile runs over all k-blocks of its rows, switching row pointers at
    // block edges, so the result is bit-identical to matmul. first[r] is the first block of row
    // range r (first[n_ranges] = w.n_blocks). nullptr: the scalar reference. Only f32: its 256-
    // element k-blocks (1 KiB DRAM rows) made the per-block calls 0.66-0.70x of row-major, this
    // 0.73-0.75x; for f16/bf16 it measured slower than per-block calls (0.76-0.82x against
    // 0.86-1.07x: a tile then streams from every k-block at once), docs/performance.md.
    void (*matmul_blocked_f32)(const float* x, int64_t m, int64_t x_stride, const BlockedWeights& w,
                               const int64_t* first, int64_t n_ranges, float* y, int64_t y_stride,
                               ThreadPool& pool) = nullptr;
    // RMSNorm fused into the activation quantisation (kernels.h): the format this table's
    // matmul feeds `wtype` with, the fused norm + quantiser, and the matmul on its output.
    ActFormat (*act_format)(DType wtype) = nullptr;
    void (*rmsnorm_quantize)(const float* x, int64_t x_stride, const int64_t* rows, int64_t m, int64_t k,
                             const float* weight, float eps, ActFormat f, void* out, ThreadPool& pool) = nullptr;
    void (*matmul_quantized)(const void* xq, ActFormat f, int64_t m, int64_t k, const void* w, DType wtype,
                             size_t w_row_stride_bytes, int64_t n, float* y, int64_t y_stride,
                             ThreadPool& pool) = nullptr;
    // matmul_blocked for every weight dtype and split Q8_0 (BlockedWeights::scales) when every row
    // range has the k partition of the first and each k-block but the last is a multiple of 16
    // elements: each register tile either runs over all k-blocks of its range, switching row
    // pointers at block edges (f32, f16, bf16, q8_0, q4_0, q5_0), or takes one k-block after
    // another in memory order, carrying its vector accumulators between them (q4_k, q6_k, split
    // q8_0); either way the sums are matmul()'s in its order (bit-identical). x is quantised once
    // per call. nullptr: the scalar reference (blocked_impl.inc).
    void (*matmul_blocked_carry)(const float* x, int64_t m, int64_t x_stride, const BlockedWeights& w,
                                 const int64_t* first, int64_t n_ranges, float* y, int64_t y_stride,
                                 ThreadPool& pool) = nullptr;
    // matmul_grouped: a group of m rows, kMR < m <= grouped_gemv_rows(wtype), runs as matmul calls
    // of kMR (4) rows each, the decode GEMV's kernel, rather than one call at m (the GEMV-style
    // tiles or a packed GEMM that only pays for its pack from ~20 rows). nullptr, or 0 for a
    // dtype: never.
    int64_t (*grouped_gemv_rows)(DType wtype) = nullptr;
};

// The scalar reference (kernels/ref/): always available, the oracle of the tests.
const KernelTable& ref_table();
// The table of `level` when this build has it and this CPU can run it, else nullptr
// (ignores DUET_ISA, so tests can run every path the hardware supports).
const KernelTable* table_for(IsaLevel level);
// The index-th optimised table this CPU can run (avx2, avx512 without VNNI, avx512 with
// VNNI + BF16 + GFNI, in that order; table_for() picks one of the last two), nullptr past the end.
// For tests, which run every variant the hardware supports against the reference.
const KernelTable* optimised_table(int index);
// The table the public entry points use: the best level allowed by isa_level().
const KernelTable& active_table();

// Checks the arguments every matmul implementation shares; throws duet::Error naming the
// parameter, its value and what is allowed (e.g. k not a multiple of the weight block size).
void check_matmul_args(int64_t m, int64_t k, int64_t x_stride, DType wtype, size_t w_row_stride_bytes, int64_t n,
                       int64_t y_stride);

// matmul_blocked (kernels.h) with the micro-kernel of table t, so tests reach every ISA.
void matmul_blocked_with(const KernelTable& t, const float* x, int64_t m, int64_t k, int64_t x_stride,
                         const BlockedWeights& w, float* y, int64_t y_stride, ThreadPool& pool);
// matmul_grouped (kernels.h) with the matmul of table t, so tests reach every ISA.
void matmul_grouped_with(const KernelTable& t, const MatmulGroup* groups, int64_t n_groups, int64_t k, DType wtype,
                         int64_t n, int64_t n_block, ThreadPool& pool);
// Activation reuse inside one matmul_blocked call. While this thread's token is nonzero, an
// optimised matmul whose x, m, k and x_stride (and quantisation family) equal those of an
// earlier quantised matmul on this thread with the same token reuses its quantised x (one
// cached slice per slot, act_reuse_slot): the blocked driver sets a fresh token per thread chunk,
// over which x does not change, so each k-block's slice is quantised once, not once per block.
// Zero (every other caller): never reuse.
uint64_t& act_reuse_token();
// The cache slot of the next call's x slice while the token is set (the blocked driver passes the
// k-block's ordinal in its row range: distinct for the slices of one chunk up to 64 k-blocks).
int& act_reuse_slot();
// Checks that w's blocks tile [0, n) x [0, k) in row-range-major order (see WeightBlock);
// returns the number of row ranges.
int64_t check_blocked_weights(const BlockedWeights& w, int64_t k);

// The block of an activation format (1, 32, 256). rmsnorm_quantize and matmul_quantized of the
// table `name` whose matmul feeds weights with act_format(wtype) check k against it and f
// against that table's formats (duet::Error naming both).
using ActFormatFn = ActFormat (*)(DType wtype);
int64_t act_block(ActFormat f);
void check_rmsnorm_quantize_args(const char* name, ActFormatFn act_format, ActFormat f, int64_t m, int64_t k,
                                 int64_t x_stride);
void check_matmul_quantized_args(const char* name, ActFormatFn act_format, ActFormat f, DType wtype);

// Same for attention: n_head a positive multiple of n_head_kv, head_dim > 0, n_q >= 0,
// pos0 >= 0, block_tokens > 0, kv_type F32 or F16.
void check_attention_args(int64_t n_q, int64_t pos0, int64_t n_head, int64_t n_head_kv, int64_t head_dim,
                          const KvView& kv);

}  // namespace duet::kernels
