#pragma once
// A Hugging Face `config.json` as the model of a trace-only run (`duet bench --model PATH`,
// tune, the server's modelled timings): the architecture's shape without its weights.
//
// Families, told by `model_type` (or, when it is absent, `architectures[0]`):
//   llama, mistral (LlamaForCausalLM, MistralForCausalLM)     -> Arch::LLAMA
//   qwen2 (Qwen2ForCausalLM)                                   -> Arch::QWEN2 (QKV bias, NEOX RoPE)
//   mixtral (MixtralForCausalLM)                               -> Arch::LLAMA with experts
//   qwen2_moe, qwen3_moe (Qwen2MoeForCausalLM, Qwen3MoeForCausalLM)
//   deepseek_v2, deepseek_v3 (DeepseekV2ForCausalLM, ...)      -> Arch::DEEPSEEK2 (MLA + experts)
// Fields are read as docs/configuration.md lists them. A field that would change the modelled
// cost but is not modelled (a sliding window shorter than the context, MoE layers that are not
// every layer, an unknown scoring function, ...) is a duet::Error naming the file and the field;
// a field that changes no modelled cost (RoPE scaling, the MTP layers, the grouped top-k of
// DeepSeek-V3, the checkpoint's quantisation, fields duet does not know) is a warning. Fields of
// training only (dropout, initializer_range, aux-loss coefficients, token ids) are ignored.
// Thread safety: pure functions.
#include <string>
#include <string_view>
#include <vector>

#include "model/hparams.h"

namespace duet::model {

struct HfConfig {
    Hparams hparams;
    std::string file;                   // the config.json read
    std::string torch_dtype;            // as written ("bfloat16"); the modelled dtype comes from the settings
    std::vector<std::string> warnings;  // "<file>: field 'x' ...: not modelled (...)", one per field
};

// True when `path` is a file whose name ends in ".json" or a directory holding `config.json`.
bool is_hf_config_path(const std::string& path);

// Reads `path` (a config.json, or a directory holding one). Throws duet::Error
// "<file>: field '<name>' ..." naming the value and what is allowed.
HfConfig read_hf_config(const std::string& path);

// The same from JSON text; `source` names it in messages (the presets use it on their embedded
// configs).
HfConfig parse_hf_config(std::string_view json_text, const std::string& source);

// The model of a trace-only run named by `--model`: true for an architecture preset name or a
// Hugging Face config (is_hf_config_path); false for anything else (a GGUF file runs for real).
bool is_trace_only_model(const std::string& model);
// Its hparams: the preset's, or the config's (each warning logged once at warn level).
// Throws duet::Error as read_hf_config; DUET_CHECKs is_trace_only_model(model).
Hparams trace_only_hparams(const std::string& model);

// Supported model_type values, for messages and docs: "llama, mistral, qwen2, ...".
std::string hf_model_types();

}  // namespace duet::model
