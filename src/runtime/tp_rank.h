#pragma once
// One rank of real tensor parallelism over a parallel::Communicator (issue 11).
//
// Every rank loads the model (a read-only mapping), takes its shard from graph/parallel.h,
// binds its weight slices in place (runtime/tp_weights.h) and builds the TP graph of
// graph/shard_tensor_parallel.h; its engine all-reduces the partial sums of the row-parallel
// projections through the communicator.
//
// Rank 0 is the leader: it runs the generator or the server as one process would, samples
// every token, and before each forward broadcasts the step — each sequence's key, its cached
// positions and its new tokens (the tokens rank 0 sampled), whether it wants all logits. The
// other ranks only follow(): they run the same forward over their own KV cache (their heads)
// and discard the logits (the lm-head is replicated, so theirs equal rank 0's). finish(), or
// the leader's destructor, tells them to return.
//
// Followers keep one SequenceKv per key (rank 0's SequenceKv address): a step at fewer cached
// positions than the follower holds truncates it (rewind, or a new sequence at a reused
// address, at 0); a follower whose pool is full drops the sequences it stepped least recently
// (rank 0 released them: it runs in a pool of the same size). A sequence started from another
// one's KV (prefix cache, n > 1 forks) has positions no follower computed: follow() fails
// with a message saying so; the server turns both off under --tp.
#include <cstdint>
#include <memory>

#include "graph/parallel.h"
#include "parallel/communicator.h"
#include "runtime/engine.h"
#include "runtime/tp_hook.h"
#include "runtime/warmup.h"

namespace duet::runtime {

class TpRank : public TpHook {
public:
    // Throws duet::Error when tp differs from comm.size() or the model does not split tp ways
    // (graph/parallel.h's and runtime/tp_weights.h's messages).
    TpRank(std::shared_ptr<const Model> model, parallel::Communicator& comm, int tp);
    ~TpRank() override;  // the leader calls finish()
    TpRank(const TpRank&) = delete;
    TpRank& operator=(const TpRank&) = delete;

    bool leader() const { return comm_.rank() == 0; }
    int rank() const { return comm_.rank(); }
    int tp() const { return shard_.tp; }
    const graph::TpShard& shard() const { return shard_; }
    // Bytes of weights this rank reads (its slices and the replicated tensors).
    uint64_t shard_bytes() const;

    // This rank's engine: the TP graph over the weight slices, with this rank as its hook.
    // The engine must not outlive this TpRank.
    std::unique_ptr<Engine> make_engine(const EngineOptions& opts);
    // Reads the pages of this rank's slices only (what --no-warmup skips); the warm forwards of
    // WarmupOptions run on the leader's engine, which the followers mirror.
    WarmupStats prefault() const;

    // Leader: the followers return from follow(). Idempotent.
    void finish();
    // Followers: run the leader's forwards on `engine` (this rank's) until finish(). A failure
    // prints "duet: error: ..." and aborts the job (the others wait in a collective).
    void follow(Engine& engine);

    // TpHook
    void begin_step(std::span<const SeqInput> batch) override;
    void all_reduce_sum(float* x, int64_t n) override;
    // Wall time this rank spent in the engine's all-reduces (waiting for the other ranks
    // included) and their count, since construction.
    double all_reduce_ms() const { return double(all_reduce_ns_) / 1e6; }
    int64_t n_all_reduce() const { return n_all_reduce_; }

private:
    std::shared_ptr<const Model> model_;
    parallel::Communicator& comm_;
    graph::TpShard shard_;
    model::Weights weights_;
    bool finished_ = false;
    int64_t all_reduce_ns_ = 0, n_all_reduce_ = 0;
    std::vector<uint8_t> msg_;  // the step being sent or received
};

// The engine a command runs under `--tp tp`: tp 1 is the plain engine (no TpRank, nothing
// changes), tp > 1 this rank's TP engine. Members in this order so the engine goes first.
struct RankEngine {
    std::unique_ptr<TpRank> tp;
    std::unique_ptr<Engine> engine;
    bool leader() const { return !tp || tp->leader(); }
};
RankEngine make_rank_engine(std::shared_ptr<const Model> model, parallel::Communicator& comm, int tp,
                            const EngineOptions& opts);
// warm_up() for a RankEngine: under tp the rank's slices only are pre-faulted, and the warm
// forwards run on the leader (the followers mirror them once they follow()).
WarmupStats warm_up_rank(const Model& model, RankEngine& re, const WarmupOptions& opts);

// The rank setup every --tp command does: checks --tp against the job (`--tp N` needs
// `mpirun -np N`, and without mpirun only --tp 1 runs). Throws duet::Error naming --tp.
void check_tp_world(int tp, const parallel::Communicator& comm);

}  // namespace duet::runtime
