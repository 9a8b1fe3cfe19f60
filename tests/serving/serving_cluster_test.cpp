// Data-parallel replicas behind a router and prefill/decode disaggregation (serving/serving_cluster.h)
// on closed-form cases and on statistical ones with a step time linear in the step's tokens.
#include <gtest/gtest.h>

#include <random>

#include "core/error.h"
#include "sched/block_pool.h"
#include "serving/instance_hw.h"
#include "serving/router.h"
#include "serving/serving_cluster.h"
#include "serving/serving_layout.h"
#include "serving/serving_metrics.h"

namespace duet::serving {
namespace {

sched::SchedulerOptions opts(int64_t n_parallel = 64, int64_t budget = 512) {
    sched::SchedulerOptions o;
    o.n_parallel = n_parallel;
    o.step_token_budget = budget;
    o.n_ctx = 4096;
    return o;
}

// A step costs 2 ms plus 20 us per prompt token plus 0.1 ms per decode sequence: the shape of
// a real step (a fixed weight stream, compute growing with the tokens), small numbers.
int64_t linear_step_ns(const sched::Step& st, int64_t) {
    return 2'000'000 + 20'000 * st.prefill_tokens() + 100'000 * st.decode_tokens();
}

std::vector<ServingRequest> poisson(int64_t n, double rate_rps, int64_t prompt, int64_t out, uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::exponential_distribution<double> gap(rate_rps);
    std::vector<ServingRequest> q;
    double t = 0;
    for (int64_t i = 0; i < n; ++i) {
        q.push_back({int64_t(t * 1e9), prompt, out, nullptr});
        t += gap(rng);
    }
    return q;
}

struct Replicas {
    std::vector<std::unique_ptr<sched::BlockPool>> pools;
    std::vector<ReplicaSpec> specs;
    Replicas(int n, int64_t blocks, int64_t block_tokens, bool prefix = false,
             const std::vector<ServingRequest>* reqs = nullptr) {
        for (int r = 0; r < n; ++r) {
            pools.push_back(std::make_unique<sched::BlockPool>(blocks, block_tokens));
            if (prefix)
                pools.back()->set_tokens([reqs](sched::SeqId id) {
                    const auto& t = (*reqs)[size_t(id)].tokens;
                    return t ? std::span<const int32_t>(*t) : std::span<const int32_t>();
                });
            ReplicaSpec s;
            s.pool = pools.back().get();
            s.timer = linear_step_ns;
            specs.push_back(s);
        }
    }
};

ServingResult dp_run(const std::vector<ServingRequest>& q, int n, RouterPolicy p, int64_t blocks = 4096,
                     bool prefix = false) {
    Replicas reps(n, blocks, 16, prefix, &q);
    Router router(p, n, 16);
    sched::SchedulerOptions o = opts();
    o.prefix_sharing = prefix;
    return run_cluster(q, o, reps.specs, router);
}

// N identical replicas at N times the rate, round robin: every replica sees 1/N of a Poisson
// stream (gaps of N exponential draws: a little less bursty than Poisson at R), so per-request
// latencies match one replica at R within sampling noise, and throughput is N times.
TEST(ServingCluster, ReplicasAtNTimesTheRateMatchOneReplica) {
    const int64_t n_req = 3000;
    const double rate = 8;  // req/s on one replica: about half its capacity with this step time
    for (int n : {2, 4}) {
        const ServingSummary one = summarize(dp_run(poisson(n_req, rate, 256, 64, 7), 1, RouterPolicy::ROUND_ROBIN), {});
        const ServingResult rn = dp_run(poisson(n * n_req, n * rate, 256, 64, 7), n, RouterPolicy::ROUND_ROBIN);
        const ServingSummary many = summarize(rn, {});
        ASSERT_EQ(many.completed, n * n_req);
        for (const auto& [name, a, b] : {std::tuple{"ttft", one.ttft_ms, many.ttft_ms},
                                         std::tuple{"tpot", one.tpot_ms, many.tpot_ms},
                                         std::tuple{"e2e", one.e2e_ms, many.e2e_ms}}) {
            EXPECT_NEAR(b.p50 / a.p50, 1.0, 0.08) << name << " n=" << n;
            EXPECT_NEAR(b.p90 / a.p90, 1.0, 0.10) << name << " n=" << n;
            EXPECT_NEAR(b.mean / a.mean, 1.0, 0.08) << name << " n=" << n;
        }
        EXPECT_NEAR(many.output_tokens_per_s / one.output_tokens_per_s, double(n), 0.05 * n) << n;
        for (const ReplicaStats& r : rn.replicas) {
            EXPECT_EQ(r.requests, n_req);  // round robin: exactly 1/N each
            EXPECT_NEAR(double(r.prefill.busy_ns) / double(rn.replicas[0].prefill.busy_ns), 1.0, 0.05);
        }
    }
}

// Least outstanding tokens sends the third request past the long first one; round robin does not.
TEST(ServingCluster, LeastOutstandingTokensAvoidsTheBusyReplica) {
    const std::vector<ServingRequest> q{{0, 1000, 100, nullptr}, {0, 10, 10, nullptr}, {0, 10, 10, nullptr}};
    const ServingResult lot = dp_run(q, 2, RouterPolicy::LEAST_OUTSTANDING_TOKENS);
    EXPECT_EQ(lot.requests[0].replica, 0);  // a tie: the lowest index
    EXPECT_EQ(lot.requests[1].replica, 1);
    EXPECT_EQ(lot.requests[2].replica, 1);  // 1100 outstanding tokens against 20
    EXPECT_EQ(lot.replicas[0].requests, 1);
    EXPECT_EQ(lot.replicas[1].requests, 2);
    const ServingResult rr = dp_run(q, 2, RouterPolicy::ROUND_ROBIN);
    EXPECT_EQ(rr.requests[2].replica, 0);
}

// Four system prompts of 256 tokens, requests of each in random order; two replicas whose pools
// cannot keep all four prefixes cached while serving. Prefix affinity keeps each prefix on one
// replica, so more prompt tokens come from the prefix cache than under round robin.
TEST(ServingCluster, PrefixAffinityRaisesPrefixCacheHits) {
    const int64_t shared = 256, n_req = 400;
    std::vector<ServingRequest> q = poisson(n_req, 20, shared + 64, 16, 3);
    std::mt19937_64 rng(11);
    int32_t next = 1'000'000;
    for (ServingRequest& r : q) {
        const int32_t g = int32_t(rng() % 4);
        auto t = std::make_shared<std::vector<int32_t>>();
        for (int64_t k = 0; k < shared; ++k) t->push_back(g * 10000 + int32_t(k));
        for (int64_t k = shared; k < r.prompt_tokens; ++k) t->push_back(next++);
        r.tokens = std::move(t);
    }
    // 48 blocks of 16 tokens per replica: two prefixes (32 blocks) and a few running requests.
    const ServingSummary rr = summarize(dp_run(q, 2, RouterPolicy::ROUND_ROBIN, 48, true), {});
    const ServingResult pa_res = dp_run(q, 2, RouterPolicy::PREFIX_AFFINITY, 48, true);
    const ServingSummary pa = summarize(pa_res, {});
    ASSERT_EQ(rr.completed, n_req);
    EXPECT_GT(double(pa.cached_prompt_tokens), 1.5 * double(rr.cached_prompt_tokens))
        << pa.cached_prompt_tokens << " vs " << rr.cached_prompt_tokens;
    // Both replicas still take work (affinity is not "everything to replica 0").
    EXPECT_GT(pa_res.replicas[0].requests, n_req / 5);
    EXPECT_GT(pa_res.replicas[1].requests, n_req / 5);
}

// Prefix affinity follows the longest prefix sent before (an agent session's transcript, not just
// the system prompt every session shares) and leaves an overloaded holder for the least loaded.
TEST(ServingCluster, PrefixAffinityFollowsTheLongestPrefixUnlessOverloaded) {
    auto req = [](std::vector<int32_t> t) {
        ServingRequest q{0, int64_t(t.size()), 4, nullptr};
        q.tokens = std::make_shared<std::vector<int32_t>>(std::move(t));
        return q;
    };
    const std::vector<int32_t> sys{1, 2, 3, 4, 5, 6, 7, 8}, a{11, 12, 13, 14}, b{21, 22, 23, 24}, c{31, 32, 33, 34};
    auto cat = [](std::initializer_list<std::vector<int32_t>> parts) {
        std::vector<int32_t> out;
        for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
        return out;
    };
    Router r(RouterPolicy::PREFIX_AFFINITY, 2, 4);
    EXPECT_EQ(r.pick(req(cat({sys, a})), std::vector<int64_t>{0, 0}), 0);  // nothing held: the lightest (a tie)
    // sys is held by replica 0, but it has more than 2 x 0 + 16 outstanding tokens: the lightest.
    EXPECT_EQ(r.pick(req(cat({sys, b})), std::vector<int64_t>{17, 0}), 1);
    // sys was last sent to replica 1, sys + a to replica 0: the longer prefix wins.
    EXPECT_EQ(r.pick(req(cat({sys, a, c})), std::vector<int64_t>{16, 0}), 0);
    EXPECT_EQ(r.pick(req(cat({sys, c})), std::vector<int64_t>{10, 0}), 0);  // sys: last sent to 0 just now
    Router lot(RouterPolicy::LEAST_OUTSTANDING_TOKENS, 2, 4);
    EXPECT_EQ(lot.pick(req(cat({sys, a, c})), std::vector<int64_t>{16, 0}), 1);
}

TEST(ServingCluster, RouterNamesAreCheckedExactly) {
    EXPECT_EQ(router_from_name("prefix_affinity", "--router"), RouterPolicy::PREFIX_AFFINITY);
    try {
        router_from_name("random", "--router");
        FAIL();
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "--router = \"random\" is not a router (allowed: round_robin, least_outstanding_tokens, "
                               "prefix_affinity)");
    }
}

// --- prefill/decode disaggregation -------------------------------------------------------------

constexpr int64_t kPrefillNs = 30'000'000, kDecodeNs = 7'000'000;

struct Disagg {
    sched::BlockPool prefill, decode;
    ReplicaSpec spec;
    explicit Disagg(int64_t decode_blocks = 4096, int64_t prefill_blocks = 4096)
        : prefill(prefill_blocks, 16), decode(decode_blocks, 16) {
        spec.pool = &prefill;
        spec.timer = [](const sched::Step& st, int64_t) {
            EXPECT_GT(st.prefill_tokens(), 0);  // the prefill instance never decodes
            return kPrefillNs;
        };
        spec.decode_pool = &decode;
        spec.decode_timer = [](const sched::Step& st, int64_t) {
            EXPECT_EQ(st.prefill_tokens(), 0);  // nor does the decode instance prefill
            return kDecodeNs;
        };
        spec.link.bandwidth_gbps = 56;  // configs/hw/links.toml hccs_910b
        spec.link.latency_ns = 1000;
        spec.link.per_transfer_ns = 2000;
        spec.kv_bytes_per_token = 2 * 32 * 32 * 128 * 2;  // llama2-7b fp16: K and V, 32 layers, 32 heads of 128
    }
    ServingResult run(const std::vector<ServingRequest>& q) {
        Router router(RouterPolicy::ROUND_ROBIN, 1, 16);
        return run_cluster(q, opts(), std::span<const ReplicaSpec>(&spec, 1), router);
    }
};

// One request: TTFT = prefill + KV transfer (bytes / bandwidth + latency + per-transfer cost);
// every later token one decode step.
TEST(ServingDisagg, LightLoadIsPrefillPlusTransferThenDecodeSteps) {
    Disagg d;
    const int64_t prompt = 500, out = 20;
    const ServingResult r = d.run({{0, prompt, out, nullptr}});
    const double bytes = double(prompt) * 2 * 32 * 32 * 128 * 2;
    const int64_t xfer = std::llround(bytes / 56.0 + 1000 + 2000);
    const RequestOutcome& o = r.requests[0];
    EXPECT_EQ(o.kv_transfer_ns, xfer);
    EXPECT_EQ(o.ttft_ns, kPrefillNs + xfer);
    EXPECT_EQ(o.e2e_ns, kPrefillNs + xfer + (out - 1) * kDecodeNs);
    EXPECT_DOUBLE_EQ(o.tpot_ns(), double(kDecodeNs));
    EXPECT_EQ(r.replicas[0].prefill.steps, 1);
    EXPECT_EQ(r.replicas[0].decode.steps, out - 1);
    EXPECT_EQ(r.replicas[0].kv_transfers, 1);
    EXPECT_EQ(r.replicas[0].kv_transfer_bytes, uint64_t(bytes));
    EXPECT_EQ(r.replicas[0].link_busy_ns, xfer);
}

// Three prompts prefilled in one step queue on the link: the k-th KV arrives k transfers later.
TEST(ServingDisagg, TransfersQueueOnTheLink) {
    Disagg d;
    const ServingResult r = d.run(std::vector<ServingRequest>(3, ServingRequest{0, 100, 4, nullptr}));
    const int64_t xfer = std::llround(100.0 * 2 * 32 * 32 * 128 * 2 / 56.0 + 3000);
    for (int k = 0; k < 3; ++k) {
        EXPECT_EQ(r.requests[size_t(k)].kv_transfer_ns, (k + 1) * xfer) << k;
        EXPECT_EQ(r.requests[size_t(k)].ttft_ns, kPrefillNs + (k + 1) * xfer) << k;
    }
    EXPECT_EQ(r.replicas[0].link_busy_ns, 3 * xfer);
}

// A one-token request ends on the prefill instance: nothing crosses the link.
TEST(ServingDisagg, OneTokenRequestsEndOnThePrefillInstance) {
    Disagg d;
    const ServingResult r = d.run({{0, 100, 1, nullptr}});
    EXPECT_EQ(r.requests[0].ttft_ns, kPrefillNs);
    EXPECT_EQ(r.requests[0].e2e_ns, kPrefillNs);
    EXPECT_EQ(r.replicas[0].kv_transfers, 0);
    EXPECT_EQ(r.replicas[0].decode.steps, 0);
}

// A decode pool with room for one sequence: the second request's KV arrives but waits on the
// decode side until the first finishes (a queue there too); no prompt is recomputed.
TEST(ServingDisagg, TheDecodeSideQueuesWhenItsPoolIsFull) {
    Disagg d(/*decode_blocks=*/8);  // 128 tokens: one sequence of 100 + 10
    const int64_t out = 10;
    const ServingResult r = d.run(std::vector<ServingRequest>(2, ServingRequest{0, 100, out, nullptr}));
    const int64_t xfer = std::llround(100.0 * 2 * 32 * 32 * 128 * 2 / 56.0 + 3000);
    EXPECT_EQ(r.requests[0].e2e_ns, kPrefillNs + xfer + (out - 1) * kDecodeNs);
    EXPECT_EQ(r.requests[1].ttft_ns, kPrefillNs + 2 * xfer);
    // It starts decoding when the first one's last step ends.
    EXPECT_EQ(r.requests[1].e2e_ns, r.requests[0].e2e_ns + (out - 1) * kDecodeNs);
    EXPECT_EQ(r.replicas[0].decode.steps, 2 * (out - 1));
    EXPECT_EQ(r.preemptions, 0u);
}

// The second request's KV fits the decode pool's free blocks but its first decode token does
// not: the admission gives the blocks back and the KV waits for room, to be attached later (not
// recomputed: the decode timer would see a prompt chunk).
TEST(ServingDisagg, KvThatFitsWithoutItsNextTokenWaitsAndIsNotRecomputed) {
    Disagg d(/*decode_blocks=*/13);  // the first holds 7-8 blocks of 16 tokens; 96 tokens are 6 blocks
    const int64_t out = 20;
    const ServingResult r = d.run(std::vector<ServingRequest>(2, ServingRequest{0, 96, out, nullptr}));
    EXPECT_EQ(r.replicas[0].decode.steps, 2 * (out - 1));
    EXPECT_EQ(r.requests[1].e2e_ns, r.requests[0].e2e_ns + (out - 1) * kDecodeNs);
    EXPECT_EQ(r.preemptions, 0u);
}

// A prefill pool with room for one prompt: the second prompt's prefill waits until the first's KV
// has crossed the link (the prefill instance holds it until then).
TEST(ServingDisagg, ThePrefillSideHoldsTheKvUntilItIsSent) {
    Disagg d(/*decode_blocks=*/4096, /*prefill_blocks=*/7);  // 112 tokens: one prompt of 100 + 1
    const ServingResult r = d.run(std::vector<ServingRequest>(2, ServingRequest{0, 100, 4, nullptr}));
    const int64_t xfer = std::llround(100.0 * 2 * 32 * 32 * 128 * 2 / 56.0 + 3000);
    EXPECT_EQ(r.requests[0].ttft_ns, kPrefillNs + xfer);
    EXPECT_EQ(r.requests[1].queue_ns, kPrefillNs + xfer);
    EXPECT_EQ(r.requests[1].ttft_ns, 2 * kPrefillNs + 2 * xfer);
}

// The machine of `--npus 2 --pims 1` split into the prefill instance (npu1 alone) and the decode
// instance (npu0 + pim0): devices, links re-indexed, per-NPU memory.
TEST(ServingDisagg, InstanceHardwareKeepsItsDevicesLinksAndMemoryShare) {
    sim::SimHardware hw;
    sim::SimLink hccs;
    hccs.preset = "hccs_910b";
    hccs.bandwidth_gbps = 56;
    hw.add_device(sim::DeviceKind::NPU, nullptr);
    hw.add_device(sim::DeviceKind::NPU, nullptr, hccs);
    hw.add_device(sim::DeviceKind::PIM, nullptr);  // shared memory with npu0
    hw.add_mesh(sim::DeviceKind::NPU, hccs);
    hw.mem_capacity_bytes = 128ull << 30;
    hw.mem_bw_gbps = 3200;
    hw.pim_internal_bw_gbps = 1000;
    const sim::SimHardware pre = instance_hardware(hw, {1});
    ASSERT_EQ(pre.devices.size(), 1u);
    EXPECT_EQ(pre.devices[0].name, "npu1");
    EXPECT_EQ(pre.devices[0].link, -1);
    EXPECT_TRUE(pre.links.empty());
    EXPECT_EQ(pre.mem_capacity_bytes, 64ull << 30);
    EXPECT_DOUBLE_EQ(pre.mem_bw_gbps, 1600);
    EXPECT_DOUBLE_EQ(pre.pim_internal_bw_gbps, 0);
    const sim::SimHardware dec = instance_hardware(hw, {0, 2});
    ASSERT_EQ(dec.devices.size(), 2u);
    EXPECT_EQ(dec.devices[1].name, "pim0");
    ASSERT_EQ(dec.links.size(), 1u);
    EXPECT_EQ(dec.links[0].end_a, 1);
    EXPECT_EQ(dec.links[0].end_b, 0);
    EXPECT_TRUE(dec.links[0].shared_memory);
    EXPECT_EQ(dec.devices[1].link, 0);
    EXPECT_EQ(dec.mem_capacity_bytes, 64ull << 30);
    EXPECT_DOUBLE_EQ(dec.pim_internal_bw_gbps, 1000);
    // The KV link of the disaggregated pair is the topology's npu1-npu0 link.
    EXPECT_EQ(hw.path(1, 0).preset, "hccs_910b");
}

// --tp 2 --dp 2 on --npus 4 --pims 2 (and the disaggregated pair on --npus 8): replica r takes
// NPUs 2r and 2r+1 and PIM device r, which hangs off its group's first NPU by a copy of its link,
// so every group is wired like the first; the wrong counts are refused naming the flags.
TEST(ServingLayout, TensorParallelReplicasAreGroupsWiredLikeTheFirst) {
    sim::SimLink hccs, cxl;
    hccs.preset = "hccs_910b";
    hccs.bandwidth_gbps = 56;
    cxl.preset = "cxl2_x16";
    cxl.bandwidth_gbps = 63;
    auto machine = [&](int npus, int pims) {
        sim::SimHardware hw;
        for (int i = 0; i < npus; ++i) hw.add_device(sim::DeviceKind::NPU, nullptr, hccs);
        for (int i = 0; i < pims; ++i) hw.add_device(sim::DeviceKind::PIM, nullptr, cxl);
        hw.add_mesh(sim::DeviceKind::NPU, hccs);
        hw.mem_capacity_bytes = uint64_t(npus) * (64ull << 30);
        hw.pim_internal_bw_gbps = 1000.0 * pims;
        return hw;
    };
    const sim::SimHardware hw = machine(4, 2);
    const ServingLayout lay = serving_layout(hw, 2, 2, false);
    EXPECT_TRUE(lay.split);
    ASSERT_EQ(lay.replica_devices.size(), 2u);
    EXPECT_EQ(lay.replica_devices[0], "npu0 + npu1 + pim0");
    EXPECT_EQ(lay.replica_devices[1], "npu2 + npu3 + pim1");
    const sim::SimHardware g1 = instance_hardware(hw, {2, 3, 5});
    ASSERT_EQ(g1.devices.size(), 3u);
    for (const sim::SimHardware* g : {&lay.colocated_hw, &g1}) {
        ASSERT_EQ(g->links.size(), 2u);  // the NPU pair's mesh link, the PIM device's link to the group's host
        EXPECT_EQ(g->links[0].preset, "hccs_910b");
        EXPECT_EQ(g->devices[2].link, 1);
        EXPECT_EQ(g->links[1].preset, "cxl2_x16");
        EXPECT_EQ(g->links[1].end_a, 2);
        EXPECT_EQ(g->links[1].end_b, 0);
        EXPECT_EQ(g->mem_capacity_bytes, 128ull << 30);
        EXPECT_DOUBLE_EQ(g->pim_internal_bw_gbps, 1000);
    }
    EXPECT_EQ(g1.links[1].name, "pim1-npu2");

    const sim::SimHardware hw8 = machine(8, 2);
    const ServingLayout dis = serving_layout(hw8, 2, 2, true);
    EXPECT_EQ(dis.prefill_devices(), "npu2 + npu3");
    EXPECT_EQ(dis.decode_devices(), "npu0 + npu1 + pim0");
    EXPECT_EQ(dis.replica_devices[1], "npu6 + npu7 -> npu4 + npu5 + pim1");
    EXPECT_EQ(dis.kv_link.name, "npu2-npu0");  // the mesh link between the groups' first NPUs

    auto error_of = [](auto f) {
        try {
            f();
        } catch (const Error& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    EXPECT_EQ(error_of([&] { serving_layout(machine(3, 2), 2, 2, false); }),
              "--tp 2 --dp 2 with 3 NPU(s): each replica is a tensor-parallel group of 2 NPUs (allowed: --npus 4, or "
              "[topology] npus = 4)");
    EXPECT_EQ(error_of([&] { serving_layout(hw, 2, 2, true); }),
              "--tp 2 --dp 2 --disaggregate with 4 NPU(s): each replica is a prefill group and a decode group of 2 "
              "NPUs each (allowed: --npus 8, or [topology] npus = 8)");
    EXPECT_EQ(error_of([&] { serving_layout(machine(4, 1), 2, 2, false); }),
              "--pims 1 with --tp 2 --dp 2: each replica takes an equal share of the PIM devices (allowed: --pims a "
              "multiple of 2, or [topology] pims = a multiple of 2)");
}

// Pipeline parallelism as vLLM's virtual engines: two engines over their own pools, a step of
// 10 ms (every stage) holding the pipeline's entry for 5 ms (its slowest stage).
struct Pipelined {
    sched::BlockPool pool0{1024, 16}, pool1{1024, 16};
    ReplicaSpec spec;
    std::vector<int64_t> starts;  // every step's start, in order
    explicit Pipelined(StepTimer timer, StepTimer issue) {
        spec.pool = &pool0;
        spec.timer = timer;
        spec.engine_pools = {&pool1};
        spec.engine_timers = {timer};
        spec.issue = std::move(issue);
    }
    ServingResult run(const std::vector<ServingRequest>& q, sched::SchedulerOptions o = opts()) {
        Router router(RouterPolicy::ROUND_ROBIN, 1, 16);
        return run_cluster(q, o, std::span<const ReplicaSpec>(&spec, 1), router,
                           [this](InstanceRef, int64_t t, const std::vector<int64_t>&, const sched::Step& st,
                                  const sched::Scheduler&, const sched::KvPool&) {
                               if (!st.chunks.empty()) starts.push_back(t);
                           });
    }
};

// Two requests at once go to the two engines (the fewest unfinished, ties to engine 0); engine 1's
// first step enters when engine 0's has left the first stage, and each engine's next step
// follows its previous one: steps start every 5 ms, each request's tokens 10 ms apart.
TEST(ServingPipeline, EnginesOverlapTheirStepsByTheEntryTime) {
    Pipelined p([](const sched::Step&, int64_t) { return int64_t(10'000'000); },
                [](const sched::Step&, int64_t) { return int64_t(5'000'000); });
    const ServingResult r = p.run({{0, 100, 3, nullptr}, {0, 100, 3, nullptr}});
    EXPECT_EQ(p.starts, (std::vector<int64_t>{0, 5'000'000, 10'000'000, 15'000'000, 20'000'000, 25'000'000}));
    EXPECT_EQ(r.requests[0].ttft_ns, 10'000'000);
    EXPECT_EQ(r.requests[0].e2e_ns, 30'000'000);
    EXPECT_EQ(r.requests[1].ttft_ns, 15'000'000);
    EXPECT_EQ(r.requests[1].e2e_ns, 35'000'000);
    EXPECT_EQ(r.steps, 6);
    EXPECT_EQ(r.replicas[0].prefill.busy_ns, 6 * 5'000'000);  // the entry's time, not the steps'
    EXPECT_EQ(r.end_ns, 35'000'000);
    // each engine held its own request's blocks in its own pool
    EXPECT_EQ(p.pool0.n_free(), p.pool0.n_blocks());
    EXPECT_EQ(p.pool1.n_free(), p.pool1.n_blocks());
}

// In overload, two engines whose steps hold the entry for half their time finish the same
// stream in about half the time one engine takes with the same step times.
TEST(ServingPipeline, TwoBalancedStagesNearlyDoubleTheThroughputInOverload) {
    const auto q = poisson(2000, 1000, 256, 64, 3);  // far past capacity: full batches throughout
    Pipelined p(linear_step_ns, [](const sched::Step& st, int64_t i) { return linear_step_ns(st, i) / 2; });
    const ServingResult two = p.run(q);
    Replicas one(1, 1024, 16);
    Router router(RouterPolicy::ROUND_ROBIN, 1, 16);
    const ServingResult single = run_cluster(q, opts(), one.specs, router);
    const double speedup = double(single.end_ns) / double(two.end_ns);
    EXPECT_GT(speedup, 1.8);
    EXPECT_LT(speedup, 2.05);
}

}  // namespace
}  // namespace duet::serving
