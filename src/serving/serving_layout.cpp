#include "serving/serving_layout.h"

#include <fmt/format.h>

#include "core/error.h"
#include "graph/parallel.h"
#include "serving/instance_hw.h"

namespace duet::serving {

namespace {

std::string names_of(const sim::SimHardware& h) {
    std::string out;
    for (const sim::SimDevice& d : h.devices)
        if (d.kind != sim::DeviceKind::CPU) out += (out.empty() ? "" : " + ") + d.name;
    return out;
}

std::string flags_of(int dp, int tp, int ep, bool disaggregate) {
    std::string f = fmt::format("--tp {}", tp);
    if (ep > 1) f += fmt::format(" --ep {}", ep);
    if (dp > 1) f += fmt::format(" --dp {}", dp);
    if (disaggregate) f += " --disaggregate";
    return f;
}

}  // namespace

std::string ServingLayout::decode_devices() const { return names_of(decode_hw); }
std::string ServingLayout::prefill_devices() const { return names_of(prefill_hw); }

ServingLayout serving_layout(const sim::SimHardware& hw, int dp, int tp, bool disaggregate, int pp, int ep) {
    if (pp > 1 && (dp > 1 || disaggregate))
        fail("--pp {} with {}: the pipeline stages are one instance's virtual engines (allowed: --pp with --dp 1 and "
             "without --disaggregate)", pp, dp > 1 ? fmt::format("--dp {}", dp) : std::string("--disaggregate"));
    ServingLayout lay;
    lay.dp = dp;
    lay.tp = tp;
    lay.ep = ep;
    lay.pp = pp;
    const int ranks = graph::stage_ranks(tp, ep);  // NPUs of an instance
    lay.disaggregated = disaggregate;
    lay.split = ranks > 1 && (dp > 1 || disaggregate);
    const std::vector<int> npus = hw.devices_of(sim::DeviceKind::NPU), pims = hw.devices_of(sim::DeviceKind::PIM),
                           cpus = hw.devices_of(sim::DeviceKind::CPU);
    if (!lay.split) {
        lay.replica_devices.assign(size_t(dp), "");
        if (!disaggregate) {
            lay.colocated_hw = hw;
            return lay;
        }
        if (npus.size() != 2)
            fail("--disaggregate with {} NPU(s): a replica is one prefill NPU (npu1) and one decode NPU with the PIM "
                 "devices (npu0) (allowed: --npus 2, or [topology] npus = 2; more replicas: --dp N)", npus.size());
        std::vector<int> decode{npus[0]};
        decode.insert(decode.end(), pims.begin(), pims.end());
        lay.prefill_hw = instance_hardware(hw, {npus[1]});
        lay.decode_hw = instance_hardware(hw, decode);
        lay.kv_link = hw.path(npus[1], npus[0]);
        return lay;
    }
    const size_t per_replica = size_t(ranks) * (disaggregate ? 2 : 1);
    if (npus.size() != per_replica * size_t(dp))
        fail("{} with {} NPU(s): each replica is {} (allowed: --npus {}, or [topology] npus = {})",
             flags_of(dp, tp, ep, disaggregate), npus.size(),
             disaggregate ? fmt::format("a prefill group and a decode group of {} NPUs each", ranks)
                          : fmt::format("{} group of {} NPUs", ep > 1 ? "an expert-parallel" : "a tensor-parallel", ranks),
             per_replica * size_t(dp), per_replica * size_t(dp));
    if (pims.size() % size_t(dp) != 0)
        fail("--pims {} with {}: each replica takes an equal share of the PIM devices (allowed: --pims a multiple of "
             "{}, or [topology] pims = a multiple of {})", pims.size(), flags_of(dp, tp, ep, disaggregate), dp, dp);
    const size_t pims_per = pims.size() / size_t(dp);
    for (int r = 0; r < dp; ++r) {
        const size_t base = size_t(r) * per_replica;
        std::vector<int> group(npus.begin() + long(base), npus.begin() + long(base) + ranks);  // decode or colocated
        group.insert(group.end(), pims.begin() + long(size_t(r) * pims_per),
                     pims.begin() + long(size_t(r + 1) * pims_per));
        group.insert(group.end(), cpus.begin(), cpus.end());
        const sim::SimHardware g = instance_hardware(hw, group);
        if (!disaggregate) {
            lay.replica_devices.push_back(names_of(g));
            if (r == 0) lay.colocated_hw = g;
            continue;
        }
        std::vector<int> prefill(npus.begin() + long(base) + ranks, npus.begin() + long(base + per_replica));
        prefill.insert(prefill.end(), cpus.begin(), cpus.end());
        const sim::SimHardware p = instance_hardware(hw, prefill);
        lay.replica_devices.push_back(names_of(p) + " -> " + names_of(g));
        if (r > 0) continue;
        lay.prefill_hw = p;
        lay.decode_hw = g;
        lay.kv_link = hw.path(prefill[0], group[0]);
    }
    return lay;
}

}  // namespace duet::serving
