#pragma once
// The device view of an OpRecord: activations in the device's dtype (f16) instead of the
// host's f32, the operator class the hw models understand. Pure function.
#include "hw/device.h"
#include "sim/op_trace.h"

namespace duet::sim {

hw::OpShape to_op_shape(const OpRecord& r, DType act_dtype = DType::F16);

}  // namespace duet::sim
