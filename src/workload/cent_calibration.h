#pragma once
// Whole-system calibration of a CENT-class machine (issue 38 item 4; docs/hardware-model.md
// "CENT-class systems"): Llama2-7B, 13B and 70B decode on 8, 20 and 32 CXL devices of 32 GDDR6-AiM
// channels each (pim_cxl_aim), tensor parallelism = devices under CENT's partition ([topology]
// tp_split = "cent", graph/shard_tensor_parallel_cent.h), placement pim_only (no NPU: matmuls,
// attention and the decode element-wise work on the PIM devices, the rest on the host CPU), the devices joined by CENT's CXL fabric
// (links.toml cxl_cent_x18 / x7 / x4). duet's per-token decode latency is the mean of `duet bench`'s
// decode step at the context positions CENT's published figure averages over (prompt 512, decode
// 3584: positions 640 to 4096 in steps of 128), against CENT's published token latency
// (cent_simulation/simulation_results.csv) with the harness's re-run (configs/hw/references/
// cent.toml) cited beside it. It lives here, not in hw/calibration, because it runs the simulator on
// a model graph. Nothing here feeds back into a preset.
// Thread safety: pure function; presets are read from the config folder on every call.
#include <cstdint>
#include <string>
#include <vector>

#include "hw/calibration/reference_points.h"

namespace duet::workload {

// duet's mean decode step (ms) of `model` on `devices` pim_cxl_aim devices over `link`, tensor
// parallelism = devices under CENT's partition, pim_only, at each context position in `positions` (one bench run each:
// a prompt of position - 1 tokens, then the decode step that writes position `position`).
double cent_system_token_ms(const std::string& model, int devices, const std::string& link,
                            const std::vector<int64_t>& positions);

// The three systems in table order (unit ms). Throws duet::Error when a preset cannot be read.
std::vector<hw::calibration::Point> cent_system_points();

}  // namespace duet::workload
