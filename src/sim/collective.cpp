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
        case CollectiveAlgo::MULTICAST: return "multicast";
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

// Multicast: the shares gathered into one rank's port, then the whole vector multicast from it.
void multicast_time(int p, double n, const SimLink& link, CollectiveTime& t) {
    const double share = n / double(p);
    t.steps = 2;
    t.step_bytes = ((p - 1) * share + n) / 2;
    if (link.shared_memory) return;
    const double wire = (p - 1) * link.wire_bytes(share) + link.wire_bytes(n);
    t.link_ns = 2 * (link.latency_ns + link.per_transfer_ns) + wire / link.bandwidth_gbps;
}

}  // namespace

bool collective_algo_applies(CollectiveKind kind, CollectiveAlgo algo, const SimLink& link) {
    if (algo != CollectiveAlgo::MULTICAST) return true;
    return link.multicast && (kind == CollectiveKind::ALL_REDUCE || kind == CollectiveKind::ALL_GATHER);
}

CollectiveTime collective_time(CollectiveKind kind, CollectiveAlgo algo, int p, double n_bytes, const SimLink& link,
                               const ExpansionCost& launch) {
    DUET_CHECK(p >= 1 && n_bytes >= 0, "collective: p {} n_bytes {}", p, n_bytes);
    CollectiveTime t;
    t.algo = algo;
    if (p == 1) return t;
    DUET_CHECK(link.shared_memory || collective_algo_applies(kind, algo, link), "collective: {} {} over link {}", collective_kind_name(kind),
               collective_algo_name(algo), link.preset);
    if (algo == CollectiveAlgo::MULTICAST) {
        multicast_time(p, n_bytes, link, t);
    } else {
        steps_of(kind, algo, p, n_bytes, t.steps, t.step_bytes);
        // a mesh step over a switch port: the p-1 peers' messages one after another
        const int messages = link.switched && algo == CollectiveAlgo::MESH && kind != CollectiveKind::POINT_TO_POINT ? p - 1 : 1;
        if (!link.shared_memory)
            t.link_ns = t.steps * (link.latency_ns + link.per_transfer_ns +
                                   messages * link.wire_bytes(t.step_bytes) / link.bandwidth_gbps);
    }
    t.launch_ns = launch.launch_ns + t.steps * launch.per_step_ns;
    return t;
}

CollectiveTime best_collective(CollectiveKind kind, int p, double n_bytes, const SimLink& link, bool full_mesh,
                               const ExpansionCost& launch) {
    const CollectiveAlgo stepwise = kind == CollectiveKind::ALL_TO_ALL ? CollectiveAlgo::PAIRWISE : CollectiveAlgo::RING;
    CollectiveTime best = collective_time(kind, stepwise, p, n_bytes, link, launch);
    if (full_mesh) {
        const CollectiveTime mesh = collective_time(kind, CollectiveAlgo::MESH, p, n_bytes, link, launch);
        if (mesh.total_ns() <= best.total_ns()) best = mesh;
    }
    if (p > 1 && collective_algo_applies(kind, CollectiveAlgo::MULTICAST, link)) {
        const CollectiveTime mc = collective_time(kind, CollectiveAlgo::MULTICAST, p, n_bytes, link, launch);
        if (mc.total_ns() < best.total_ns()) best = mc;
    }
    return best;
}

}  // namespace duet::sim
