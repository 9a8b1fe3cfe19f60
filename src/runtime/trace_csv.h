#pragma once
// Writes the engine's op records as CSV, one line per operator, for inspection and for
// feeding the simulator from a real run (`duet run --op-trace FILE`).
// Columns: index,kind,role,phase,layer,n_seq,m,n,k,n_head,n_head_kv,weight_dtype,weight_bytes,
// in_bytes,out_bytes,flops. The file is written to FILE.tmp and renamed; errors throw
// duet::Error naming the path.
#include <string>

#include "graph/op_record.h"

namespace duet::runtime {

void write_op_trace_csv(const graph::OpTrace& trace, const std::string& path);

}  // namespace duet::runtime
