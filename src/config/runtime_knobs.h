#pragma once
// Runtime knobs under the names Ascend serving stacks use (torch_npu, vllm-ascend), read from
// the environment (issue 15). Each knob has a real or modelled effect in duet, or is listed as
// recognised-but-not-modelled so `duet doctor` can say so instead of ignoring it silently.
//
//   TASK_QUEUE_ENABLE  0, 1, 2: torch_npu's host dispatch pipeline; selects the NPU model's
//                      dispatch mode queue0/queue1/queue2 (hw/npu: per-operator launch cost)
//                      where no --npu-dispatch is given (bench, serve's modelled timings).
//   CPU_AFFINITY_CONF  0 (off), 1 or 2 (on): pins the engine's pool threads one per CPU of the
//                      process's allowed set, in order (runtime/cpu_affinity.h). torch_npu's
//                      1 = coarse and 2 = fine binding both map to one thread per CPU here.
//   HCCL_OP_EXPANSION_MODE  AI_CPU, AIV, HOST, HOST_TS: the launch cost of modelled collectives
//                      (bench --tp/--pp) where no --hccl-expansion is given.
//   VLLM_ASCEND_ENABLE_FLASHCOMM  0, 1: reduce-scatter + all-gather for tensor parallelism
//                      (bench --tp) where no --flashcomm is given.
//   the others         recognised, listed by doctor with what they do on Ascend; not modelled yet.
//
// Thread safety: pure functions over the given environment map.
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace duet::config {

struct RuntimeKnobInfo {
    std::string name;
    std::string allowed;   // the values duet accepts ("" for not-modelled knobs: any)
    std::string effect;    // what it does in duet (or "recognised, not modelled: ...")
    bool modelled = false; // duet acts on it
};

// Every knob, in doctor's order.
const std::vector<RuntimeKnobInfo>& runtime_knobs();

// The knobs set in this process's environment (name -> value).
std::map<std::string, std::string> runtime_knob_env();

// Variables of `env_names` one or two edits away from a knob name (a typo the stack would
// ignore silently): (variable, the knob it resembles).
std::vector<std::pair<std::string, std::string>> misspelled_runtime_knobs(const std::vector<std::string>& env_names);
// The names of every variable of this process's environment.
std::vector<std::string> process_env_names();

struct RuntimeKnobs {
    std::optional<int> task_queue_enable;  // 0, 1, 2
    int cpu_affinity = 0;                  // 0 off; 1, 2 pin pool threads
    std::string hccl_op_expansion_mode;    // AI_CPU, AIV, HOST, HOST_TS ("": unset)
    bool flashcomm = false;                // VLLM_ASCEND_ENABLE_FLASHCOMM=1
};

// Validated values from `env` (names as above). Throws duet::Error "TASK_QUEUE_ENABLE = \"3\" is
// not allowed (allowed: 0, 1, 2)".
RuntimeKnobs read_runtime_knobs(const std::map<std::string, std::string>& env);

// The NPU dispatch mode a TASK_QUEUE_ENABLE value selects ("queue0", "queue1", "queue2").
std::string dispatch_for_task_queue(int value);

// --npu-dispatch when given, else TASK_QUEUE_ENABLE's mode when set, else "" (the preset default).
std::string effective_npu_dispatch(const std::string& flag, const RuntimeKnobs& k);

}  // namespace duet::config
