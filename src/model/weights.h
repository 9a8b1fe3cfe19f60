#pragma once
// Binds the tensors of a GGUF file to the weights of a decoder-only transformer, zero copy,
// walking the tensor catalogue (graph/tensor_catalogue.h):
// every field points into the GgufFile's read-only mapping, so the GgufFile must outlive
// the Weights (runtime::Model holds both).
//
// Shapes are written in ggml order, as GGUF stores them: [ne0][ne1] where ne0 is the
// contiguous dimension. A matrix [k][n] is n rows of k elements: the kernels' W[n][k]
// (y = x · Wᵀ). bind_weights checks every tensor's presence, shape and dtype against the
// hparams; any mismatch throws duet::Error "<file>: tensor '<name>' ...".
//
// Thread safety: immutable after binding; read from any thread.
#include <array>
#include <cstddef>
#include <functional>
#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "graph/tensor_catalogue.h"
#include "model/hparams.h"

namespace duet::format {
class GgufFile;
}

namespace duet::model {

// One tensor inside the mapping. rows/cols: a matrix of `rows` rows of `cols` elements
// (ggml ne1 = rows, ne0 = cols); vectors have rows == 1. A per-expert stack (ggml ne2 =
// n_stack, the catalogue's `stack`) is n_stack such matrices: expert e's starts
// e * stack_stride() bytes after data (expert(e)); back to back in a file, further apart in a
// tensor-parallel slice of the stack (runtime/tp_weights.h).
struct TensorRef {
    const void* data = nullptr;
    DType dtype = DType::F32;
    int64_t rows = 0;
    int64_t cols = 0;
    size_t row_stride_bytes = 0;
    std::string name;  // GGUF tensor name, for messages
    int64_t n_stack = 1;
    size_t stack_stride_bytes = 0;  // bytes between the experts of a stack; 0: rows * row_stride_bytes

    bool present() const { return data != nullptr; }
    size_t stack_stride() const { return stack_stride_bytes ? stack_stride_bytes : size_t(rows) * row_stride_bytes; }
    // Bytes from data to the end of the last row of the last matrix.
    uint64_t n_bytes() const {
        return uint64_t(stack_stride()) * uint64_t(n_stack - 1) + uint64_t(row_stride_bytes) * uint64_t(rows);
    }
    const float* f32() const { return static_cast<const float*>(data); }
    // Matrix e of a stack (rows x cols, n_stack 1); DUET_CHECKs 0 <= e < n_stack.
    TensorRef expert(int64_t e) const;
};

// The tensors of one binding scope (the model's globals, or one block), indexed by weight
// role: the rows of the tensor catalogue (graph/tensor_catalogue.h) give each role's GGUF
// name, shape and dtype rule. A role the model does not have is absent (!present()). Shapes
// as the catalogue writes them: a matrix of rows = output features, cols = input features
// (e.g. ATTN_Q: [n_embd][n_head * head_dim], rows n_head * head_dim).
struct RoleTensors {
    std::array<TensorRef, graph::kWeightRoleCount> weight;  // by role
    std::array<TensorRef, graph::kWeightRoleCount> bias;    // f32, only for roles with a BIAS row the model has

    const TensorRef& operator[](graph::WeightRole r) const { return weight[size_t(r)]; }
    TensorRef& operator[](graph::WeightRole r) { return weight[size_t(r)]; }
    const TensorRef& bias_of(graph::WeightRole r) const { return bias[size_t(r)]; }
    TensorRef& bias_of(graph::WeightRole r) { return bias[size_t(r)]; }
};

struct Weights {
    // INPUT, SHARED and OUTPUT rows: TOKEN_EMBD [n_embd][n_vocab], ROPE_FREQS [n_rot / 2] f32
    // (only when hparams.has_rope_freqs), OUTPUT_NORM [n_embd] f32, LM_HEAD [n_embd][n_vocab]
    // (== TOKEN_EMBD when hparams.tied_output).
    RoleTensors global;
    std::vector<RoleTensors> layers;  // [n_layer]: the BLOCK rows
    // The multi-token-prediction blocks (model/nextn_tensors.h), [n_layer_nextn]: their BLOCK rows
    // and their nextn tensors, bound to check the file; the engine never reads them, and
    // for_each / total_bytes leave them out.
    std::vector<RoleTensors> nextn_layers;
    std::vector<TensorRef> nextn_tensors;

    const TensorRef& operator[](graph::WeightRole r) const { return global[r]; }
    TensorRef& operator[](graph::WeightRole r) { return global[r]; }
    // The tensor of (role, layer): the global one for a non-BLOCK role (layer ignored).
    const TensorRef& at(graph::WeightRole r, int32_t layer) const;
    // The dtype of the block matrices (the first block's first present matrix; the lm-head's
    // without blocks): what a model's shape records as its weight dtype.
    DType matrix_dtype() const;

    // Calls f(tensor) for every distinct present tensor (the tied lm-head once), biases included.
    void for_each(const std::function<void(const TensorRef&)>& f) const;
    // Bytes of all distinct weight tensors (the tied output counted once).
    uint64_t total_bytes() const;
};

// Matmul weights and tables (MATRIX, TABLE rows) may be F32, F16, BF16, Q8_0, Q4_0, Q5_0, Q4_K,
// Q6_K (K-quants need cols % 256 == 0); VECTOR rows (norms, biases, rope factors) must be F32.
Weights bind_weights(const format::GgufFile& file, const Hparams& hp);

}  // namespace duet::model
