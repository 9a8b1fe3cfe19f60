#include "config/runtime_knobs.h"

#include <algorithm>
#include <cstdlib>

#include "core/error.h"

extern char** environ;

namespace duet::config {

const std::vector<RuntimeKnobInfo>& runtime_knobs() {
    static const std::vector<RuntimeKnobInfo> k = {
        {"TASK_QUEUE_ENABLE", "0, 1, 2",
         "NPU host dispatch: 0 -> queue0, 1 -> queue1 (torch_npu default), 2 -> queue2 in the NPU model's per-operator "
         "launch cost (bench, serve's modelled timings), unless --npu-dispatch is given",
         true},
        {"CPU_AFFINITY_CONF", "0, 1, 2",
         "1 or 2: pins the engine's pool threads one per allowed CPU, in order (run, bench --workload agent); 0: off",
         true},
        {"HCCL_OP_EXPANSION_MODE", "AI_CPU, AIV, HOST, HOST_TS",
         "where HCCL expands collectives: the launch cost of every modelled collective (configs/hw/collectives.toml; "
         "bench --tp/--pp), unless --hccl-expansion is given; unset: HOST",
         true},
        {"VLLM_ASCEND_ENABLE_FLASHCOMM", "0, 1",
         "1: reduce-scatter + all-gather in place of each tensor-parallel all-reduce, the residual add and norm on "
         "1/tp of the tokens (bench --tp), as --flashcomm does",
         true},
        {"MULTI_STREAM_MEMORY_REUSE", "",
         "recognised, not modelled yet: memory reuse across streams (the static plan already reuses within one stream)",
         false},
        {"VLLM_ASCEND_ENABLE_PREFETCH_MLP", "", "recognised, not modelled yet: MLP weight prefetch during attention",
         false},
        {"VLLM_ASCEND_MODEL_EXECUTE_TIME_OBSERVE", "", "recognised, not modelled yet: per-step execute time logging",
         false},
        {"VLLM_ATTENTION_BACKEND", "", "recognised, not modelled yet: the attention kernel variant", false},
        {"ASCEND_RT_VISIBLE_DEVICES", "", "recognised, not modelled yet: which NPUs of the topology are used", false},
    };
    return k;
}

std::map<std::string, std::string> runtime_knob_env() {
    std::map<std::string, std::string> env;
    for (const RuntimeKnobInfo& k : runtime_knobs())
        if (const char* v = std::getenv(k.name.c_str())) env[k.name] = v;
    return env;
}

namespace {
size_t edit_distance(const std::string& a, const std::string& b) {
    std::vector<size_t> row(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= b.size(); ++j) {
            const size_t up = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] != b[j - 1])});
            diag = up;
        }
    }
    return row[b.size()];
}
}  // namespace

std::vector<std::pair<std::string, std::string>> misspelled_runtime_knobs(const std::vector<std::string>& env_names) {
    std::vector<std::pair<std::string, std::string>> out;
    for (const std::string& v : env_names)
        for (const RuntimeKnobInfo& k : runtime_knobs())
            if (v != k.name && edit_distance(v, k.name) <= 2) out.emplace_back(v, k.name);
    return out;
}

std::vector<std::string> process_env_names() {
    std::vector<std::string> out;
    for (char** e = environ; e && *e; ++e) {
        const std::string kv = *e;
        out.push_back(kv.substr(0, kv.find('=')));
    }
    return out;
}

namespace {
int small_choice(const std::map<std::string, std::string>& env, const char* name, int hi) {
    const std::string& v = env.at(name);
    if (v.size() != 1 || v[0] < '0' || v[0] > char('0' + hi))
        fail("{} = \"{}\" is not allowed (allowed: {})", name, v, hi == 2 ? "0, 1, 2" : "0, 1");
    return v[0] - '0';
}
}  // namespace

RuntimeKnobs read_runtime_knobs(const std::map<std::string, std::string>& env) {
    RuntimeKnobs k;
    if (env.count("TASK_QUEUE_ENABLE")) k.task_queue_enable = small_choice(env, "TASK_QUEUE_ENABLE", 2);
    if (env.count("CPU_AFFINITY_CONF")) k.cpu_affinity = small_choice(env, "CPU_AFFINITY_CONF", 2);
    if (env.count("VLLM_ASCEND_ENABLE_FLASHCOMM")) k.flashcomm = small_choice(env, "VLLM_ASCEND_ENABLE_FLASHCOMM", 1) == 1;
    if (auto it = env.find("HCCL_OP_EXPANSION_MODE"); it != env.end()) {
        const std::string& v = it->second;
        if (v != "AI_CPU" && v != "AIV" && v != "HOST" && v != "HOST_TS")
            fail("HCCL_OP_EXPANSION_MODE = \"{}\" is not allowed (allowed: AI_CPU, AIV, HOST, HOST_TS)", v);
        k.hccl_op_expansion_mode = v;
    }
    return k;
}

std::string dispatch_for_task_queue(int value) { return "queue" + std::to_string(value); }

std::string effective_npu_dispatch(const std::string& flag, const RuntimeKnobs& k) {
    if (!flag.empty()) return flag;
    return k.task_queue_enable ? dispatch_for_task_queue(*k.task_queue_enable) : "";
}

}  // namespace duet::config
