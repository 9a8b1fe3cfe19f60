#pragma once
// Collective communication over the topology's links: the alpha-beta model of Thakur,
// Rabenseifner & Gropp, "Optimization of Collective Communication Operations in MPICH"
// (IJHPCA 19(1), 2005), plus the launch cost of HCCL's expansion modes (docs/scale-out.md).
//
// One message of b bytes over a link costs alpha + b / beta, alpha = the link's latency_ns +
// per_transfer_ns, beta = bandwidth_gbps (bytes per ns) per direction; every link is full
// duplex and a step moves one message over each link used, all links at once. For p ranks
// each holding n bytes (all-reduce: the vector summed; reduce-scatter: its input; all-gather:
// its output; all-to-all: p x the largest message one rank sends one peer — with uniform
// routing its send buffer, of which (p-1)/p leaves the device; point-to-point: the message):
//   ring  all-reduce      2(p-1) steps of n/p  (reduce-scatter then all-gather around the ring)
//         reduce-scatter   (p-1) steps of n/p
//         all-gather       (p-1) steps of n/p
//   pairwise all-to-all    (p-1) steps of n/p  (HCCL's pairwise exchange: in step i rank r
//                                               sends rank r+i its share; every pair is used once)
//   mesh  all-reduce      1 step of n          (one-shot: every rank sends its whole vector to
//                                               every peer at once, each reduces locally)
//         reduce-scatter   1 step of n/p       (each rank sends peer j its j-th share)
//         all-gather       1 step of n/p
//         all-to-all       1 step of n/p
//   point-to-point        1 step of n (p = 2)
//   multicast all-reduce  2 steps: the p-1 other ranks' shares of n/p gathered into one rank (its
//         all-gather       port carries p-1 messages), then one multicast of the whole n (the switch
//                          copies it to every port). A link whose fabric multicasts only (CENT's
//                          CXL switch: cent_simulation/cxl_latency.py, an "embedding gather" and an
//                          "embedding broadcast" per reduction).
// Over a switched link (SimLink::switched: the link is a device's one port to a switch) a mesh
// step carries the p-1 messages a rank receives from its peers one after another on that port;
// a ring or pairwise step one message. Every message is framed into flits when the link says so
// (SimLink::wire_bytes), and every step pays the link's latency once.
// Mesh needs a direct link between every pair (a full mesh: the Atlas 800T A2's 8 HCCS-joined
// 910B); ring only neighbour links; pairwise any path between every pair (a pair without a
// direct link goes through npu0), each step as slow as the slowest pair. All-to-all takes
// pairwise in place of ring (a ring would forward every share through p-1 hops). The reduction's arithmetic (n/p adds per step on the
// vector units) is not charged: far below the link term at these sizes (assumption).
// A shared-memory link moves nothing: only the launch is charged.
// Launch: HCCL_OP_EXPANSION_MODE decides where the algorithm is expanded into tasks (AI CPU,
// vector cores, host, host + device task scheduler); its cost is launch_ns once plus
// per_step_ns per step, from configs/hw/collectives.toml (assumptions; see that file).
// Thread safety: pure functions.
#include <string>

#include "sim/hardware.h"

namespace duet::sim {

enum class CollectiveKind { ALL_REDUCE, REDUCE_SCATTER, ALL_GATHER, ALL_TO_ALL, POINT_TO_POINT };
enum class CollectiveAlgo { RING, MESH, PAIRWISE, MULTICAST };  // PAIRWISE: all-to-all only; MULTICAST:
                                                                 // all-reduce and all-gather on a multicast link
enum class ExpansionMode { AI_CPU, AIV, HOST, HOST_TS };

const char* collective_kind_name(CollectiveKind k);  // "all_reduce", ...
const char* collective_algo_name(CollectiveAlgo a);  // "ring", "mesh", "pairwise", "multicast"
const char* expansion_mode_name(ExpansionMode m);    // "AI_CPU", "AIV", "HOST", "HOST_TS"
// Throws duet::Error "<where> = \"x\" is not an HCCL expansion mode (allowed: AI_CPU, AIV, HOST, HOST_TS)".
ExpansionMode expansion_mode_from_name(const std::string& name, const std::string& where);

struct ExpansionCost {
    ExpansionMode mode = ExpansionMode::HOST;
    double launch_ns = 0;    // once per collective
    double per_step_ns = 0;  // per algorithm step (a task issued per step)
};
// load_expansion_cost (sim/topology.h) reads them from configs/hw/collectives.toml.

struct CollectiveTime {
    CollectiveAlgo algo = CollectiveAlgo::RING;
    int steps = 0;
    double step_bytes = 0;  // payload one link carries in one step (per direction; multicast: the mean of its two)
    double link_ns = 0;     // the steps' alpha + wire bytes / beta, summed; 0 over shared memory
    double launch_ns = 0;   // ExpansionCost launch_ns + steps * per_step_ns
    double total_ns() const { return link_ns + launch_ns; }
};

// The time of one collective of `kind` with algorithm `algo` among `p` ranks of `n_bytes` each
// over `link`. p == 1 costs nothing. Point-to-point ignores `algo` (one message).
CollectiveTime collective_time(CollectiveKind kind, CollectiveAlgo algo, int p, double n_bytes, const SimLink& link,
                               const ExpansionCost& launch);

// Whether `algo` applies to `kind` over `link` (MULTICAST: all-reduce or all-gather on a multicast link).
bool collective_algo_applies(CollectiveKind kind, CollectiveAlgo algo, const SimLink& link);

// HCCL-style choice: mesh when every pair of ranks is linked (`full_mesh`) and mesh is not
// slower than ring; ring otherwise; on a multicast link the multicast algorithm when it is faster.
CollectiveTime best_collective(CollectiveKind kind, int p, double n_bytes, const SimLink& link, bool full_mesh,
                               const ExpansionCost& launch);

}  // namespace duet::sim
