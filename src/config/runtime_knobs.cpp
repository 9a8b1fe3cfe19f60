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
         "launch cost (bench, serve's modelled timings), unless --npu-dispatch is given"},
        {"CPU_AFFINITY_CONF", "0, 1, 2",
         "1 or 2: pins the engine's pool threads one per allowed CPU, in order (run, bench --workload agent); 0: off"},
        {"HCCL_OP_EXPANSION_MODE", "AI_CPU, AIV, HOST, HOST_TS",
         "where HCCL expands collectives: the launch cost of every modelled collective (configs/hw/collectives.toml; "
         "bench --tp/--pp), unless --hccl-expansion is given; unset: HOST"},
        {"VLLM_ASCEND_ENABLE_FLASHCOMM", "0, 1",
         "1: reduce-scatter + all-gather in place of each tensor-parallel all-reduce, the residual add and norm on "
         "1/tp of the tokens (bench --tp), as --flashcomm does"},
        {"MULTI_STREAM_MEMORY_REUSE", "0, 1, 2, 3",
         "modelled static plan: 0 = a collective's tensors stay allocated until the next collective (deferred "
         "cross-stream free); 1-3 (default 1) = freed at their last use"},
        {"VLLM_ASCEND_ENABLE_PREFETCH_MLP", "0, 1",
         "1: modelled gate/up weight prefetch into L2 during decode attention (bench), and a real software prefetch of "
         "each layer's gate/up weights before its attention (run, serve, bench --workload agent)"},
        {"VLLM_ASCEND_MODEL_EXECUTE_TIME_OBSERVE", "0, 1",
         "1: logs each forward's execute time (run, serve: host wall time) and each modelled step's time (bench)"},
        {"VLLM_ATTENTION_BACKEND", "FLASH_ATTN, TORCH_SDPA",
         "FLASH_ATTN (default): the optimised attention kernel, fused attention on the NPU model; TORCH_SDPA: the "
         "scalar reference kernel, and the score matrix written to and read from NPU device memory"},
        {"ASCEND_RT_VISIBLE_DEVICES", "comma-separated distinct NPU ids, e.g. 0,1",
         "only these NPUs of the modelled topology (config.toml topology.npus) are used (bench, tune, serve's "
         "modelled timings)"},
    };
    return k;
}

std::string runtime_knob_key(const std::string& name) {
    std::string key = name;
    for (char& c : key) c = char(std::tolower(static_cast<unsigned char>(c)));
    return key;
}

namespace {
const RuntimeKnobInfo* find_knob(const std::string& name) {
    for (const RuntimeKnobInfo& k : runtime_knobs())
        if (k.name == name) return &k;
    return nullptr;
}

// Distinct non-negative ids separated by commas ("0", "0,2"); nullopt when malformed.
std::optional<std::vector<int>> parse_device_ids(const std::string& v) {
    std::vector<int> ids;
    size_t at = 0;
    while (true) {
        const size_t comma = v.find(',', at);
        const std::string item = v.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
        if (item.empty() || item.size() > 4 || item.find_first_not_of("0123456789") != std::string::npos)
            return std::nullopt;
        const int id = std::stoi(item);
        if (std::find(ids.begin(), ids.end(), id) != ids.end()) return std::nullopt;
        ids.push_back(id);
        if (comma == std::string::npos) return ids;
        at = comma + 1;
    }
}
}  // namespace

std::string runtime_knob_rule(const std::string& name, const std::string& value) {
    const RuntimeKnobInfo* k = find_knob(name);
    DUET_CHECK(k != nullptr, "runtime_knob_rule: unknown knob {}", name);
    if (name == "ASCEND_RT_VISIBLE_DEVICES") return parse_device_ids(value) ? "" : k->allowed;
    size_t at = 0;  // the allowed values are the comma-separated items of `allowed`
    while (at <= k->allowed.size()) {
        const size_t comma = k->allowed.find(", ", at);
        if (k->allowed.substr(at, comma == std::string::npos ? std::string::npos : comma - at) == value) return "";
        if (comma == std::string::npos) break;
        at = comma + 2;
    }
    return k->allowed;
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

const char* attention_backend_name(AttentionBackend b) {
    return b == AttentionBackend::FLASH_ATTN ? "FLASH_ATTN" : "TORCH_SDPA";
}

RuntimeKnobs read_runtime_knobs(const std::map<std::string, std::string>& env,
                                const std::map<std::string, std::string>& settings, const std::string& settings_file) {
    RuntimeKnobs k;
    std::map<std::string, std::string> value;
    for (const RuntimeKnobInfo& info : runtime_knobs()) {
        auto e = env.find(info.name);
        auto s = settings.find(info.name);
        if (e != env.end()) {
            if (const std::string rule = runtime_knob_rule(info.name, e->second); !rule.empty())
                fail("{} = \"{}\" is not allowed (allowed: {})", info.name, e->second, rule);
            value[info.name] = e->second;
            k.source[info.name] = info.name;
        } else if (s != settings.end()) {
            if (const std::string rule = runtime_knob_rule(info.name, s->second); !rule.empty())
                fail("{}: key 'runtime.{}' = \"{}\" is not allowed (allowed: {})", settings_file,
                     runtime_knob_key(info.name), s->second, rule);
            value[info.name] = s->second;
            k.source[info.name] = fmt::format("{}: key 'runtime.{}'", settings_file, runtime_knob_key(info.name));
        }
    }
    const auto digit = [&](const char* name) { return value.count(name) ? std::optional<int>(value[name][0] - '0') : std::nullopt; };
    k.task_queue_enable = digit("TASK_QUEUE_ENABLE");
    k.cpu_affinity = digit("CPU_AFFINITY_CONF").value_or(0);
    k.multi_stream_memory_reuse = digit("MULTI_STREAM_MEMORY_REUSE").value_or(1);
    k.prefetch_mlp = digit("VLLM_ASCEND_ENABLE_PREFETCH_MLP").value_or(0) == 1;
    k.execute_time_observe = digit("VLLM_ASCEND_MODEL_EXECUTE_TIME_OBSERVE").value_or(0) == 1;
    k.flashcomm = digit("VLLM_ASCEND_ENABLE_FLASHCOMM").value_or(0) == 1;
    if (value.count("HCCL_OP_EXPANSION_MODE")) k.hccl_op_expansion_mode = value["HCCL_OP_EXPANSION_MODE"];
    if (value.count("VLLM_ATTENTION_BACKEND") && value["VLLM_ATTENTION_BACKEND"] == "TORCH_SDPA")
        k.attention_backend = AttentionBackend::TORCH_SDPA;
    if (value.count("ASCEND_RT_VISIBLE_DEVICES")) k.visible_devices = parse_device_ids(value["ASCEND_RT_VISIBLE_DEVICES"]);
    return k;
}

int64_t visible_npu_count(const RuntimeKnobs& k, int64_t n_npus) {
    if (!k.visible_devices) return n_npus;
    for (int id : *k.visible_devices)
        if (id >= n_npus) {
            std::string ids;
            for (int x : *k.visible_devices) ids += (ids.empty() ? "" : ",") + std::to_string(x);
            fail("{} = \"{}\" names NPU {}, but the modelled topology has {} NPU{} (allowed: distinct ids from 0 to {}; "
                 "config.toml topology.npus)", k.source.at("ASCEND_RT_VISIBLE_DEVICES"), ids, id, n_npus,
                 n_npus == 1 ? "" : "s", n_npus - 1);
        }
    return int64_t(k.visible_devices->size());
}

std::string dispatch_for_task_queue(int value) { return "queue" + std::to_string(value); }

std::string effective_npu_dispatch(const std::string& flag, const RuntimeKnobs& k) {
    if (!flag.empty()) return flag;
    return k.task_queue_enable ? dispatch_for_task_queue(*k.task_queue_enable) : "";
}

}  // namespace duet::config
