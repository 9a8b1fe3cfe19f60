#pragma once
// Tensor and pipeline parallelism in the simulator (docs/scale-out.md "Modelled"): how the
// machine is split into ranks, how a parallel run is planned, and the bookkeeping of exposed
// communication. The timeline (sim/timeline.h) runs the ranks; collectives are priced by
// sim/collective.h over the links between the ranks' devices.
//
// Ranks: tp x pp of them, rank q = stage * tp + r (r = tensor-parallel rank). Rank q computes
// on the q-th NPU and the q-th PIM device; when a kind has fewer devices than ranks, ranks
// share them (device q mod count: `--npus 1 --pims 8 --tp 8` puts every rank's norms on npu0
// and its matmuls on its own PIM device). Each rank sees a sub-machine of its NPU (host) and
// PIM device, with the PIM device's own link, and places its operators there as one machine
// would (sim/placement.h). A machine with a host CPU (cpu0, present for placement pim_only) gives
// every rank's sub-machine that CPU too (ranks share it in turn), so pim_only ranks run their
// norms and other non-PIM operators on it and never on their NPU.
// Thread safety: pure functions and plain values.
#include <vector>

#include "graph/graph.h"
#include "sim/collective.h"
#include "sim/hardware.h"
#include "sim/planner.h"

namespace duet::sim {

struct RankMachine {
    int stage = 0, rank = 0;      // pipeline stage, tensor-parallel rank
    int npu = 0;                  // its NPU (index into the whole machine's devices)
    int pim = -1;                 // its PIM device (-1: none)
    SimHardware hw;               // its view: devices[0] = its NPU, devices[1] = its PIM device
    std::vector<int> device_map;  // hw.devices index -> whole machine's index
    std::vector<int> link_map;    // hw.links index -> whole machine's index
};

// The machine split into tp * pp ranks (tp = pp = 1: one rank that is the whole machine, maps
// the identity). Throws duet::Error when tp or pp is below 1.
std::vector<RankMachine> split_machine(const SimHardware& hw, int tp, int pp);

// The device a rank's messages leave from after running on `device`: a PIM device inside its
// NPU's memory (shared-memory link) communicates through that NPU.
int comm_device(const SimHardware& hw, const RankMachine& m, int device);

// FlashComm (vllm-ascend VLLM_ASCEND_ENABLE_FLASHCOMM): after each REDUCE_SCATTER the
// residual ADD and the next RMSNORM run on the rank's 1/tp of the token rows (rounded up), and
// the ALL_GATHER moves after that norm (it gathers the normed rows the matmuls read). A
// reduce-scatter not followed by add + norm of the same rows (the last layer before the output
// norm) keeps its all-gather where it is. In place on the records of every forward.
void apply_flashcomm(OpTrace& ops, int tp);

// A parallel generation: stage 0's plan, with stages 1..pp-1 in Plan::next_stages; every plan
// is tensor-parallel rank 0's graph (the ranks' shards are equal up to one ff_align block)
// over batch / micro_batches sequences; under expert parallelism (go.ep, go.tp 1) EP rank 0's graph
// over its share of them, ⌈batch / micro_batches / ep⌉ (the largest: the all-to-alls wait for it;
// sim/expert_load.h prices each rank's experts); with go.tp == go.ep rank 0's graph over all of them. FlashComm (go.flashcomm) rewrites the records as above.
// Throws duet::Error when micro_batches does not divide the batch, or for a split the shape
// does not allow (graph/parallel.h).
Plan plan_parallel_generation(const ModelShape& shape, int64_t seq_len, int64_t gen_len, int32_t batch,
                              const graph::GraphOptions& go, int micro_batches);

// One collective among `devices` (one per rank, in rank order; repeats allowed: ranks sharing
// a device exchange through its memory) over the links between them (SimHardware::path): the
// ring around the ranks in order (all-to-all: the pairwise exchange over every pair), or the one-shot mesh when every pair is joined directly or
// shares memory, or the multicast algorithm when every pair is joined through a multicasting
// switch, whichever is fastest (best_collective). A step lasts as long as the slowest
// link it uses. `links`: the machine's links the chosen algorithm occupies.
struct PricedCollective {
    CollectiveTime time;
    std::vector<int> links;
};
PricedCollective price_collective(const SimHardware& hw, CollectiveKind kind, const std::vector<int>& devices,
                                  double n_bytes, const ExpansionCost& launch);

// Time covered by a set of intervals, and the part of it not covered by another set.
struct Intervals {
    std::vector<std::pair<double, double>> spans;
    void add(double begin, double end) {
        if (end > begin) spans.push_back({begin, end});
    }
    // Length of the union of this set minus the union of `cover`.
    double uncovered_by(Intervals cover) const;  // sorts copies when not in order
};

}  // namespace duet::sim
