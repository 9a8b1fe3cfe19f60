#pragma once
// One rank of real tensor or pipeline parallelism over a parallel::Communicator (issue 11).
//
// Pipeline parallelism (--pp M, tp 1): rank s is stage s of graph/shard_pipeline_parallel.h —
// its engine runs its layers' nodes over the file's mapping (so only those pages are read),
// keeps KV for its layers only, receives the residual from rank s-1 and sends it to s+1; the
// last stage's logits go to rank 0 at the end of each forward (end_step). Rank 0 leads as
// below. --tp and --pp above 1 together are refused (check_parallel_world).
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
// with a message saying so; the server turns both off under --tp and --pp.
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
    TpRank(std::shared_ptr<const Model> model, parallel::Communicator& comm, int tp, int pp = 1);
    ~TpRank() override;  // the leader calls finish()
    TpRank(const TpRank&) = delete;
    TpRank& operator=(const TpRank&) = delete;

    bool leader() const { return comm_.rank() == 0; }
    int rank() const { return comm_.rank(); }
    int tp() const { return shard_.tp; }
    int pp() const { return pp_; }
    const graph::TpShard& shard() const { return shard_; }
    // Bytes of weights this rank reads (its slices and the replicated tensors; under pp its
    // stage's layers, the embedding on stage 0, the output norm and head on the last).
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
    void send(const float* x, int64_t n, int stage) override;
    void recv(float* x, int64_t n, int stage) override;
    void end_step(ForwardOutput& out) override;
    // Wall time this rank spent in the engine's all-reduces (waiting for the other ranks
    // included) and their count, since construction.
    double all_reduce_ms() const { return double(all_reduce_ns_) / 1e6; }
    int64_t n_all_reduce() const { return n_all_reduce_; }

private:
    std::shared_ptr<const Model> model_;
    parallel::Communicator& comm_;
    graph::TpShard shard_;
    int pp_ = 1;
    model::Weights weights_;  // what the engine binds: TP slices, or (pp) the whole file's tensors
    model::Weights own_;      // what this rank reads: weights_, or (pp) its stage's tensors only
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
RankEngine make_rank_engine(std::shared_ptr<const Model> model, parallel::Communicator& comm, int tp, int pp,
                            const EngineOptions& opts);
// warm_up() for a RankEngine: under tp the rank's slices only are pre-faulted, and the warm
// forwards run on the leader (the followers mirror them once they follow()).
WarmupStats warm_up_rank(const Model& model, RankEngine& re, const WarmupOptions& opts);

// The rank setup every --tp command does: checks --tp against the job (`--tp N` needs
// `mpirun -np N`, and without mpirun only --tp 1 runs). Throws duet::Error naming --tp.
void check_tp_world(int tp, const parallel::Communicator& comm);
// The same for --tp and --pp together: one of them must be 1 (names both flags), and --pp M
// needs `mpirun -np M` (names --pp).
void check_parallel_world(int tp, int pp, const parallel::Communicator& comm);

}  // namespace duet::runtime
