#include "runtime/weight_source.h"

#include "core/error.h"
#include "kernels/kernels.h"

namespace duet::runtime {

using sim::WeightRole;

const model::TensorRef& PlainWeightSource::tensor(WeightRole role, int32_t layer) const {
    if (role == WeightRole::LM_HEAD) return w_.output;
    DUET_CHECK(layer >= 0 && size_t(layer) < w_.layers.size(), "weight layer {} out of range", layer);
    const model::LayerWeights& l = w_.layers[size_t(layer)];
    switch (role) {
        case WeightRole::ATTN_Q: return l.wq;
        case WeightRole::ATTN_K: return l.wk;
        case WeightRole::ATTN_V: return l.wv;
        case WeightRole::ATTN_OUT: return l.wo;
        case WeightRole::FFN_GATE: return l.ffn_gate;
        case WeightRole::FFN_UP: return l.ffn_up;
        case WeightRole::FFN_DOWN: return l.ffn_down;
        default: break;
    }
    DUET_CHECK(false, "no weight for role {}", int(role));
    __builtin_unreachable();
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

}  // namespace duet::runtime
