#include "workload/knob_effects.h"

#include <cstdio>

#include "runtime/mlp_prefetch.h"

namespace duet::workload {

config::RuntimeKnobs runtime_knobs_of(const config::Settings& st) {
    return config::read_runtime_knobs(config::runtime_knob_env(), st.runtime.knobs, st.source);
}

void apply_engine_knobs(const config::RuntimeKnobs& k, runtime::EngineOptions& eo) {
    eo.reference_attention = k.attention_backend == config::AttentionBackend::TORCH_SDPA;
    eo.prefetch_mlp_bytes = k.prefetch_mlp ? runtime::MlpPrefetch::host_l2_bytes() : 0;
    if (k.execute_time_observe)
        eo.on_forward = [](const runtime::ForwardTime& t) {
            std::fprintf(stderr, "execute time: forward %lld (%s, %lld token%s, %lld sequence%s): %.3f ms\n",
                         (long long)t.index, t.prefill ? "prefill" : "decode", (long long)t.n_tokens,
                         t.n_tokens == 1 ? "" : "s", (long long)t.n_seqs, t.n_seqs == 1 ? "" : "s", t.wall_ms);
        };
}

void log_modelled_execute_times(const config::RuntimeKnobs& k, const std::string& label, const sim::Timeline& tl) {
    if (!k.execute_time_observe) return;
    std::fprintf(stderr, "execute time (modelled, %s): forward 0 (prefill): %.3f ms\n", label.c_str(), tl.prefill_ns / 1e6);
    for (size_t i = 0; i < tl.tbt_ns.size(); ++i)
        std::fprintf(stderr, "execute time (modelled, %s): forward %zu (decode): %.3f ms\n", label.c_str(), i + 1,
                     tl.tbt_ns[i] / 1e6);
}

}  // namespace duet::workload
