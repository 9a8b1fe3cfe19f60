#pragma once
// Incremental matching of generated text against a Grammar, and the token mask it implies.
//
// State: the set of pushdown stacks (llama.cpp's grammar approach): each stack lists the
// grammar positions still to match, top last; a stack whose top is a byte set waits for a
// byte, an empty stack means the text so far is a complete sentence. Feeding a byte keeps the
// stacks whose top set holds it (and expands rule references at the new tops).
//
// Transition cache (a lazily built DFA over stack sets): every distinct stack set reached is
// interned once as a state id, and the state a byte leads to is computed once per (state,
// byte) and then read from a 256-entry row. Inside a JSON string, for instance, every plain
// character leads back to the same state, so after the first mask the per-byte cost is one
// array load instead of copying the stacks. The cache is exact: two equal stack sets accept
// exactly the same continuations.
//
// Masking: allowed_tokens() walks the token table's byte trie depth-first carrying the state
// id, so tokens sharing a prefix share the work, and prunes a subtree as soon as its prefix is
// rejected. End-of-generation tokens are allowed exactly when the text is complete. Cost is one
// cached transition per trie node reached (measured by bench_grammar_mask, bench/model/).
//
// Mask cache: the last kMaxCachedMasks masks are kept by state id, so a state seen again (the
// interior of a string after every token) costs one copy of n_vocab bytes.
//
// Memory: one 1 KiB row per cached state plus kMaxCachedMasks x n_vocab bytes; accept_*()
// drops both caches when more than kMaxCachedStates states are held (assumption: 4096 states,
// i.e. 4 MiB, and 8 masks are far above what a schema grammar needs between two accepted
// tokens; no source).
//
// Counted repetitions (Element::REPEAT): a stack frame of a REPEAT element carries the number
// of iterations begun. Once at least the minimum has begun and more than max_token_bytes() + 1
// remain before the maximum, no single token can tell the exact count apart, so the cached
// state holds the frame relaxed (count dropped): the interior of a string with maxLength 65535
// is one state, as without a limit. The exact stacks are kept beside it (exact_) and stepped
// byte by byte when a token is accepted; the relaxed state is derived from them again, so the
// limit is enforced exactly. Relaxing never changes min_bytes_to_end() (the minimum is met).
// Below the minimum, a frame still owing more iterations than a token can finish is held at
// owing relax_margin_ iterations (no token can tell the difference),
// and the bytes of the rest are kept as close_offset_, added to every reserve read from the
// cached states (uniform: every stack of the state holds such frames with the same offset, else
// nothing is held), so a string with minLength 1500 is one state too until near its minimum.
//
// Length regions (Element::COUNT, @len{m,n}): the frame of an entered region counts the @tick
// elements its body passes; a stack is dropped as soon as its count plus the fewest ticks still
// to come exceeds n, or plus the most falls short of m (Grammar::min_ticks/max_ticks), so every
// state reached can still end. Region counts are exact in the cached state (not relaxed), so
// inside a pattern-and-length string every character is a new state.
//
// Closing reserve: min_bytes_to_end() is the fewest bytes that complete the text from the
// current state (per stack: the sum of Grammar::min_bytes over its pending elements; per state:
// the minimum over its stacks), computed once per cached state. allowed_tokens_within() keeps
// only the tokens after which that reserve fits a budget; the sampler uses it as max_tokens runs
// down, so a constrained generation can always still close (docs/grammar.md).
//
// Ownership: shares the grammar and the token table; owns its cache (copies copy it).
// Thread safety: per-sequence state; even the const methods fill the cache, so one Matcher
// must not be used from two threads at once.
#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string_view>
#include <vector>

#include "model/grammar/grammar.h"
#include "model/grammar/token_table.h"

namespace duet::model::grammar {

class Matcher {
public:
    // A pending grammar position. REPEAT: count = iterations begun (the one in progress
    // included); kRelaxed: the count no longer matters (see above); kFresh: the iteration in
    // progress has matched no byte yet (so an empty body cannot loop).
    struct Frame {
        const Element* e = nullptr;
        uint32_t count = 0;
        uint32_t flags = 0;
        auto operator<=>(const Frame&) const = default;
    };
    // COUNT (@len): kEntered once its body has begun, count = ticks so far.
    static constexpr uint32_t kRelaxed = 1, kFresh = 2, kEntered = 4;
    using Stack = std::vector<Frame>;
    static constexpr size_t kMaxCachedStates = 4096;
    static constexpr size_t kMaxCachedMasks = 8;
    // Parse stacks one state may hold: an ambiguous grammar ((x{0,1000}){0,8}) can need
    // combinatorially many, so beyond this accepting or masking throws duet::Error "grammar: the
    // text so far can be read in more than 4096 ways ..." (assumption: a schema grammar needs one
    // per optional property at most; no source).
    static constexpr size_t kMaxStacks = 4096;

    Matcher(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const TokenTable> tokens);

    // Feeds a token's bytes; false (state unchanged) when the grammar rejects them. An
    // end-of-generation token is accepted only when can_end().
    bool accept_token(int32_t id);
    // Feeds raw bytes; false (state unchanged) when rejected.
    bool accept_bytes(std::string_view bytes);
    bool token_allowed(int32_t id) const;
    // The same answer as token_allowed(), computed by stepping the pushdown stacks byte by
    // byte without the transition cache: the reference the cached paths are tested against.
    bool token_allowed_uncached(int32_t id) const;
    // allowed[i] = 1 when token i may come next ([n_vocab]); returns how many are allowed.
    int64_t allowed_tokens(std::vector<uint8_t>& allowed) const;
    // The fewest bytes that make the text so far a complete sentence (0 when can_end());
    // Grammar::kNoEnd when none can.
    uint32_t min_bytes_to_end() const { return with_offset(close_[size_t(state_)]); }
    // min_bytes_to_end() after token id; Grammar::kNoEnd when the token is not allowed (an
    // end-of-generation token: 0 when can_end()).
    uint32_t min_bytes_after(int32_t id) const;
    // As allowed_tokens(), keeping only the tokens after which min_bytes_to_end() <= max_close_bytes
    // (end-of-generation when can_end()). Not cached.
    int64_t allowed_tokens_within(std::vector<uint8_t>& allowed, uint32_t max_close_bytes) const;
    // The largest min_bytes_after() over the tokens allowed_tokens() allows (kept with the cached
    // mask): when a budget holds it, allowed_tokens() is already allowed_tokens_within().
    uint32_t max_close_after_allowed() const;

    bool can_end() const;   // the text so far is a complete sentence
    bool must_end() const;  // ... and nothing may follow it
    void reset();           // back to the empty text
    size_t cached_states() const { return states_.size(); }

    const Grammar& grammar() const { return *grammar_; }
    const TokenTable& tokens() const { return *tokens_; }

private:
    static constexpr int32_t kDead = -1;     // no stack survives
    static constexpr int32_t kUnknown = -2;  // transition not computed yet

    std::shared_ptr<const Grammar> grammar_;
    std::shared_ptr<const TokenTable> tokens_;
    int32_t state_ = 0;  // current stack set (index into states_)
    // With REPEAT elements: the current stacks with exact counts (states_[state_] is them relaxed).
    std::vector<Stack> exact_;
    uint32_t relax_margin_ = 0;  // a count this far below its maximum is relaxed
    uint64_t close_offset_ = 0;  // bytes owed by the iterations held back below a minimum (above)

    // The cache: states_[id] = its (sorted, deduplicated) stack set; next_[id][byte] = the
    // state after that byte, kDead or kUnknown.
    mutable std::vector<std::vector<Stack>> states_;
    mutable std::vector<std::array<int32_t, 256>> next_;
    mutable std::map<std::vector<Stack>, int32_t> ids_;
    mutable std::vector<uint32_t> close_;  // [states]: min_bytes_to_end() of each state
    struct CachedMask {
        int32_t state = kDead;
        int64_t n_allowed = 0;
        uint32_t max_close = 0;
        std::vector<uint8_t> allowed;
    };
    mutable std::vector<CachedMask> masks_;  // at most kMaxCachedMasks, replaced round-robin
    mutable size_t next_mask_slot_ = 0;

    void advance(Stack stack, std::vector<Stack>& out) const;
    void push_alternatives(uint32_t rule, Stack stack, std::vector<Stack>& work) const;
    void set_state(std::vector<Stack> exact);
    std::vector<Stack> relaxed(std::vector<Stack> stacks, uint64_t& offset) const;
    uint32_t with_offset(uint32_t close) const {
        return close == Grammar::kNoEnd ? close : uint32_t(std::min<uint64_t>(close + close_offset_, Grammar::kNoEnd - 1));
    }
    uint64_t frame_close(const Frame& f) const;
    bool within_lengths(const Stack& s) const;
    [[noreturn]] static void too_ambiguous();
    std::vector<Stack> step(const std::vector<Stack>& stacks, uint8_t byte) const;
    int32_t intern(std::vector<Stack> stacks) const;
    int32_t next_state(int32_t state, uint8_t byte) const {
        const int32_t t = next_[size_t(state)][byte];
        return t != kUnknown ? t : compute_next(state, byte);
    }
    int32_t compute_next(int32_t state, uint8_t byte) const;
    int32_t run(int32_t state, std::string_view bytes) const;  // kDead when rejected
    void bound_cache();
    void walk(int32_t node, int32_t state, uint8_t* allowed, int64_t& n, uint32_t& max_close) const;
    const CachedMask& mask() const;  // the current state's, computed when absent
    void walk_within(int32_t node, int32_t state, uint32_t max_close, uint8_t* allowed, int64_t& n) const;
    uint32_t close_bytes(const std::vector<Stack>& stacks) const;
};

}  // namespace duet::model::grammar
