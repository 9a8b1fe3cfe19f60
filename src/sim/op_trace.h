#pragma once
// The graph types the simulator consumes -- the op records (graph/op_record.h) and the model
// shape (graph/model_shape.h) -- under the names the simulator's files use.
#include "graph/model_shape.h"
#include "graph/op_record.h"

namespace duet::sim {

using graph::ModelShape;  // graph/model_shape.h, filled from model::Hparams by model::model_shape
using graph::OpKind;      // graph/op_types.h
using graph::OpRecord;
using graph::OpTrace;
using graph::Phase;
using graph::WeightRole;
using graph::op_kind_name;
using graph::phase_name;
using graph::weight_role_name;

}  // namespace duet::sim
