#pragma once
// Synthetic models: a GGUF file of any preset architecture (model/arch_presets.h) with
// seeded random weights and a working tokenizer (model/synthetic_vocab.h). Used by
// `duet gen-model`, the tests (every architecture variant x every dtype) and `make bench`.
//
// The tensors are the rows of the tensor catalogue the hparams call for (graph/
// tensor_catalogue.h), in its file order, with llama.cpp's names and shapes (ggml order,
// shape[0] = input features). Weights are ~N(0,1)/sqrt(fan_in) (an Irwin-Hall approximation
// of the normal), the matrices that write the residual stream (catalogue column `residual`)
// further scaled by 1/sqrt(2 n_layer) so the residual stream stays O(1) through every layer;
// token_embd and output use 2/sqrt(n_embd) so logits have a
// standard deviation of about 2; norm weights are 1 + 0.1 u; biases 0.1 u; rope_freqs holds
// Llama-3.1's scaling factors (factor 8, low/high 1/4, original context 8192).
// 1-D tensors are always F32; 2-D weights and 3-D expert stacks ({cols, rows, n_expert}) take the
// requested dtype, except the rows the catalogue keeps F32 (MoE routers, as llama.cpp's tools do). "q4_k" writes a
// Q4_K_M-style mix (catalogue column `q4km`: Q6_K for output.weight, and for the value and
// FFN-down projections in llama.cpp's "more bits" layers). A row length that the chosen block size does not divide falls back
// to Q8_0 (then F16), as llama.cpp's quantizer does.
//
// Every value is a function of (seed, tensor name, row): the same seed gives a
// byte-identical file regardless of thread count. Tensors are streamed to disk in chunks,
// so memory stays bounded for 7B+ models. Thread safety: a free function; uses its own pool.
#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "format/gguf_writer.h"
#include "model/arch_presets.h"

namespace duet::model {

struct SyntheticOptions {
    std::string dtype = "f32";  // f32, f16, bf16, q8_0, q4_0, q5_0, q4_k, q6_k
    uint64_t seed = 0;
    int64_t n_layer = 0;  // 0: the preset's layer count
    int n_threads = 0;    // 0: the hardware threads
};

// The dtype names gen-model accepts, "f32, f16, bf16, q8_0, q4_0, q5_0, q4_k, q6_k".
std::string synthetic_dtype_names();

struct SyntheticTensor {
    enum class Kind { WEIGHT, EMBEDDING, NORM, BIAS, ROPE_FREQS };
    std::string name;
    DType dtype;
    std::vector<int64_t> shape;  // ggml order
    Kind kind;
    float scale;  // standard deviation (WEIGHT, EMBEDDING) or spread (NORM, BIAS)
    bool keep_f32 = false;  // F32 whatever the dtype (the catalogue's keep_f32: MoE routers)
};

// The tensors of a model with these hparams, in file order, with their dtypes for `dtype`
// (throws duet::Error naming --dtype and the allowed names for an unknown one).
std::vector<SyntheticTensor> synthetic_tensor_plan(const Hparams& hp, const std::string& dtype);

// Row `row` of tensor t (shape[0] floats) for this seed: the values the file stores before
// conversion to t.dtype. Exposed so tests can check a file's contents independently.
void synthetic_row(const SyntheticTensor& t, const Hparams& hp, uint64_t seed, int64_t row, float* out);

struct SyntheticSummary {
    Hparams hparams;
    int64_t n_params = 0;
    uint64_t file_bytes = 0;
    int n_fallback_tensors = 0;  // tensors written in another dtype than requested
};

// Writes the model to `path` (via path.tmp, renamed at the end). progress as GgufWriter's.
SyntheticSummary write_synthetic_model(const std::string& path, const ArchPreset& preset, const SyntheticOptions& opt,
                                       const format::GgufWriter::Progress& progress = nullptr);

}  // namespace duet::model
