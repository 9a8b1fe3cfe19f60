#pragma once
// Whole-model calibration of the NPU model (docs/hardware-model.md sections 6 and 6.2): the
// prefill and decode step times of public Ascend measurements against `duet bench`'s NPU-only
// baseline for the same model shape, SoC, dispatch mode, prompt, output length and batch
// (TorchAir's README, the forward alone), and the mean TTFT and TPOT of vllm-ascend's serving
// benchmark against duet's serving simulation of the same workload (serving_means.h). It
// lives here, not in hw/calibration, because it runs the simulator on a model graph (hw/ never
// includes model code). Nothing here feeds back into a preset.
// Thread safety: pure function; presets are read from the config folder on every call.
#include <vector>

#include "hw/calibration/reference_points.h"

namespace duet::workload {

// The Ascend 910B points in table order (units: ms). Throws duet::Error when a preset cannot be read.
std::vector<hw::calibration::Point> npu_reference_points();

}  // namespace duet::workload
