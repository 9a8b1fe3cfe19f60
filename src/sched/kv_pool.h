#pragma once
// The paged KV block pool as the scheduler (sched/scheduler.h) drives it: the mechanism
// (blocks, reference counts, the prefix cache), where the scheduler holds the policy (who is
// admitted, what is fed, who is preempted). Two implementations: runtime/batcher's over the
// engine's KvCache + PrefixCache (real K/V), and sched/block_pool.h's modelled pool (block
// counts only) under the simulator.
//
// Sequences are named by the scheduler's SeqId; a sequence's KV covers its first
// n_computed tokens (the scheduler tracks that count). Expected outcomes (no free block)
// are return values. Thread safety: one thread (the scheduler's caller).
#include <cstdint>

namespace duet::sched {

using SeqId = int64_t;

class KvPool {
public:
    virtual ~KvPool() = default;
    virtual int64_t block_tokens() const = 0;
    virtual int64_t n_blocks() const = 0;
    virtual int64_t n_free() const = 0;

    // Prefix cache: attaches to the empty sequence `id` the longest remembered prefix of its
    // tokens made of whole blocks and at most max_tokens long; returns the tokens attached.
    virtual int64_t attach_cached(SeqId id, int64_t max_tokens) = 0;
    // Tokens sequences a and b have in common from the start, at most `limit`.
    virtual int64_t common_prefix(SeqId a, SeqId b, int64_t limit) const = 0;
    // Starts the empty sequence `to` with the first n tokens of `from`'s KV (blocks shared,
    // a shared partial block copied on the first write). n <= from's computed tokens.
    virtual void share_prefix(SeqId to, SeqId from, int64_t n) = 0;
    // Room for n_new more tokens after the computed ones, all or nothing: false leaves the
    // pool and the sequence unchanged.
    virtual bool reserve(SeqId id, int64_t n_new) = 0;
    // Gives back the blocks beyond those the computed tokens occupy (a step's reservations
    // when another sequence of the step found no room: the step reserves all or nothing).
    virtual void trim(SeqId id) = 0;
    // Records that n tokens more of `id` now have their K/V written (after a step).
    virtual void commit(SeqId id, int64_t n) = 0;
    // Frees every block of `id`; remember: its full blocks enter the prefix cache first.
    virtual void release(SeqId id, bool remember) = 0;
    // Frees up to n blocks only the prefix cache holds, least recently used first; how many.
    virtual int64_t evict_cached(int64_t n) = 0;
};

}  // namespace duet::sched
