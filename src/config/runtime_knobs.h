#pragma once
// Runtime knobs under the names Ascend serving stacks use (torch_npu, vllm-ascend), read from
// the environment and from settings.json `runtime` (keys: the names in lower case, values as
// JSON strings written as in the environment, e.g. "task_queue_enable": "2"). The environment
// wins over the file. Each knob has a real or a modelled effect (docs/configuration.md,
// "Runtime knobs"):
//
//   TASK_QUEUE_ENABLE        0, 1, 2: torch_npu's host dispatch pipeline; the NPU model's
//                            dispatch mode queue0/queue1/queue2 where no --npu-dispatch is given.
//   CPU_AFFINITY_CONF        0 (off), 1 or 2: pins the engine's pool threads one per allowed CPU.
//   HCCL_OP_EXPANSION_MODE   AI_CPU, AIV, HOST, HOST_TS: the launch cost of modelled collectives
//                            (bench --tp/--pp) where no --hccl-expansion is given.
//   VLLM_ASCEND_ENABLE_FLASHCOMM 0, 1: reduce-scatter + all-gather for tensor parallelism
//                            (bench --tp) where no --flashcomm is given.
//   MULTI_STREAM_MEMORY_REUSE 0..3 (torch_npu default 1): 0 = a tensor handed to the collective
//                            stream is freed only at the end of the forward step (deferred
//                            free, recordStream), so the static plan cannot reuse it; 1..3 =
//                            freed at its last use (graph::MemoryPlanOptions).
//   VLLM_ASCEND_ENABLE_PREFETCH_MLP 0, 1: modelled gate/up weight prefetch into L2 during decode
//                            attention (sim::RunOptions::prefetch_mlp); real software prefetch
//                            of the layer's gate/up weights before its attention (engine).
//   VLLM_ASCEND_MODEL_EXECUTE_TIME_OBSERVE 0, 1: per-step execute time logged (engine forward
//                            wall time; modelled prefill/decode step times in bench).
//   VLLM_ATTENTION_BACKEND   FLASH_ATTN (default), TORCH_SDPA: the attention variant (engine:
//                            optimised kernel or the scalar reference; model: fused operator or
//                            the score matrix through device memory).
//   ASCEND_RT_VISIBLE_DEVICES comma-separated distinct NPU ids of the topology (config.toml
//                            topology.npus): only those NPUs are modelled.
//
// Thread safety: pure functions over the given maps (runtime_knob_env reads environ).
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace duet::config {

struct RuntimeKnobInfo {
    std::string name;
    std::string allowed;   // the values duet accepts, as written in errors
    std::string effect;    // what it does in duet
    bool modelled = true;  // duet acts on it (every knob does now)
};

// Every knob, in doctor's order.
const std::vector<RuntimeKnobInfo>& runtime_knobs();

// The settings.json key of a knob: its name in lower case ("task_queue_enable").
std::string runtime_knob_key(const std::string& name);
// "" when `value` is allowed for knob `name`, else what is allowed ("0, 1, 2").
std::string runtime_knob_rule(const std::string& name, const std::string& value);

// The knobs set in this process's environment (name -> value).
std::map<std::string, std::string> runtime_knob_env();

// Variables of `env_names` one or two edits away from a knob name (a typo the stack would
// ignore silently): (variable, the knob it resembles).
std::vector<std::pair<std::string, std::string>> misspelled_runtime_knobs(const std::vector<std::string>& env_names);
// The names of every variable of this process's environment.
std::vector<std::string> process_env_names();

enum class AttentionBackend { FLASH_ATTN, TORCH_SDPA };
const char* attention_backend_name(AttentionBackend b);

struct RuntimeKnobs {
    std::optional<int> task_queue_enable;  // 0, 1, 2
    int cpu_affinity = 0;                  // 0 off; 1, 2 pin pool threads
    std::string hccl_op_expansion_mode;    // AI_CPU, AIV, HOST, HOST_TS ("": unset)
    bool flashcomm = false;                // VLLM_ASCEND_ENABLE_FLASHCOMM=1
    int multi_stream_memory_reuse = 1;     // 0..3; torch_npu's default 1
    bool prefetch_mlp = false;
    bool execute_time_observe = false;
    AttentionBackend attention_backend = AttentionBackend::FLASH_ATTN;
    std::optional<std::vector<int>> visible_devices;  // ASCEND_RT_VISIBLE_DEVICES, in the given order
    // Where each set knob came from: "TASK_QUEUE_ENABLE" (environment) or
    // "<settings file>: key 'runtime.task_queue_enable'".
    std::map<std::string, std::string> source;
};

// Validated values: each knob from `env` when set there, else from `settings` (settings.json
// `runtime`, name -> value, validated when the file was read; `settings_file` names it).
// Throws duet::Error "TASK_QUEUE_ENABLE = \"3\" is not allowed (allowed: 0, 1, 2)".
RuntimeKnobs read_runtime_knobs(const std::map<std::string, std::string>& env,
                                const std::map<std::string, std::string>& settings = {},
                                const std::string& settings_file = "settings.json");

// ASCEND_RT_VISIBLE_DEVICES against a topology of n_npus NPUs: the number of NPUs used
// (n_npus when unset). Throws duet::Error naming the knob's source when an id is >= n_npus.
int64_t visible_npu_count(const RuntimeKnobs& k, int64_t n_npus);

// The NPU dispatch mode a TASK_QUEUE_ENABLE value selects ("queue0", "queue1", "queue2").
std::string dispatch_for_task_queue(int value);

// --npu-dispatch when given, else TASK_QUEUE_ENABLE's mode when set, else "" (the preset default).
std::string effective_npu_dispatch(const std::string& flag, const RuntimeKnobs& k);

}  // namespace duet::config
