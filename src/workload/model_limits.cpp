#include "workload/model_limits.h"

#include <filesystem>

#include "config/coop_config.h"
#include "core/error.h"
#include "core/log.h"
#include "format/gguf.h"
#include "model/arch_presets.h"
#include "model/hf_config.h"

namespace duet::workload {

model::Hparams bench_model_hparams(const std::string& model) {
    model::Hparams hp;
    if (model::is_trace_only_model(model)) {
        hp = model::trace_only_hparams(model);
    } else if (std::filesystem::exists(model)) {
        hp = model::hparams_from_gguf(format::GgufFile::open(model));
    } else {
        fail("--model = \"{}\" is neither an architecture preset, a Hugging Face config.json nor a file (presets: {})",
             model, model::arch_preset_list());
    }
    return hp;
}

graph::ModelShape bench_model_shape(const std::string& model, const std::string& dtype) {
    const model::Hparams hp = bench_model_hparams(model);
    const DType w = dtype_from_name(canonical_dtype_name(dtype)).value_or(DType::F16);
    return model::model_shape(hp, w, w, model);
}

ModelLimits model_limits(const std::string& model) {
    const model::Hparams hp = bench_model_hparams(model);
    return {model, hp.n_layer, hp.n_ctx_train};
}

void check_npu_only_layers(const ModelLimits& m, const std::string& layers, const std::string& where) {
    config::parse_layer_list(layers, where, m.n_layer, m.model);
}

void check_context(const ModelLimits& m, int64_t seq_len, int64_t gen_len, const LengthNames& names) {
    if (m.n_ctx <= 0 || seq_len + gen_len <= m.n_ctx) return;
    if (gen_len >= m.n_ctx)
        fail("{} = {} does not fit {}'s context of {} tokens (allowed: {} at most {})", names.gen, gen_len, m.model,
             m.n_ctx, names.gen, m.n_ctx - 1);
    fail("{} = {} with {} = {} needs {} tokens, more than {}'s context of {} tokens (allowed: {} at most {})",
         names.seq, seq_len, names.gen, gen_len, seq_len + gen_len, m.model, m.n_ctx,
         names.allowed.empty() ? names.seq : names.allowed, m.n_ctx - gen_len);
}

int64_t cut_to_context(const ModelLimits& m, int64_t seq_len, int64_t gen_len) {
    if (m.n_ctx <= 0 || seq_len + gen_len <= m.n_ctx) return seq_len;
    DUET_LOG_WARN("settings runtime.seq_len = {} with --gen-len = {} does not fit {}'s context of {} tokens; the "
                  "prompt is cut to {} tokens",
                  seq_len, gen_len, m.model, m.n_ctx, m.n_ctx - gen_len);
    return m.n_ctx - gen_len;
}

}  // namespace duet::workload
