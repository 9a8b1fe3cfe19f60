#include "cli/bench_serving.h"

#include "cli/flags.h"

namespace duet::cli {

void add_serving_bench_flags(CLI::App* c, workload::ServingLoad& a) {
    text(c, "--rate", a.rate,
         "With --workload serving: request arrivals per second (gamma-distributed gaps, Poisson at --burstiness 1), "
         "or inf: every request at t = 0");
    number(c, "--burstiness", a.burstiness,
           "With --workload serving: coefficient of variation of the arrival gaps (1: Poisson, > 1: burstier)", 0.01,
           100.0);
    number(c, "--requests", a.requests, "With --workload serving: requests (synthetic, or the first N of the file)",
           int64_t(1), int64_t(10000000));
    number(c, "--seed", a.seed, "With --workload serving: seed of the arrival times", int64_t(0), kMaxSeed);
    number(c, "--slo-ttft-ms", a.slo_ttft_ms, "With --workload serving: TTFT SLO of goodput (ms)", 0.0, 1e9,
           DefaultFrom{"none"});
    number(c, "--slo-tpot-ms", a.slo_tpot_ms, "With --workload serving: TPOT SLO of goodput (ms)", 0.0, 1e9,
           DefaultFrom{"none"});
    number(c, "--kv-blocks", a.kv_blocks,
           "With --workload serving: KV cache blocks of the modelled machine (instead of device memory after "
           "weights and workspace)", int64_t(1), int64_t(1) << 40, DefaultFrom{"derived"});
    number(c, "--max-seqs", a.parallel, "With --workload serving: sequences in the running batch at most", int64_t(1),
           int64_t(65536));
    number(c, "--step-tokens", a.step_tokens,
           "With --workload serving: tokens per step (chunked prefill budget; the server's default)", int64_t(1),
           int64_t(1) << 20);
    number(c, "--think-ms", a.think_ms,
           "With --workload serving and an agent session file: time between a call's answer and the session's next "
           "call (tool execution, the agent's own work)", 0.0, 1e9);
    number(c, "--shared-prefix", a.shared_prefix,
           "With --workload serving: the first N prompt tokens are the same in every request (a system prompt): the "
           "modelled prefix cache shares their KV blocks", int64_t(0), kMaxTokens);
    c->add_flag("--rate-sweep", a.rate_sweep,
                "With --workload serving: find each placement's highest request rate within the SLOs (from --rate, "
                "doubling, then bisecting) and draw p99 TTFT/TPOT against throughput (--svg)");
    number(c, "--sweep-width", a.sweep_width,
           "With --rate-sweep: rates tried together in each round of the search (under mpirun -np N they are spread "
           "over the ranks)", int64_t(1), int64_t(64), DefaultFrom{"the mpirun ranks, 1 without mpirun"});
    number(c, "--slo-attainment", a.attainment,
           "With --rate-sweep: share of requests that must finish within the SLOs", 0.01, 1.0);
    number(c, "--ctx", a.ctx, "With --workload serving: context length of a sequence", int64_t(2), kMaxCtx,
           DefaultFrom{"the model's trained context"});
    number(c, "--dp", a.dp,
           "With --workload serving: data-parallel replicas of the modelled machine, each with its own scheduler and "
           "KV cache, behind a router (--router); with --tp N each replica is a group of N NPUs (--npus N x dp)", int64_t(1), int64_t(64));
    text(c, "--router", a.router,
         "With --workload serving --dp N: round_robin, least_outstanding_tokens, or prefix_affinity (a prompt goes "
         "to the replica its prefix went to, unless that one is overloaded)", DefaultFrom{"round_robin"});
    c->add_flag("--disaggregate", a.disaggregate,
                "With --workload serving: prefill/decode disaggregation. npu1 prefills (npu_only placement); npu0 with "
                "the PIM devices decodes under the placement compared; each prompt's KV crosses the npu1-npu0 link "
                "(needs --npus 2; with --tp N: a prefill and a decode group of N NPUs each, --npus 2N)");
    text(c, "--host-profile", a.host_profile, help::kHostProfile);
}

}  // namespace duet::cli
