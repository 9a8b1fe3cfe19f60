#pragma once
// The part of the modelled machine one serving instance runs on (a disaggregated instance, a
// data-parallel replica's tensor-parallel group; serving/serving_layout.h, docs/serving.md):
// the topology's devices `keep` (the first must be an NPU: the instance's host) and the links
// among them, with the memory figures of SimHardware (capacity and peak external bandwidth: per
// NPU times the NPUs kept; the PIM banks' internal bandwidth: per PIM device times the PIM
// devices kept). A kept device whose link to the topology's host is dropped (its other end, npu0,
// is not kept: pim1 of a group npu2 + npu3 + pim1) hangs off the instance's host by a copy of
// that link, named after its new ends: every group is wired like the topology's first.
// Device names stay the topology's ("npu1" may be a prefill instance's host).
// Thread safety: pure function; the result points to the same device models as `hw`.
#include <vector>

#include "sim/hardware.h"

namespace duet::serving {

sim::SimHardware instance_hardware(const sim::SimHardware& hw, const std::vector<int>& keep);

}  // namespace duet::serving
