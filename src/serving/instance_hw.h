#pragma once
// The part of the modelled machine one serving instance runs on, for prefill/decode
// disaggregation (serving/serving_cluster.h, docs/serving.md): the topology's devices `keep`
// (the first must be an NPU: the instance's host) and the links among them, with the memory
// figures of SimHardware (capacity, peak external bandwidth: per NPU times the NPUs kept;
// the PIM banks' internal bandwidth when PIM devices are kept). Device names stay the
// topology's ("npu1" may be a prefill instance's host).
// Thread safety: pure function; the result points to the same device models as `hw`.
#include <vector>

#include "sim/hardware.h"

namespace duet::serving {

sim::SimHardware instance_hardware(const sim::SimHardware& hw, const std::vector<int>& keep);

}  // namespace duet::serving
