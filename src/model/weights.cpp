#include "model/weights.h"

#include <fmt/format.h>

#include "core/error.h"
#include "format/gguf.h"
#include "model/nextn_tensors.h"

namespace duet::model {
namespace {

std::string shape_string(const std::vector<int64_t>& s) {
    std::string out = "[";
    for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
    return out + "]";
}

class Binder {
public:
    Binder(const format::GgufFile& f) : f_(f) {}

    // ne0 = cols (contiguous), ne1 = rows, ne2 = stack; rows == 0 means a vector of `cols` elements.
    // Trailing dimensions of 1 are dropped on both sides (a one-row matrix may be stored 1-D).
    TensorRef bind(const std::string& name, int64_t cols, int64_t rows, int64_t stack, bool matmul) {
        const format::GgufTensorInfo* t = f_.find_tensor(name);
        if (!t) fail("{}: tensor '{}' is missing", f_.path(), name);
        std::vector<int64_t> s = t->shape;
        while (s.size() > 1 && s.back() == 1) s.pop_back();
        std::vector<int64_t> want = {cols, rows ? rows : 1, stack};
        while (want.size() > 1 && want.back() == 1) want.pop_back();
        if (s != want)
            fail("{}: tensor '{}' has shape {} but the hparams need {} (ggml order)", f_.path(), name,
                 shape_string(t->shape), shape_string(want));
        if (matmul ? !is_matmul_weight_dtype(t->dtype) : t->dtype != DType::F32)
            fail("{}: tensor '{}' has dtype {} (allowed: {})", f_.path(), name, dtype_name(t->dtype),
                 matmul ? matmul_weight_dtype_names() : "f32");
        TensorRef r;
        r.data = t->data;
        r.dtype = t->dtype;
        r.rows = rows ? rows : 1;
        r.cols = cols;
        r.row_stride_bytes = row_bytes(t->dtype, cols);
        r.name = name;
        r.n_stack = stack;
        return r;
    }

private:
    const format::GgufFile& f_;
};

}  // namespace

TensorRef TensorRef::expert(int64_t e) const {
    DUET_CHECK(e >= 0 && e < n_stack, "tensor '{}': expert {} out of range (stack of {})", name, e, n_stack);
    TensorRef r = *this;
    r.data = static_cast<const uint8_t*>(data) + size_t(e) * stack_stride();
    r.n_stack = 1;
    r.stack_stride_bytes = 0;
    return r;
}

const TensorRef& Weights::at(graph::WeightRole r, int32_t layer) const {
    if (graph::weight_spec(r).binding != graph::Binding::BLOCK) return global[r];
    DUET_CHECK(layer >= 0 && size_t(layer) < layers.size(), "weight layer {} out of range", layer);
    return layers[size_t(layer)][r];
}

DType Weights::matrix_dtype() const {
    for (const RoleTensors& l : layers)
        for (const graph::TensorSpec& t : graph::tensor_catalogue())
            if (t.kind == graph::WeightKind::MATRIX && t.part == graph::Part::WEIGHT && l[t.role].present())
                return l[t.role].dtype;
    return global[graph::WeightRole::LM_HEAD].dtype;
}

void Weights::for_each(const std::function<void(const TensorRef&)>& f) const {
    const auto scope = [&](const RoleTensors& ts, bool block) {
        for (const graph::TensorSpec& t : graph::tensor_catalogue()) {
            if ((t.binding == graph::Binding::BLOCK) != block || t.kind == graph::WeightKind::FUSED) continue;
            const TensorRef& r = t.part == graph::Part::WEIGHT ? ts[t.role] : ts.bias_of(t.role);
            // a role that falls back to another (the tied lm-head) is that tensor: counted once
            if (!r.present() || (t.falls_back_to != graph::WeightRole::NONE && r.data == ts[t.falls_back_to].data))
                continue;
            f(r);
        }
    };
    scope(global, false);
    for (const RoleTensors& l : layers) scope(l, true);
}

uint64_t Weights::total_bytes() const {
    uint64_t n = 0;
    for_each([&](const TensorRef& t) { n += t.n_bytes(); });
    return n;
}

Weights bind_weights(const format::GgufFile& file, const Hparams& hp) {
    Binder b(file);
    Weights w;
    const graph::ModelShape s = model_shape(hp);
    w.layers.resize(size_t(hp.n_layer));
    const auto bind = [&](const graph::TensorSpec& t, RoleTensors& into, int64_t layer) {
        const bool vector = t.kind == graph::WeightKind::VECTOR;
        TensorRef r = b.bind(graph::gguf_name(t, layer), graph::spec_cols(t, s), vector ? 0 : graph::spec_rows(t, s),
                             graph::dim_value(t.stack, s), !vector);
        (t.part == graph::Part::WEIGHT ? into[t.role] : into.bias_of(t.role)) = std::move(r);
    };
    // Globals first (so a role that falls back to another finds it bound), then block by block.
    for (const graph::TensorSpec& t : graph::tensor_catalogue()) {
        if (t.binding == graph::Binding::BLOCK || t.kind == graph::WeightKind::FUSED) continue;
        if (graph::present(t, s)) {
            bind(t, w.global, -1);
        } else if (t.falls_back_to != graph::WeightRole::NONE) {
            w.global[t.role] = w.global[t.falls_back_to];
        }
    }
    for (int64_t i = 0; i < hp.n_layer; ++i)
        for (const graph::TensorSpec& t : graph::tensor_catalogue())
            if (t.binding == graph::Binding::BLOCK && graph::present(t, s, i)) bind(t, w.layers[size_t(i)], i);
    // The multi-token-prediction blocks after them: checked, not run.
    w.nextn_layers.resize(size_t(hp.n_layer_nextn));
    for (int64_t i = hp.n_layer; i < hp.n_layer + hp.n_layer_nextn; ++i) {
        for (const graph::TensorSpec& t : graph::tensor_catalogue())
            if (t.binding == graph::Binding::BLOCK && graph::present(t, s, i))
                bind(t, w.nextn_layers[size_t(i - hp.n_layer)], i);
        for (const NextnTensorSpec& t : kNextnTensors) {
            const std::string name = nextn_name(t, i);
            if (!t.required && !file.find_tensor(name)) continue;
            const int64_t rows = nextn_rows(t, hp);
            w.nextn_tensors.push_back(b.bind(name, nextn_cols(t, hp), rows, 1, rows > 0));
        }
    }
    return w;
}

}  // namespace duet::model
