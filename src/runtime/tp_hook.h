#pragma once
// What the engine calls for tensor parallelism (issue 11): the row-parallel projections'
// all-reduce, and rank 0's announcement of each forward to the other ranks. Implemented by
// runtime/tp_rank.h over a parallel::Communicator; an engine without a hook runs one process.
#include <cstdint>
#include <span>

namespace duet::runtime {

struct SeqInput;

class TpHook {
public:
    virtual ~TpHook() = default;
    // Called by forward() once the batch's KV is reserved, before anything is computed.
    virtual void begin_step(std::span<const SeqInput> batch) = 0;
    // x[i] = sum over ranks of x[i] (an ALL_REDUCE node of the TP graph).
    virtual void all_reduce_sum(float* x, int64_t n) = 0;
};

}  // namespace duet::runtime
