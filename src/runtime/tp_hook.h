#pragma once
// What the engine calls for tensor and pipeline parallelism (issue 11): the row-parallel
// projections' all-reduce, a pipeline stage's SEND/RECV of the residual, the last stage's
// logits reaching rank 0, and rank 0's announcement of each forward to the other ranks.
// Implemented by runtime/tp_rank.h over a parallel::Communicator; an engine without a hook runs
// one process.
#include <cstdint>
#include <span>

namespace duet::runtime {

struct SeqInput;
struct ForwardOutput;

class TpHook {
public:
    virtual ~TpHook() = default;
    // Called by forward() once the batch's KV is reserved, before anything is computed.
    virtual void begin_step(std::span<const SeqInput> batch) = 0;
    // x[i] = sum over ranks of x[i] (an ALL_REDUCE node of the TP graph).
    virtual void all_reduce_sum(float* x, int64_t n) = 0;
    // The residual x[0, n) to pipeline stage `stage` (a SEND node), or from it (a RECV node).
    virtual void send(const float* x, int64_t n, int stage) = 0;
    virtual void recv(float* x, int64_t n, int stage) = 0;
    // Called by forward() after the last node: under pipeline parallelism the last stage's
    // out.logits go to rank 0, which receives them into its own out.logits (same size).
    virtual void end_step(ForwardOutput& out) = 0;
};

}  // namespace duet::runtime
