#pragma once
// The architecture shape the trace-only planner needs. It is graph::ModelShape (the graph is
// built from it); the CLI fills it from model::Hparams through runtime/model_shape.h.
#include "graph/model_shape.h"

namespace duet::sim {

using ModelShape = graph::ModelShape;

}  // namespace duet::sim
