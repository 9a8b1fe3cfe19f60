#pragma once
// What a trace-only comparison (`duet bench`, `duet tune`, a /v1/tasks payload) may ask of its
// model, checked before any hardware rig, plan or tune point is built: the layers config.toml
// scheduling.npu_only_layers names must exist, and prompt + generated tokens must fit the
// model's context (its n_ctx_train), as `duet bench -m FILE.gguf` requires of a file. Without
// these checks a layer index past the model was silently ignored and a 10^8-token prompt was
// modelled as if the model had been trained for it. Plain values; thread safe.
#include <cstdint>
#include <string>

#include "graph/model_shape.h"
#include "model/hparams.h"

namespace duet::workload {

struct ModelLimits {
    std::string model;   // as given: preset name, config.json or GGUF path
    int64_t n_layer = 0;
    int64_t n_ctx = 0;   // context length in tokens the model was trained for
};

// The hparams of --model PRESET|config.json|FILE (no weights are read); throws duet::Error naming
// --model when it is none of them.
model::Hparams bench_model_hparams(const std::string& model);
// --model PRESET|config.json|FILE -> the shape the planner needs (weights in `dtype`, settings' names).
graph::ModelShape bench_model_shape(const std::string& model, const std::string& dtype);
ModelLimits model_limits(const std::string& model);

// Throws duet::Error `<where> = "<layers>": layer L is past <model>'s N layers (allowed: layers 0
// to N-1)` (or the parser's message for a malformed list).
void check_npu_only_layers(const ModelLimits& m, const std::string& layers, const std::string& where);

// How the prompt length and generated tokens are named in errors: "--seq-len"/"--gen-len" on the
// command line, "seq_len"/"gen_len" in a task payload, "settings runtime.seq_len" when the
// prompt length came from settings.json.
// `allowed` names the prompt length in the "allowed:" clause ("" = seq).
struct LengthNames {
    std::string seq = "--seq-len", gen = "--gen-len", allowed;
};

// Throws duet::Error when seq_len + gen_len tokens do not fit m.n_ctx: "<seq> = S with <gen> = G
// needs S+G tokens, more than <model>'s context of C tokens (allowed: <allowed> at most C-G)".
void check_context(const ModelLimits& m, int64_t seq_len, int64_t gen_len, const LengthNames& names = {});

// A prompt length from settings runtime.seq_len within the context: seq_len when it fits, else
// m.n_ctx - gen_len with a warning that says so (`duet bench`, for a preset as for a file).
int64_t cut_to_context(const ModelLimits& m, int64_t seq_len, int64_t gen_len);

}  // namespace duet::workload
