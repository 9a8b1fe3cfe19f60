#include "runtime/weight_source.h"

#include <cstring>

#include "core/error.h"
#include "graph/fuse_matmuls.h"
#include "kernels/kernels.h"

namespace duet::runtime {

void PlainWeightSource::bind_fused(const graph::Graph& g) {
    for (const graph::Node& n : g.nodes)
        if (n.kind == graph::OpKind::MATMUL && !graph::fused_parts(n.role).empty() &&
            !fused_.count({int(n.role), n.layer}))
            bind_fused_one(n.role, n.layer);
}

void PlainWeightSource::bind_fused_one(WeightRole role, int32_t layer) {
    Fused f;
    const auto parts = graph::fused_parts(role);
    const model::TensorRef& first = tensor(parts[0], layer);
    f.t = first;
    f.t.name = first.name + "+";
    f.t.rows = 0;
    bool in_place = true;
    const uint8_t* next = static_cast<const uint8_t*>(first.data);
    for (WeightRole p : parts) {
        const model::TensorRef& t = tensor(p, layer);
        DUET_CHECK(t.dtype == first.dtype && t.cols == first.cols, "fused {}: parts differ in dtype or width",
                   graph::weight_role_name(role));
        in_place = in_place && t.data == next && t.row_stride_bytes == first.row_stride_bytes;
        next = static_cast<const uint8_t*>(t.data) + t.n_bytes();
        f.t.rows += t.rows;
        if (const float* b = bias(p, layer)) f.bias.insert(f.bias.end(), b, b + t.rows);
    }
    if (in_place) {
        ++fused_in_place_;
    } else {
        // Concatenate once; the row stride of the copy is the first part's.
        f.owned.resize(size_t(f.t.rows) * first.row_stride_bytes);
        size_t at = 0;
        for (WeightRole p : parts) {
            const model::TensorRef& t = tensor(p, layer);
            for (int64_t r = 0; r < t.rows; ++r, at += first.row_stride_bytes)
                std::memcpy(&f.owned[at], static_cast<const uint8_t*>(t.data) + size_t(r) * t.row_stride_bytes,
                            first.row_stride_bytes);
        }
        f.t.data = f.owned.data();
        ++fused_copied_;
    }
    fused_.emplace(std::make_pair(int(role), layer), std::move(f));
}

const model::TensorRef& PlainWeightSource::tensor(WeightRole role, int32_t layer) const {
    if (!graph::fused_parts(role).empty()) {
        auto it = fused_.find({int(role), layer});
        DUET_CHECK(it != fused_.end(), "fused weight {} of layer {} was not bound", graph::weight_role_name(role), layer);
        return it->second.t;
    }
    return w_.at(role, layer);  // DUET_CHECKs the layer of a block role
}

const float* PlainWeightSource::bias(WeightRole role, int32_t layer) const {
    if (!graph::fused_parts(role).empty()) {
        auto it = fused_.find({int(role), layer});
        return it == fused_.end() || it->second.bias.empty() ? nullptr : it->second.bias.data();
    }
    if (layer < 0 || size_t(layer) >= w_.layers.size()) return nullptr;
    const model::TensorRef& b = w_.layers[size_t(layer)].bias_of(role);
    return b.present() ? b.f32() : nullptr;
}

WeightInfo PlainWeightSource::info(WeightRole role, int32_t layer) const {
    const model::TensorRef& t = tensor(role, layer);
    return WeightInfo{t.rows, t.cols, t.dtype, t.n_bytes()};
}

void PlainWeightSource::matmul(WeightRole role, int32_t layer, const float* x, int64_t m, int64_t x_stride, float* y,
                               int64_t y_stride, ThreadPool& pool) const {
    const model::TensorRef& t = tensor(role, layer);
    kernels::matmul(x, m, t.cols, x_stride, t.data, t.dtype, t.row_stride_bytes, t.rows, y, y_stride, pool);
}

void matmul_stack_plain(const model::TensorRef& stack, const StackRows* groups, int64_t n_groups, ThreadPool& pool) {
    std::vector<kernels::MatmulGroup> mg(static_cast<size_t>(n_groups));
    for (int64_t i = 0; i < n_groups; ++i) {
        const StackRows& g = groups[i];
        const model::TensorRef w = stack.expert(g.index);
        mg[size_t(i)] = kernels::MatmulGroup{g.x, g.m, g.x_stride, w.data, w.row_stride_bytes, g.y, g.y_stride};
    }
    kernels::matmul_grouped(mg.data(), n_groups, stack.cols, stack.dtype, stack.rows, 0, pool);
}

void PlainWeightSource::matmul_stack(WeightRole role, int32_t layer, const StackRows* groups, int64_t n_groups,
                                     ThreadPool& pool) const {
    matmul_stack_plain(tensor(role, layer), groups, n_groups, pool);
}

kernels::ActFormat PlainWeightSource::act_format(WeightRole role, int32_t layer) const {
    return kernels::act_format(tensor(role, layer).dtype);
}

void PlainWeightSource::matmul_quantized(WeightRole role, int32_t layer, const void* xq, kernels::ActFormat f,
                                         int64_t m, float* y, int64_t y_stride, ThreadPool& pool) const {
    const model::TensorRef& t = tensor(role, layer);
    kernels::matmul_quantized(xq, f, m, t.cols, t.data, t.dtype, t.row_stride_bytes, t.rows, y, y_stride, pool);
}

kernels::ActFormat WeightSource::act_format(WeightRole, int32_t) const { return kernels::ActFormat::F32; }

void WeightSource::matmul_quantized(WeightRole role, int32_t layer, const void* xq, kernels::ActFormat f, int64_t m,
                                    float* y, int64_t y_stride, ThreadPool& pool) const {
    DUET_CHECK(f == kernels::ActFormat::F32, "weight source: {} activations for {} of layer {}, which takes f32 rows",
               kernels::act_format_name(f), graph::weight_role_name(role), layer);
    const int64_t k = info(role, layer).k;
    matmul(role, layer, static_cast<const float*>(xq), m, k, y, y_stride, pool);
}

}  // namespace duet::runtime
