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

// Rows [begin, begin + count) of a matrix (of every matrix of a stack: the stride between
// them stays the file's).
model::TensorRef row_slice(const model::TensorRef& t, int64_t begin, int64_t count) {
    if (!t.present()) return t;
    model::TensorRef s = t;
    s.stack_stride_bytes = t.stack_stride();
    s.data = static_cast<const uint8_t*>(t.data) + size_t(begin) * t.row_stride_bytes;
    s.rows = count;
    return s;
}

// Matrices [begin, begin + count) of a stack.
model::TensorRef stack_slice(const model::TensorRef& t, int64_t begin, int64_t count) {
    if (!t.present()) return t;
    model::TensorRef s = t;
    s.stack_stride_bytes = t.stack_stride();
    s.data = static_cast<const uint8_t*>(t.data) + size_t(begin) * t.stack_stride();
    s.n_stack = count;
    return s;
}

// Columns [begin, begin + count) of a matrix: same rows and row stride, data moved by the
// bytes of `begin` elements. Both ends must fall on a block of a quantised type.
model::TensorRef col_slice(const model::TensorRef& t, int64_t begin, int64_t count, int tp, const char* what) {
    if (!t.present()) return t;
    const int64_t block = dtype_info(t.dtype).block_elems;
    if (begin % block != 0 || count % block != 0)
        fail("--tp = {}: the {} columns [{}, {}) of {} cut its {}-element {} blocks (allowed: a --tp whose slices are "
             "whole blocks, or an unquantised file)",
             tp, what, begin, begin + count, t.name, block, dtype_name(t.dtype));
    model::TensorRef s = t;
    s.stack_stride_bytes = t.stack_stride();
    s.data = static_cast<const uint8_t*>(t.data) + row_bytes(t.dtype, begin);
    s.cols = count;
    return s;
}

// Bytes of one row of the slice (a column slice reads only its columns), and its row count
// (vectors are bound as one row).
uint64_t slice_row_bytes(const model::TensorRef& t) { return row_bytes(t.dtype, t.cols); }
int64_t slice_rows(const model::TensorRef& t) { return std::max<int64_t>(t.rows, 1); }

uint64_t slice_bytes(const model::TensorRef& t) {
    return t.present() ? uint64_t(t.n_stack) * uint64_t(slice_rows(t)) * slice_row_bytes(t) : 0;
}

// Reads one byte of every page of [p, p + n).
uint64_t touch(const uint8_t* p, uint64_t n, uint64_t page) {
    volatile uint8_t sink = 0;
    for (uint64_t at = 0; at < n; at += page) sink = sink + p[at];
    if (n > 0) sink = sink + p[n - 1];
    return n;
}

// A row-parallel slice along an FFN: the rows that split their columns by N_FF, N_FF_EXP or
// N_FF_SHEXP (the dense, routed-expert and shared-expert down projections).
bool ff_columns(const graph::TensorSpec& t) {
    const graph::Dim d = graph::tp_split_dim(t);
    return t.tp == graph::TpSplit::COLS &&
           (d == graph::Dim::N_FF || d == graph::Dim::N_FF_EXP || d == graph::Dim::N_FF_SHEXP);
}

// Reads every page of the rows of one matrix (the slice's columns of each row).
uint64_t touch_matrix(const model::TensorRef& t, const uint8_t* base, uint64_t page) {
    const uint64_t rb = slice_row_bytes(t);
    if (rb == t.row_stride_bytes) return touch(base, uint64_t(slice_rows(t)) * rb, page);  // whole rows: one range
    uint64_t b = 0;
    for (int64_t r = 0; r < t.rows; ++r) b += touch(base + size_t(r) * t.row_stride_bytes, rb, page);
    return b;
}

}  // namespace

int64_t tp_ff_align(const model::Weights& w) {
    int64_t a = 1;
    for (const model::RoleTensors& l : w.layers)
        for (const graph::TensorSpec& t : graph::tensor_catalogue())
            if (t.binding == graph::Binding::BLOCK && t.part == graph::Part::WEIGHT && ff_columns(t) &&
                l[t.role].present())
                a = std::max<int64_t>(a, dtype_info(l[t.role].dtype).block_elems);
    return a;
}

model::Weights shard_weights(const model::Weights& full, const model::Hparams& hp, const graph::TpShard& sh) {
    model::Weights w = full;
    if (sh.tp == 1) return w;
    const graph::ModelShape shape = model::model_shape(hp);
    for (model::RoleTensors& l : w.layers) {
        for (const graph::TensorSpec& t : graph::tensor_catalogue()) {
            if (t.binding != graph::Binding::BLOCK || t.tp == graph::TpSplit::REPLICATED || t.kind == graph::WeightKind::FUSED)
                continue;
            const graph::Range r = graph::tp_range(graph::tp_split_dim(t), sh, shape);
            model::TensorRef& ref = t.part == graph::Part::WEIGHT ? l[t.role] : l.bias_of(t.role);
            if (t.kind == graph::WeightKind::VECTOR)
                ref = vec_slice(ref, r.begin, r.count);
            else if (t.tp == graph::TpSplit::STACK)
                ref = stack_slice(ref, r.begin, r.count);
            else if (t.tp == graph::TpSplit::ROWS)
                ref = row_slice(ref, r.begin, r.count);
            else
                ref = col_slice(ref, r.begin, r.count, sh.tp, t.title ? t.title : t.name);
        }
    }
    return w;
}

uint64_t shard_bytes(const model::Weights& w) {
    uint64_t b = 0;
    w.for_each([&](const model::TensorRef& t) { b += slice_bytes(t); });
    return b;
}

uint64_t prefault_slices(const model::Weights& w) {
    const uint64_t page = uint64_t(::sysconf(_SC_PAGESIZE));
    uint64_t b = 0;
    w.for_each([&](const model::TensorRef& t) {
        for (int64_t e = 0; e < t.n_stack; ++e)
            b += touch_matrix(t, static_cast<const uint8_t*>(t.data) + size_t(e) * t.stack_stride(), page);
    });
    return b;
}

}  // namespace duet::runtime
