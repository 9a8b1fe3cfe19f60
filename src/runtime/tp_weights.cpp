#include "runtime/tp_weights.h"

#include <unistd.h>

#include <algorithm>

#include "core/error.h"

namespace duet::runtime {
namespace {

// Elements [begin, begin + count) of an f32 vector (a bias; bound as one row of cols).
model::TensorRef vec_slice(const model::TensorRef& t, int64_t begin, int64_t count) {
    if (!t.present()) return t;
    model::TensorRef s = t;
    s.data = t.f32() + begin;
    s.cols = count;
    s.row_stride_bytes = size_t(count) * sizeof(float);
    return s;
}

// Rows [begin, begin + count) of a matrix.
model::TensorRef row_slice(const model::TensorRef& t, int64_t begin, int64_t count) {
    if (!t.present()) return t;
    model::TensorRef s = t;
    s.data = static_cast<const uint8_t*>(t.data) + size_t(begin) * t.row_stride_bytes;
    s.rows = count;
    return s;
}

// Columns [begin, begin + count) of a matrix: same rows and row stride, data moved by the
// bytes of `begin` elements. Both ends must fall on a block of a quantised type.
model::TensorRef col_slice(const model::TensorRef& t, int64_t begin, int64_t count, int tp, const char* what) {
    const int64_t block = dtype_info(t.dtype).block_elems;
    if (begin % block != 0 || count % block != 0)
        fail("--tp = {}: the {} columns [{}, {}) of {} cut its {}-element {} blocks (allowed: a --tp whose slices are "
             "whole blocks, or an unquantised file)",
             tp, what, begin, begin + count, t.name, block, dtype_name(t.dtype));
    model::TensorRef s = t;
    s.data = static_cast<const uint8_t*>(t.data) + row_bytes(t.dtype, begin);
    s.cols = count;
    return s;
}

// Bytes of one row of the slice (a column slice reads only its columns), and its row count
// (vectors are bound as one row).
uint64_t slice_row_bytes(const model::TensorRef& t) { return row_bytes(t.dtype, t.cols); }
int64_t slice_rows(const model::TensorRef& t) { return std::max<int64_t>(t.rows, 1); }

uint64_t slice_bytes(const model::TensorRef& t) {
    return t.present() ? uint64_t(slice_rows(t)) * slice_row_bytes(t) : 0;
}

// Every distinct tensor of w (the tied output once).
template <typename F>
void for_each_tensor(const model::Weights& w, F&& f) {
    for (const model::TensorRef* t : {&w.token_embd, &w.output_norm, &w.rope_freqs}) f(*t);
    if (w.output.data != w.token_embd.data) f(w.output);
    for (const model::LayerWeights& l : w.layers)
        for (const model::TensorRef* t : {&l.attn_norm, &l.wq, &l.wk, &l.wv, &l.wo, &l.bq, &l.bk, &l.bv, &l.ffn_norm,
                                          &l.ffn_gate, &l.ffn_up, &l.ffn_down})
            f(*t);
}

// Reads one byte of every page of [p, p + n).
uint64_t touch(const uint8_t* p, uint64_t n, uint64_t page) {
    volatile uint8_t sink = 0;
    for (uint64_t at = 0; at < n; at += page) sink = sink + p[at];
    if (n > 0) sink = sink + p[n - 1];
    return n;
}

}  // namespace

int64_t tp_ff_align(const model::Weights& w) {
    int64_t a = 1;
    for (const model::LayerWeights& l : w.layers) a = std::max<int64_t>(a, dtype_info(l.ffn_down.dtype).block_elems);
    return a;
}

model::Weights shard_weights(const model::Weights& full, const model::Hparams& hp, const graph::TpShard& sh) {
    model::Weights w = full;
    if (sh.tp == 1) return w;
    const int64_t hd = hp.head_dim;
    const int64_t q0 = sh.q_heads.begin * hd, qn = sh.q_heads.count * hd;
    const int64_t k0 = sh.kv_heads.begin * hd, kn = sh.kv_heads.count * hd;
    for (model::LayerWeights& l : w.layers) {
        l.wq = row_slice(l.wq, q0, qn);
        l.bq = vec_slice(l.bq, q0, qn);
        l.wk = row_slice(l.wk, k0, kn);
        l.bk = vec_slice(l.bk, k0, kn);
        l.wv = row_slice(l.wv, k0, kn);
        l.bv = vec_slice(l.bv, k0, kn);
        l.wo = col_slice(l.wo, q0, qn, sh.tp, "attention-output");
        l.ffn_gate = row_slice(l.ffn_gate, sh.ff.begin, sh.ff.count);
        l.ffn_up = row_slice(l.ffn_up, sh.ff.begin, sh.ff.count);
        l.ffn_down = col_slice(l.ffn_down, sh.ff.begin, sh.ff.count, sh.tp, "FFN-down");
    }
    return w;
}

uint64_t shard_bytes(const model::Weights& w) {
    uint64_t b = 0;
    for_each_tensor(w, [&](const model::TensorRef& t) { b += slice_bytes(t); });
    return b;
}

uint64_t prefault_slices(const model::Weights& w) {
    const uint64_t page = uint64_t(::sysconf(_SC_PAGESIZE));
    uint64_t b = 0;
    for_each_tensor(w, [&](const model::TensorRef& t) {
        if (!t.present()) return;
        const auto* base = static_cast<const uint8_t*>(t.data);
        const uint64_t rb = slice_row_bytes(t);
        if (rb == t.row_stride_bytes) {  // whole rows: one range
            b += touch(base, uint64_t(slice_rows(t)) * rb, page);
            return;
        }
        for (int64_t r = 0; r < t.rows; ++r) b += touch(base + size_t(r) * t.row_stride_bytes, rb, page);
    });
    return b;
}

}  // namespace duet::runtime
