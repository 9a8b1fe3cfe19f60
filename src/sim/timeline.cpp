#include "sim/timeline.h"

#include <algorithm>
#include <map>
#include <memory>
#include <tuple>
#include <typeinfo>

#include <fmt/format.h>

#include "core/error.h"
#include "core/log.h"
#include "graph/parallel.h"
#include "graph/tensor_catalogue.h"
#include "sim/op_shape.h"
#include "sim/scale_out.h"
#include "sim/timeline_conversion.h"
#include "sim/timeline_parts.h"

namespace duet::sim {
namespace {

using detail::CostCache;
using detail::full_switch_conversion_ns;
using detail::op_label;
using detail::per_sequence;

// Q, K, V (and gate, up) read the same normed input and are independent of each other: on
// different devices they overlap; everything else waits for all before it.
bool overlaps_previous(const Plan& plan, size_t i, const ForwardSpan& fw) {
    // The graph marks siblings (same input, no dependency: Q, K, V; gate, up).
    return i > fw.begin && plan.ops[i].sibling_of_prev;
}

// One operator ready to schedule: its parts, each with its device, shape and cost.
struct PreparedPart {
    int device = 0;  // index into the whole machine's devices
    int link = -1;   // the link its inputs and outputs cross (whole machine's index; -1: none)
    hw::OpShape shape;
    hw::Cost cost;
};
struct PreparedOp {
    bool valid = false;
    OpRecord record;  // the record the parts were computed for
    int repeat = 1;   // per_sequence's repeat
    std::vector<PreparedPart> parts;
};

// One rank's chain of operators for one micro-batch (tp = pp = 1: the only lane).
struct Lane {
    const Plan* plan = nullptr;           // its stage's plan
    const RankMachine* machine = nullptr;
    std::unique_ptr<Placer> placer;       // over machine->hw (null: the whole machine's placer)
    double t = 0;                         // completion of its chain so far
    double group_ready = 0;               // inputs of its current sibling group (Q/K/V, gate/up) ready
    int last_device = 0;                  // whole-machine device of its latest operator part
    int rank = 0;                         // its tensor-parallel rank
    std::vector<PreparedOp> prepared;     // by op index within a forward
};

bool is_collective(OpKind k) {
    return k == OpKind::ALL_REDUCE || k == OpKind::REDUCE_SCATTER || k == OpKind::ALL_GATHER || k == OpKind::ALL_TO_ALL;
}

CollectiveKind collective_of(OpKind k) {
    return k == OpKind::ALL_REDUCE       ? CollectiveKind::ALL_REDUCE
           : k == OpKind::REDUCE_SCATTER ? CollectiveKind::REDUCE_SCATTER
           : k == OpKind::ALL_TO_ALL     ? CollectiveKind::ALL_TO_ALL
                                         : CollectiveKind::ALL_GATHER;
}

// An expert group (and its activation) no token reaches on this rank (sim/expert_load.h): nothing runs.
bool empty_expert_group(const OpRecord& r) {
    return r.m == 0 && (r.kind == OpKind::MOE_MATMUL || r.kind == OpKind::SWIGLU);
}

// The scheduler of one run: the state of every queue, and one step per operator.
class Scheduler {
public:
    Scheduler(const ModelShape& shape, const Plan& plan, const Placer& placer, const RunOptions& opts,
              const SimHardware& hw, CostCache* costs)
        : shape_(shape), plan_(plan), placer_(placer), opts_(opts), hw_(hw), own_costs_(hw),
          costs_(costs ? *costs : own_costs_),
          device_free_(hw.devices.size(), 0.0), link_free_(hw.links.size(), 0.0), conv_(hw.devices.size()),
          comm_iv_(hw.devices.size()), busy_iv_(hw.devices.size()) {
        make_lanes();
        for (const SimDevice& d : hw.devices) {
            DeviceStats s;
            s.name = d.name;
            s.kind = d.kind;
            tl_.prefill.device.push_back(s);
        }
        tl_.decode.device = tl_.prefill.device;
        for (const SimLink& l : hw.links) {
            LinkStats ls;
            ls.name = l.name;
            tl_.links.push_back(ls);
        }
        add_tracks();
    }

    Timeline run() {
        int64_t decode_steps = 0;
        for (size_t f = 0; f < plan_.forwards.size(); ++f) {
            const ForwardSpan& fw = plan_.forwards[f];
            recording_ = opts_.record_events &&
                         (fw.phase == Phase::PREFILL || opts_.record_decode_steps < 0 || decode_steps < opts_.record_decode_steps);
            run_forward(f);
            if (fw.phase == Phase::DECODE) ++decode_steps;
        }
        mirror_figures();
        if (!tl_.tbt_ns.empty())
            DUET_LOG_INFO("[{}] decode: {} steps, {:.3f} ms (NPU busy {:.3f} ms, PIM busy {:.3f} ms)",
                          policy_name(opts_.placement.policy), tl_.tbt_ns.size(), tl_.decode.wall_ns / 1e6,
                          tl_.decode.npu().busy_ns / 1e6, tl_.decode.pim().busy_ns / 1e6);
        return std::move(tl_);
    }

private:
    // the ranks of one stage: tensor-parallel, expert-parallel, or tensor-parallel groups tiling them
    int tp() const { return graph::stage_ranks(opts_.parallel.tp, opts_.experts.ep); }
    int pp() const { return opts_.parallel.pp; }
    int micro() const { return opts_.parallel.micro_batches; }
    size_t lane_index(int stage, int rank, int j) const { return (size_t(stage) * size_t(tp()) + size_t(rank)) * size_t(micro()) + size_t(j); }
    Lane& lane(int stage, int rank, int j) { return lanes_[lane_index(stage, rank, j)]; }
    const Placer& placer_of(const Lane& l) const { return l.placer ? *l.placer : placer_; }
    // Ranks whose chains are simulated: rank 0 alone when the others mirror it.
    int ranks_run() const { return mirror_ ? 1 : tp(); }
    // How many ranks' worth a simulated operator's whole-run counters (conversions, prefetch) add.
    double rank_weight() const { return mirror_ ? double(tp()) : 1.0; }

    // One lane per (stage, rank, micro-batch); each rank places on its sub-machine.
    void make_lanes() {
        const ParallelOptions& par = opts_.parallel;
        DUET_CHECK(int(plan_.next_stages.size()) + 1 == par.pp && par.micro_batches >= 1,
                   "timeline: {} stage plans for pp {}", plan_.next_stages.size() + 1, par.pp);
        parallel_ = tp() * par.pp > 1;
        machines_ = split_machine(hw_, tp(), par.pp);
        for (int s = 0; s < par.pp; ++s)
            for (int r = 0; r < tp(); ++r)
                for (int j = 0; j < par.micro_batches; ++j) {
                    Lane l;
                    const Plan& stage = s == 0 ? plan_ : plan_.next_stages[size_t(s) - 1];
                    DUET_CHECK(stage.ep_ranks.empty() || int(stage.ep_ranks.size()) + 1 == tp(),
                               "timeline: {} EP rank plans for {} ranks", stage.ep_ranks.size() + 1, tp());
                    l.plan = r == 0 || stage.ep_ranks.empty() ? &stage : &stage.ep_ranks[size_t(r) - 1];
                    l.machine = &machines_[size_t(s * tp() + r)];
                    if (parallel_) l.placer = std::make_unique<Placer>(placer_.options(), l.machine->hw);
                    l.last_device = l.machine->npu;
                    l.rank = r;
                    lanes_.push_back(std::move(l));
                }
        arrival_.assign(lanes_.size(), 0.0);
        mirror_ = congruent_ranks();
    }

    // RunOptions::mirror_tp_ranks applies: tensor (not expert or pipeline) parallelism, no trace,
    // and every rank's sub-machine is rank 0's up to names: the same device models in the same
    // order (one object, or one type and preset name), links of the same figures, and no device
    // or link shared between ranks. Each rank then runs the same chain on the same costs, meets
    // the others at the same collectives, and its figures equal rank 0's.
    bool congruent_ranks() const {
        if (!opts_.mirror_tp_ranks || opts_.record_events || tp() < 2 || pp() != 1 || micro() != 1 ||
            opts_.experts.ep != 1 || !plan_.ep_ranks.empty())
            return false;
        const RankMachine& m0 = machines_[0];
        std::vector<char> dev_used(hw_.devices.size(), 0), link_used(hw_.links.size(), 0);
        for (const RankMachine& m : machines_) {
            if (m.hw.devices.size() != m0.hw.devices.size() || m.hw.links.size() != m0.hw.links.size()) return false;
            for (size_t d = 0; d < m.hw.devices.size(); ++d)
                if (!same_device(m.hw.devices[d], m0.hw.devices[d]) || dev_used[size_t(m.device_map[d])]++) return false;
            for (size_t l = 0; l < m.hw.links.size(); ++l)
                if (!same_link(m.hw.links[l], m0.hw.links[l]) || link_used[size_t(m.link_map[l])]++) return false;
        }
        return true;
    }
    static bool same_device(const SimDevice& a, const SimDevice& b) {
        if (a.kind != b.kind || a.link != b.link) return false;
        return a.model == b.model || (typeid(*a.model) == typeid(*b.model) && a.model->name() == b.model->name());
    }
    static bool same_link(const SimLink& a, const SimLink& b) {
        return a.end_a == b.end_a && a.end_b == b.end_b && a.shared_memory == b.shared_memory &&
               a.bandwidth_gbps == b.bandwidth_gbps && a.latency_ns == b.latency_ns && a.per_transfer_ns == b.per_transfer_ns;
    }

    // Mirrored ranks: rank 0's device and link figures copied to every other rank's.
    void mirror_figures() {
        if (!mirror_) return;
        const RankMachine& m0 = machines_[0];
        const auto copy = [](const auto& from, auto& to) {
            std::string name = std::move(to.name);
            to = from;
            to.name = std::move(name);
        };
        for (size_t q = 1; q < machines_.size(); ++q) {
            const RankMachine& m = machines_[q];
            for (size_t d = 0; d < m.device_map.size(); ++d)
                for (PhaseStats* ps : {&tl_.prefill, &tl_.decode})
                    copy(ps->device[size_t(m0.device_map[d])], ps->device[size_t(m.device_map[d])]);
            for (size_t l = 0; l < m.link_map.size(); ++l)
                copy(tl_.links[size_t(m0.link_map[l])], tl_.links[size_t(m.link_map[l])]);
        }
    }

    // The device a rank's latest operator ran on (a mirrored rank: rank 0's, on its own machine).
    int last_device(int s, int rank, int j) const {
        if (!mirror_ || rank == 0) return lanes_[lane_index(s, rank, j)].last_device;
        const RankMachine& m0 = machines_[0];
        const int d0 = lanes_[lane_index(s, 0, j)].last_device;
        const auto at = std::find(m0.device_map.begin(), m0.device_map.end(), d0);
        return machines_[size_t(s * tp() + rank)].device_map[size_t(at - m0.device_map.begin())];
    }

    void add_tracks() {
        for (const SimDevice& d : hw_.devices) {
            compute_track_.push_back(track(d.name, "compute"));
            convert_track_.push_back(d.kind == DeviceKind::NPU ? track(d.name, "conversion (PIM->NZ)") : -1);
            launch_track_.push_back(track(d.name, "host launch"));
            comm_track_.push_back(parallel_ ? track(d.name, "collectives") : -1);
        }
        for (const SimLink& l : hw_.links) link_track_.push_back(track(l.name, "transfers"));
    }
    int track(const std::string& group, const std::string& name) {
        tl_.tracks.push_back({group, name});
        return int(tl_.tracks.size()) - 1;
    }
    template <class Label>
    void emit(int tr, Label&& label, double start, double dur, Phase ph) {
        if (recording_ && dur > 0) tl_.events.push_back({tr, label(), start, dur, ph});
    }

    // Forward f of every lane: micro-batch by micro-batch, stage by stage (each device's queue
    // then takes micro-batch j before j+1: the pipeline fills as in GPipe).
    void run_forward(size_t f) {
        const Phase phase = plan_.forwards[f].phase;
        PhaseStats& ps = phase == Phase::PREFILL ? tl_.prefill : tl_.decode;
        const double fw_start = t_;
        charge_step_host(f, phase, ps);
        for (int j = 0; j < micro(); ++j)
            for (int s = 0; s < pp(); ++s) run_stage(f, s, j, ps);
        for (const Lane& l : lanes_) t_ = std::max(t_, l.t);
        close_comm(ps);
        ps.wall_ns += t_ - fw_start;
        if (phase == Phase::PREFILL) finish_prefill();
        else tl_.tbt_ns.push_back(t_ - prev_forward_end_);
        prev_forward_end_ = t_;
        // micro-batch j's next forward starts once the last stage has sampled its tokens
        for (int j = 0; j < micro() && pp() > 1; ++j) {
            double sampled = 0;
            for (int r = 0; r < tp(); ++r) sampled = std::max(sampled, lane(pp() - 1, r, j).t);
            for (int r = 0; r < tp(); ++r) lane(0, r, j).t = std::max(lane(0, r, j).t, sampled);
        }
    }

    // The serving stack's host work of one engine step (scheduler, input preparation, sampling,
    // detokenisation) before the forward's operators: once per forward, plus a part per sequence
    // of the forward (sampling each one); with pipeline parallelism every lane's chain (each
    // micro-batch is its own step) waits for it.
    void charge_step_host(size_t f, Phase phase, PhaseStats& ps) {
        const ForwardSpan& fs = plan_.forwards[f];
        const double n_seq = fs.begin < plan_.ops.size() ? double(plan_.ops[fs.begin].n_seq) : 1.0;
        const double step = hw_.step_host_ns + hw_.step_host_ns_per_seq * n_seq;
        if (!opts_.serving_step_cost || opts_.placement.policy == Policy::PIM_ONLY || step <= 0) return;
        emit(launch_track_[0], [] { return std::string("engine step (host)"); }, t_, step, phase);
        ps.step_host_ns += step;
        if (pp() > 1) {
            for (Lane& l : lanes_) l.t += step;
            return;
        }
        t_ += step;
        for (Lane& l : lanes_) l.t = std::max(l.t, t_);
    }

    // Forward f of stage s for micro-batch j on every tensor-parallel rank, op by op.
    void run_stage(size_t f, int s, int j, PhaseStats& ps) {
        const Plan& plan = *lane(s, 0, j).plan;
        const ForwardSpan& fw = plan.forwards[f];
        for (size_t i = fw.begin; i < fw.end; ++i) {
            const OpRecord& r = plan.ops[i];
            if (is_collective(r.kind)) {
                run_collective(r, s, j, ps);
                continue;
            }
            for (int rank = 0; rank < ranks_run(); ++rank) {
                Lane& l = lane(s, rank, j);
                const OpRecord& own = l.plan->ops[i];  // EP ranks: their own expert loads
                if (empty_expert_group(own)) {
                    if (!overlaps_previous(*l.plan, i, fw)) l.group_ready = l.t;
                    continue;
                }
                if (r.kind == OpKind::SEND) {
                    send(r, s, rank, j, ps);
                } else if (r.kind == OpKind::RECV) {
                    l.t = std::max(l.t, arrival_[lane_index(s - 1, rank, j)]);
                } else {
                    cur_ = &l;
                    if (!overlaps_previous(*l.plan, i, fw)) l.group_ready = l.t;
                    l.t = std::max(l.t, run_op(own, i - fw.begin, ps));
                }
            }
        }
    }

    // A collective of stage s, micro-batch j: an all-to-all among all the stage's ranks, any other
    // among each tensor-parallel group of r.k consecutive ranks (all of them unless tensor
    // parallelism runs inside data-parallel attention groups, graph/parallel.h). A group's
    // collective starts when each of its ranks has its input and the links are free; its ranks
    // continue when it ends.
    void run_collective(const OpRecord& r, int s, int j, PhaseStats& ps) {
        const int group = r.kind == OpKind::ALL_TO_ALL || r.k < 1 || tp() % int(r.k) != 0 ? tp() : int(r.k);
        for (int first = 0; first < tp(); first += group) run_group_collective(r, s, j, first, group, ps);
    }

    void run_group_collective(const OpRecord& r, int s, int j, int first, int group, PhaseStats& ps) {
        std::vector<int> devs;
        double start = 0;
        for (int rank = first; rank < first + group; ++rank) {
            const Lane& l = lane(s, rank, j);
            devs.push_back(comm_device(hw_, *l.machine, last_device(s, rank, j)));
            start = std::max(start, l.t);
        }
        const PricedCollective& pc = priced(collective_of(r.kind), devs, to_op_shape(r).in_bytes);
        const auto label = [&] { return fmt::format("{} ({}, {} ranks)", op_label(r), collective_algo_name(pc.time.algo), group); };
        const double end = occupy(pc, start, r.phase, label, devs, ps);
        for (int rank = first; rank < first + group; ++rank) lane(s, rank, j).t = end;
    }

    // Stage s's boundary activations to stage s+1 (same rank and micro-batch); the sender goes on.
    void send(const OpRecord& r, int s, int rank, int j, PhaseStats& ps) {
        const Lane& from = lane(s, rank, j);
        const RankMachine& to = *lane(s + 1, rank, j).machine;
        const int src = comm_device(hw_, *from.machine, from.last_device);
        const int dst = opts_.placement.policy == Policy::PIM_ONLY && to.pim >= 0 ? comm_device(hw_, to, to.pim) : to.npu;
        const std::vector<int> devs{src, dst};
        const PricedCollective& pc = priced(CollectiveKind::POINT_TO_POINT, devs, to_op_shape(r).in_bytes);
        const auto label = [&] { return fmt::format("send L{} to stage {}", r.layer, s + 1); };
        arrival_[lane_index(s, rank, j)] = occupy(pc, from.t, r.phase, label, {src}, ps);
    }

    // price_collective, memoised: every decode step repeats the same collectives on the same devices.
    // HCCL's launch cost (HCCL_OP_EXPANSION_MODE) belongs to NPU collectives: under pim_only the PIM
    // devices exchange over their own links with no NPU runtime, priced by the links alone (as CENT's
    // cxl_latency.py prices them: round trip + flits).
    const PricedCollective& priced(CollectiveKind kind, const std::vector<int>& devs, uint64_t bytes) {
        auto key = std::make_tuple(int(kind), bytes, devs);
        auto it = priced_.find(key);
        if (it == priced_.end()) {
            const bool no_npu = opts_.placement.policy == Policy::PIM_ONLY;
            const ExpansionCost launch = no_npu ? ExpansionCost{opts_.parallel.launch.mode, 0, 0} : opts_.parallel.launch;
            it = priced_.emplace(std::move(key), price_collective(hw_, kind, devs, double(bytes), launch)).first;
        }
        return it->second;
    }

    // Charges a priced collective from `ready` on its links and on `devs`; returns its end.
    template <class Label>
    double occupy(const PricedCollective& pc, double ready, Phase ph, Label&& label, std::vector<int> devs,
                  PhaseStats& ps) {
        double start = ready;
        for (int l : pc.links) start = std::max(start, link_free_[size_t(l)]);
        const double dur = pc.time.total_ns(), end = start + dur;
        for (int l : pc.links) {
            link_free_[size_t(l)] = end;
            LinkStats& ls = tl_.links[size_t(l)];
            ls.busy_ns += pc.time.link_ns;
            ls.bytes += pc.time.step_bytes * pc.time.steps;
            ls.transfers += pc.time.steps;
            emit(link_track_[size_t(l)], label, start, dur, ph);
        }
        std::sort(devs.begin(), devs.end());
        devs.erase(std::unique(devs.begin(), devs.end()), devs.end());
        for (int d : devs) {
            ps.device[size_t(d)].comm_ns += dur;
            comm_iv_[size_t(d)].add(start, end);
            emit(comm_track_[size_t(d)], label, start, dur, ph);
        }
        return end;
    }

    // Exposed communication of the forward: per device, collective time with nothing computed.
    void close_comm(PhaseStats& ps) {
        if (!parallel_) return;
        for (size_t d = 0; d < hw_.devices.size(); ++d) {
            ps.device[d].exposed_comm_ns += comm_iv_[d].uncovered_by(busy_iv_[d]);
            comm_iv_[d].spans.clear();
            busy_iv_[d].spans.clear();
        }
    }

    // Runs every part of one operator (op `j` of its forward) on the current lane; returns when
    // its (gathered) output is ready.
    double run_op(const OpRecord& r, size_t j, PhaseStats& ps) {
        const PreparedOp& op = prepare(r, j);
        const int parts = int(op.parts.size());
        if (sampled_by_rank0(r, op)) return cur_->t;
        double end = 0;
        for (int p = 0; p < parts; ++p) {
            auto label = [&]() { return parts > 1 ? fmt::format("{} [{}/{}]", op_label(r), p + 1, parts) : op_label(r); };
            const PreparedPart& part = op.parts[size_t(p)];
            end = std::max(end, run_part(r, part, op.repeat, ps, label));
            cur_->last_device = part.device;
        }
        return end;
    }

    // The ranks of a stage that share the host CPU (pim_only) hold the same gathered logits: the
    // host samples the token once, on rank 0's turn.
    bool sampled_by_rank0(const OpRecord& r, const PreparedOp& op) const {
        return r.kind == OpKind::OUTPUT && cur_->rank > 0 && op.parts.size() == 1 &&
               hw_.devices[size_t(op.parts[0].device)].kind == DeviceKind::CPU;
    }

    // Shape, placement and device costs of op j, recomputed only when its record differs from
    // the one op j of the previous forward had: decode steps repeat every record but attention's,
    // and all three are pure functions of the record, so the reuse is exact.
    const PreparedOp& prepare(const OpRecord& r, size_t j) {
        std::vector<PreparedOp>& prepared = cur_->prepared;
        if (j >= prepared.size()) prepared.resize(j + 1);
        PreparedOp& op = prepared[j];
        if (op.valid && op.record == r) return op;
        op.valid = true;
        op.record = r;
        const bool w8a8 = r.kind == OpKind::MATMUL && r.weight_dtype == DType::I8 && opts_.int8_matmul_act_dtype == DType::I8;
        hw::OpShape shape = to_op_shape(r, w8a8 ? DType::I8 : DType::F16);
        if (w8a8) shape.out_bytes = r.out_bytes / 2;  // int32 accumulators dequantised to f16 on the way out
        const hw::OpShape s = per_sequence(r, shape, opts_, op.repeat);
        const OpPlacement where = placer_of(*cur_).place(r, s);
        const RankMachine& m = *cur_->machine;
        const int parts = int(where.devices.size());
        op.parts.resize(size_t(parts));
        for (int p = 0; p < parts; ++p) {
            PreparedPart& part = op.parts[size_t(p)];
            const int local = where.devices[size_t(p)];
            part.device = m.device_map[size_t(local)];
            const int local_link = m.hw.devices[size_t(local)].link;
            part.link = local_link < 0 ? -1 : m.link_map[size_t(local_link)];
            part.shape = split_rows(s, p, parts);
            part.cost = costs_.get(part.device, part.shape);
        }
        return op;
    }

    bool converts(const OpRecord& r, int device) const {
        return hw_.devices[size_t(device)].kind == DeviceKind::NPU && is_matmul_kind(r.kind) &&
               opts_.placement.policy != Policy::NPU_ONLY && placer_.pim_layout(r.layer) &&
               !(opts_.preconvert_first_token && r.layer == 0) && !(r.phase == Phase::PREFILL && !opts_.zero_copy_switch);
    }

    // VLLM_ASCEND_ENABLE_PREFETCH_MLP (opts_.prefetch_mlp): in decode, while an NPU runs a
    // layer's attention, a side stream loads that layer's gate/up weights into L2 using the
    // device-memory time the attention leaves idle (its duration minus its own traffic at the
    // NPU's bandwidth), at most kMlpPrefetchBytes and the L2. The gate/up matmuls then read the
    // prefetched part from L2 instead of device memory. Returns the cost to charge.
    hw::Cost with_mlp_prefetch(const OpRecord& r, const hw::OpShape& s, const hw::Cost& c, int dev, int repeat) {
        if (!opts_.prefetch_mlp || r.phase != Phase::DECODE || hw_.devices[size_t(dev)].kind != DeviceKind::NPU) return c;
        const double bw = hw_.mem_bw_gbps / double(std::max<size_t>(1, hw_.devices_of(DeviceKind::NPU).size()));  // one NPU's
        if (prefetch_left_.empty()) prefetch_left_.assign(hw_.devices.size(), 0.0), prefetch_layer_.assign(hw_.devices.size(), -1);
        if (r.kind == OpKind::ATTENTION) {
            const double idle_ns = std::max(0.0, c.t_ns * repeat - c.bytes_moved * repeat / bw);
            const double cap = std::min(kMlpPrefetchBytes, double(hw_.npu_l2_bytes > 0 ? hw_.npu_l2_bytes : kMlpPrefetchBytes));
            prefetch_left_[size_t(dev)] = std::min(cap, idle_ns * bw);
            prefetch_layer_[size_t(dev)] = r.layer;
            return c;
        }
        const bool gate_up = graph::ffn_input_matmul(r.role);
        if (r.kind != OpKind::MATMUL || !gate_up || repeat != 1 || r.layer != prefetch_layer_[size_t(dev)]) return c;
        const uint64_t pre = std::min<uint64_t>(uint64_t(prefetch_left_[size_t(dev)]), s.weight_bytes);
        if (pre == 0) return c;
        prefetch_left_[size_t(dev)] -= double(pre);
        tl_.mlp_prefetched_bytes += double(pre) * rank_weight();
        hw::OpShape from_l2 = s;
        from_l2.weight_bytes = std::max<uint64_t>(1, s.weight_bytes - pre);  // 0 would mean "derive from the shape"
        hw::Cost out = costs_.get(dev, from_l2);
        out.bytes_moved += double(pre);  // still moved, by the prefetch stream
        return out;
    }

    template <class Label>
    double run_part(const OpRecord& r, const PreparedPart& part, int repeat, PhaseStats& ps, Label& label) {
        const hw::OpShape& s = part.shape;
        const int dev = part.device, link = part.link;
        const hw::Cost c = with_mlp_prefetch(r, s, part.cost, dev, repeat);
        const double op_ns = c.t_ns * repeat;
        charge(ps.device[size_t(dev)], c, s, repeat);
        if (is_matmul_kind(r.kind) && hw_.devices[size_t(dev)].kind == DeviceKind::PIM)
            tl_.pim_matmul_parts += int64_t(rank_weight()) * repeat;
        double ready = cur_->group_ready;
        if (link >= 0) ready = transfer(link, s.in_bytes * uint64_t(repeat), ready, r.phase, [&] { return "send input " + label(); });
        const double T0 = std::max(ready, device_free_[size_t(dev)]);
        double end = T0 + op_ns;
        if (converts(r, dev)) end = convert(r, T0, op_ns, repeat, dev, label);
        emit(compute_track_[size_t(dev)], label, end - op_ns, op_ns, r.phase);
        if (c.t_launch_ns > 0)
            emit(launch_track_[size_t(dev)], [&] { return "launch " + label(); }, end - op_ns, c.t_launch_ns * repeat, r.phase);
        device_free_[size_t(dev)] = end;
        if (parallel_) busy_iv_[size_t(dev)].add(end - op_ns, end);
        if (link >= 0) end = transfer(link, s.out_bytes * uint64_t(repeat), end, r.phase, [&] { return "gather " + label(); });
        return end;
    }

    static void charge(DeviceStats& us, const hw::Cost& c, const hw::OpShape& s, int repeat) {
        us.busy_ns += c.t_ns * repeat;
        us.bytes_moved += c.bytes_moved * repeat;
        us.weight_bytes += double(s.weight_bytes) * repeat;
        us.energy_pj += c.energy_pj * repeat;
        us.launch_ns += c.t_launch_ns * repeat;
        us.ops += repeat;
    }

    // One transfer over `link` once `ready`; returns when it has arrived.
    template <class Label>
    double transfer(int link, uint64_t bytes, double ready, Phase ph, Label&& label) {
        const SimLink& l = hw_.links[size_t(link)];
        const double dur = l.transfer_ns(bytes);
        if (dur <= 0) return ready;
        const double start = std::max(ready, link_free_[size_t(link)]);
        link_free_[size_t(link)] = start + dur;
        LinkStats& ls = tl_.links[size_t(link)];
        ls.busy_ns += dur;
        ls.bytes += double(bytes);
        ++ls.transfers;
        emit(link_track_[size_t(link)], label, start, dur, ph);
        return start + dur;
    }

    // The matmul's compute end when its weights are converted PIM->NZ on the load path.
    template <class Label>
    double convert(const OpRecord& r, double T0, double op_ns, int repeat, int dev, Label& label) {
        const PimMatrixInfo pm = hw_.layout->pim(weight_rows(r), r.k, r.weight_dtype);
        const ConvertedMatmul cm = convert_on_load_path(T0, op_ns, pm.to_nz_ns, pm.n_blocks, opts_.prefetch_depth,
                                                        conv_[size_t(dev)]);
        const double exposed = cm.end_ns - (T0 + op_ns);
        const double w = rank_weight();
        tl_.conversion_ns += pm.to_nz_ns * w;
        tl_.conversion_exposed_ns += exposed * w;
        tl_.conversion_bytes_read += double(pm.to_nz_bytes_read) * repeat * w;
        // the load path replaces the plain weight read: only the extra bytes cost energy
        const double extra = std::max(0.0, double(pm.to_nz_bytes_read) - double(r.weight_bytes));
        tl_.conversion_energy_pj += extra * hw_.conversion_pj_per_byte * repeat * w;
        tl_.conversions += int64_t(w);
        emit(convert_track_[size_t(dev)], [&] { return "convert " + label(); }, cm.conv_start_ns,
             cm.conv_end_ns - cm.conv_start_ns, r.phase);
        if (r.phase == Phase::PREFILL)
            DUET_LOG_DEBUG("convert {} PIM->NZ: {} blocks, {:.2f} us converting, {:.2f} us exposed", op_label(r),
                           std::max<int64_t>(1, pm.n_blocks), pm.to_nz_ns / 1e3, exposed / 1e3);
        return cm.end_ns;
    }

    void finish_prefill() {
        tl_.prefill_ns = t_;
        double sw = 0;
        if (opts_.placement.policy != Policy::NPU_ONLY) {
            if (opts_.zero_copy_switch) {
                sw = hw_.pointer_switch_ns;
                DUET_LOG_DEBUG("pointer switch prefill -> decode: {:.3f} us (zero_copy_switch)", sw / 1e3);
            } else {  // prefill ran from NZ copies; convert every PIM-layout matrix back to the base
                sw = full_switch_conversion_ns(shape_, plan_, placer_, *hw_.layout, tl_.conversions);
                tl_.conversion_ns += sw;
            }
        }
        emit(convert_track_[0], [&] { return std::string(opts_.zero_copy_switch ? "pointer switch" : "full NZ->PIM conversion"); },
             t_, sw, Phase::PREFILL);
        tl_.switch_ns = sw;
        t_ += sw;
        tl_.ttft_ns = t_;
        for (Lane& l : lanes_) l.t = t_;
        DUET_LOG_INFO("[{}] prefill: {:.3f} ms (NPU busy {:.3f} ms, PIM busy {:.3f} ms), conversion exposed "
                      "{:.3f} ms, switch {:.3f} ms, TTFT {:.3f} ms",
                      policy_name(opts_.placement.policy), tl_.prefill_ns / 1e6, tl_.prefill.npu().busy_ns / 1e6,
                      tl_.prefill.pim().busy_ns / 1e6, tl_.conversion_exposed_ns / 1e6, sw / 1e6, tl_.ttft_ns / 1e6);
    }

    const ModelShape& shape_;
    const Plan& plan_;
    const Placer& placer_;
    const RunOptions& opts_;
    const SimHardware& hw_;
    CostCache own_costs_;  // unless the caller keeps one across runs
    CostCache& costs_;
    Timeline tl_;
    double t_ = 0;                     // completion of everything issued so far (every lane)
    double prev_forward_end_ = 0;
    std::vector<RankMachine> machines_;  // one per rank (sim/scale_out.h)
    std::vector<Lane> lanes_;          // lane_index(stage, rank, micro-batch)
    Lane* cur_ = nullptr;              // the lane whose operator is being run
    std::vector<double> arrival_;      // per lane: when its last SEND arrived at the next stage
    std::map<std::tuple<int, uint64_t, std::vector<int>>, PricedCollective> priced_;
    bool parallel_ = false;            // more than one rank: collectives and exposure are tracked
    bool mirror_ = false;              // rank 0 simulated for all (congruent_ranks)
    std::vector<double> device_free_;  // each device's queue is free
    std::vector<double> link_free_;    // each link is free
    std::vector<ConverterState> conv_; // one converter per NPU (unused for PIM devices)
    std::vector<Intervals> comm_iv_, busy_iv_;  // per device, this forward: communicating, computing
    std::vector<int> compute_track_, convert_track_, launch_track_, comm_track_, link_track_;
    bool recording_ = false;
    std::vector<double> prefetch_left_;   // per device: MLP bytes prefetched during the last attention, unused
    std::vector<int32_t> prefetch_layer_; // per device: the layer of that attention
    // vllm-ascend's default VLLM_ASCEND_MLP_GATE_UP_PREFETCH_SIZE (18 MiB; vllm_ascend/envs.py)
    static constexpr double kMlpPrefetchBytes = 18.0 * 1024 * 1024;
};

}  // namespace

void DeviceStats::add(const DeviceStats& o) {
    busy_ns += o.busy_ns;
    bytes_moved += o.bytes_moved;
    weight_bytes += o.weight_bytes;
    energy_pj += o.energy_pj;
    launch_ns += o.launch_ns;
    ops += o.ops;
    comm_ns += o.comm_ns;
    exposed_comm_ns += o.exposed_comm_ns;
}

DeviceStats PhaseStats::total(DeviceKind kind) const {
    DeviceStats t;
    t.kind = kind;
    for (const DeviceStats& d : device)
        if (d.kind == kind) t.add(d);
    return t;
}

int PhaseStats::devices_of(DeviceKind kind) const {
    int n = 0;
    for (const DeviceStats& d : device) n += d.kind == kind ? 1 : 0;
    return n;
}

Timeline simulate_timeline(const ModelShape& shape, const Plan& plan, const Placer& placer, const RunOptions& opts,
                           const SimHardware& hw) {
    return Scheduler(shape, plan, placer, opts, hw, nullptr).run();
}

Timeline simulate_timeline(const ModelShape& shape, const Plan& plan, const Placer& placer, const RunOptions& opts,
                           const SimHardware& hw, CostCache& costs) {
    DUET_CHECK(&costs.hardware() == &hw, "a cost cache of other hardware");
    return Scheduler(shape, plan, placer, opts, hw, &costs).run();
}

}  // namespace duet::sim
