#include "sim/collective.h"

#include "core/error.h"

namespace duet::sim {

const char* collective_kind_name(CollectiveKind k) {
    switch (k) {
        case CollectiveKind::ALL_REDUCE: return "all_reduce";
        case CollectiveKind::REDUCE_SCATTER: return "reduce_scatter";
        case CollectiveKind::ALL_GATHER: return "all_gather";
        case CollectiveKind::ALL_TO_ALL: return "all_to_all";
        case CollectiveKind::POINT_TO_POINT: return "point_to_point";
    }
    return "?";
}

const char* collective_algo_name(CollectiveAlgo a) {
    switch (a) {
        case CollectiveAlgo::RING: return "ring";
        case CollectiveAlgo::MESH: return "mesh";
        case CollectiveAlgo::PAIRWISE: return "pairwise";
    }
    return "?";
}

const char* expansion_mode_name(ExpansionMode m) {
    switch (m) {
        case ExpansionMode::AI_CPU: return "AI_CPU";
        case ExpansionMode::AIV: return "AIV";
        case ExpansionMode::HOST: return "HOST";
        case ExpansionMode::HOST_TS: return "HOST_TS";
    }
    return "?";
}

ExpansionMode expansion_mode_from_name(const std::string& name, const std::string& where) {
    for (ExpansionMode m : {ExpansionMode::AI_CPU, ExpansionMode::AIV, ExpansionMode::HOST, ExpansionMode::HOST_TS})
        if (name == expansion_mode_name(m)) return m;
    fail("{} = \"{}\" is not an HCCL expansion mode (allowed: AI_CPU, AIV, HOST, HOST_TS)", where, name);
}

namespace {

// Steps and bytes per link per step (Thakur, Rabenseifner & Gropp 2005, sections 4.1-4.5).
void steps_of(CollectiveKind kind, CollectiveAlgo algo, int p, double n, int& steps, double& bytes) {
    const double share = n / double(p);
    if (kind == CollectiveKind::POINT_TO_POINT) {
        steps = 1;
        bytes = n;
        return;
    }
    if (algo == CollectiveAlgo::MESH) {
        steps = 1;
        bytes = kind == CollectiveKind::ALL_REDUCE ? n : share;
        return;
    }
    steps = kind == CollectiveKind::ALL_REDUCE ? 2 * (p - 1) : p - 1;  // ring or pairwise
    bytes = share;
}

}  // namespace

CollectiveTime collective_time(CollectiveKind kind, CollectiveAlgo algo, int p, double n_bytes, const SimLink& link,
                               const ExpansionCost& launch) {
    DUET_CHECK(p >= 1 && n_bytes >= 0, "collective: p {} n_bytes {}", p, n_bytes);
    CollectiveTime t;
    t.algo = algo;
    if (p == 1) return t;
    steps_of(kind, algo, p, n_bytes, t.steps, t.step_bytes);
    if (!link.shared_memory)
        t.link_ns = t.steps * (link.latency_ns + link.per_transfer_ns + t.step_bytes / link.bandwidth_gbps);
    t.launch_ns = launch.launch_ns + t.steps * launch.per_step_ns;
    return t;
}

CollectiveTime best_collective(CollectiveKind kind, int p, double n_bytes, const SimLink& link, bool full_mesh,
                               const ExpansionCost& launch) {
    const CollectiveAlgo stepwise = kind == CollectiveKind::ALL_TO_ALL ? CollectiveAlgo::PAIRWISE : CollectiveAlgo::RING;
    const CollectiveTime ring = collective_time(kind, stepwise, p, n_bytes, link, launch);
    if (!full_mesh) return ring;
    const CollectiveTime mesh = collective_time(kind, CollectiveAlgo::MESH, p, n_bytes, link, launch);
    return mesh.total_ns() <= ring.total_ns() ? mesh : ring;
}

}  // namespace duet::sim
