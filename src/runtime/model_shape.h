#pragma once
// The one conversion from a model's hparams to the shape the simulator plans with (sim does
// not depend on model/; runtime sits above both). Used by `duet bench`, `duet serve`'s modelled
// timings and the planner-vs-engine agreement tests.
#include <string>

#include "core/dtype.h"
#include "model/hparams.h"
#include "sim/model_shape.h"

namespace duet::runtime {

sim::ModelShape model_shape(const model::Hparams& hp, DType weight_dtype, DType kv_dtype, std::string name = "");

}  // namespace duet::runtime
