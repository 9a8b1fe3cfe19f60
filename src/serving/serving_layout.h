#pragma once
// How `duet bench --workload serving` lays its instances over the modelled machine
// (docs/serving.md, "Data-parallel replicas and prefill/decode disaggregation"):
//
//  - tp = 1 (or one colocated instance): the topology is one replica; `--dp N` runs N copies of
//    it. Disaggregated, the topology has 2 NPUs: npu1 prefills, npu0 with every PIM device
//    decodes.
//  - tp > 1 with dp > 1 or disaggregated: the topology is the whole machine, cut into groups of
//    tp NPUs in order. Colocated, replica r is NPUs [r tp, (r+1) tp); disaggregated, its decode
//    group is NPUs [2r tp, (2r+1) tp) and its prefill group the next tp. The PIM devices are
//    shared out in order, P / dp to each replica (to its decode group when disaggregated), so
//    tensor-parallel rank q of a group computes on the group's q-th PIM device as in
//    sim/scale_out.h; a PIM device hangs off its group's first NPU (serving/instance_hw.h).
//    The NPUs must number dp x tp (x 2 disaggregated) and the PIM devices a multiple of dp.
//  - ep > 1 (expert parallelism): an instance is an expert-parallel group of g =
//    graph::stage_ranks(tp, ep) = ep NPUs (tp dividing ep), cut as the tensor-parallel groups
//    above: replica r is NPUs [r g, (r+1) g) with its share of the PIM devices, EP rank q on the
//    group's q-th NPU and PIM device. Not disaggregated.
//  - pp > 1 (pipeline stages): one colocated replica on the whole topology, its pp virtual
//    engines (serving/serving_cluster.h); not with dp > 1 or disaggregated.
//  Every replica's groups are wired alike (the NPU mesh is one preset, the PIM links another),
//  so replica 0's instances time every replica's steps: one step-cost model and cache per side.
//
// The KV of a disaggregated prompt crosses from the prefill group to the decode group. With tp
// ranks per group, prefill rank q sends its shard of the KV heads to decode rank q; the NPUs
// are a full mesh (docs/topology.md), so the tp sends run at once, each on its own link of the
// same preset. The transfer is therefore modelled as one shard (kv_rank_bytes_per_token,
// serving/kv_capacity.h) over the link between the groups' first NPUs (kv_link); tp 1: the
// whole KV over npu1-npu0.
// Thread safety: pure function; the result points to the same device models as `hw`.
#include <string>
#include <vector>

#include "sim/hardware.h"

namespace duet::serving {

struct ServingLayout {
    int dp = 1, tp = 1, pp = 1, ep = 1;
    bool disaggregated = false;
    bool split = false;  // the topology is cut into groups (else each replica is a copy of it)
    // Replica 0's instances: the colocated one, or the prefill and decode ones.
    sim::SimHardware colocated_hw, prefill_hw, decode_hw;
    sim::SimLink kv_link;                    // prefill group's first NPU -> decode group's (disaggregated)
    std::vector<std::string> replica_devices;  // per replica: "npu2 + npu3 + pim1" (split), or one "" per copy
    // Decode group's devices, "npu0 + pim0" (disaggregated, replica 0).
    std::string decode_devices() const;
    std::string prefill_devices() const;
};

// Throws duet::Error naming the flags when the topology does not fit the layout (see above).
ServingLayout serving_layout(const sim::SimHardware& hw, int dp, int tp, bool disaggregate, int pp = 1, int ep = 1);

}  // namespace duet::serving
