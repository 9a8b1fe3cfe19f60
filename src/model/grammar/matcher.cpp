#include "model/grammar/matcher.h"

#include <algorithm>

#include "core/error.h"

namespace duet::model::grammar {

namespace {

void dedup(std::vector<Matcher::Stack>& stacks) {
    std::sort(stacks.begin(), stacks.end());
    stacks.erase(std::unique(stacks.begin(), stacks.end()), stacks.end());
}

bool any_empty(const std::vector<Matcher::Stack>& stacks) {
    return std::any_of(stacks.begin(), stacks.end(), [](const Matcher::Stack& s) { return s.empty(); });
}

}  // namespace

Matcher::Matcher(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const TokenTable> tokens)
    : grammar_(std::move(grammar)), tokens_(std::move(tokens)) {
    DUET_CHECK(grammar_ && tokens_, "matcher needs a grammar and a token table");
    relax_margin_ = uint32_t(std::min<size_t>(tokens_->max_token_bytes(), Grammar::kMaxCount)) + 1;
    reset();
}

void Matcher::reset() {
    std::vector<Stack> stacks;
    for (uint32_t start : grammar_->rules[grammar_->root]) {
        Stack s;
        const Element* e = &grammar_->elems[start];
        if (e->kind != Element::END) s.push_back({e});
        advance(std::move(s), stacks);
    }
    dedup(stacks);
    if (stacks.size() > kMaxStacks) too_ambiguous();
    if (stacks.empty()) fail("grammar: no text matches it (its @len bounds exclude every parse)");
    set_state(std::move(stacks));
}

// Makes `exact` the current stacks (non-empty, canonical).
void Matcher::set_state(std::vector<Stack> exact) {
    if (grammar_->has_repeats) {
        exact_ = std::move(exact);
        state_ = intern(relaxed(exact_, close_offset_));
    } else {
        state_ = intern(std::move(exact));
    }
    bound_cache();
}

// The stacks with every count that no token can tell apart dropped or held (see matcher.h);
// `offset` = the bytes the held iterations owe. Repeats inside a @len stay exact: its check
// needs their counts.
std::vector<Matcher::Stack> Matcher::relaxed(std::vector<Stack> stacks, uint64_t& offset) const {
    // below the minimum: held only when every stack owes the same bytes beyond the margin
    auto owed = [&](const Frame& f) -> uint64_t {
        const Element& e = *f.e;
        if (e.kind != Element::REPEAT || (f.flags & kRelaxed) || f.count + relax_margin_ >= e.lo) return 0;
        const uint64_t body = grammar_->rule_min_bytes[e.index];
        return body == Grammar::kNoEnd ? 0 : (e.lo - relax_margin_ - f.count) * body;
    };
    std::vector<uint64_t> per_stack;
    for (const Stack& s : stacks) {
        uint64_t sum = 0;
        for (const Frame& f : s) {
            if (f.flags & kEntered) break;
            sum += owed(f);
        }
        per_stack.push_back(sum);
    }
    const bool hold = std::all_of(per_stack.begin(), per_stack.end(), [&](uint64_t v) { return v == per_stack[0]; });
    offset = hold && !per_stack.empty() ? per_stack[0] : 0;
    bool changed = false;
    for (Stack& s : stacks)
        for (Frame& f : s) {
            if (f.flags & kEntered) break;
            const Element& e = *f.e;
            if (e.kind != Element::REPEAT || (f.flags & kRelaxed)) continue;
            if (f.count < e.lo) {
                if (hold && owed(f) > 0) f.count = e.lo - relax_margin_, changed = true;
                continue;
            }
            if (e.hi != Grammar::kUnbounded && e.hi - f.count <= relax_margin_) continue;
            f.count = 0;
            f.flags |= kRelaxed;
            changed = true;
        }
    if (changed) dedup(stacks);
    return stacks;
}

void Matcher::too_ambiguous() {
    fail("grammar: the text so far can be read in more than {} ways (the limit on grammar ambiguity; nested "
         "optional repetitions such as (x{{0,1000}}){{0,8}} or an object with thousands of optional properties "
         "exceed it)",
         kMaxStacks);
}

// Expands rule references and repeats at the top until every stack's top is a byte set (or it
// is empty). Iterative: a chain of rules as long as the grammar's rule limit must not overflow
// the call stack. Each expansion copies the stack below the rule, so a chain of n leading rules
// costs O(n^2) frame copies once per (state, byte); the transition cache keeps it at that.
void Matcher::advance(Stack stack, std::vector<Stack>& out) const {
    std::vector<Stack> work;
    work.push_back(std::move(stack));
    while (!work.empty()) {
        Stack s = std::move(work.back());
        work.pop_back();
        if (s.empty() || s.back().e->kind == Element::BYTES) {
            if (grammar_->has_counts && !within_lengths(s)) continue;
            out.push_back(std::move(s));
            if (out.size() > 4 * kMaxStacks) too_ambiguous();  // before deduplication: a looser bound
            continue;
        }
        const Frame top = s.back();
        const Element* e = top.e;
        s.pop_back();
        if (e->kind == Element::RULE) {
            if ((e + 1)->kind != Element::END) s.push_back({e + 1});  // continue after the rule
            push_alternatives(e->index, std::move(s), work);
            continue;
        }
        if (e->kind == Element::TICK) {  // one more for the innermost entered @len, if any
            if ((e + 1)->kind != Element::END) s.push_back({e + 1});
            auto region = std::find_if(s.rbegin(), s.rend(), [](const Frame& f) { return f.flags & kEntered; });
            if (region != s.rend() && region->count++ >= region->e->hi) continue;
            work.push_back(std::move(s));
            continue;
        }
        if (e->kind == Element::COUNT) {
            if (!(top.flags & kEntered)) {  // begin counting the body's ticks
                s.push_back({e, 0, kEntered});
                push_alternatives(e->index, std::move(s), work);
            } else if (top.count >= e->lo) {  // the body ended within the bounds
                if ((e + 1)->kind != Element::END) s.push_back({e + 1});
                work.push_back(std::move(s));
            }
            continue;
        }
        // REPEAT with top.count iterations begun: begin another and/or continue after it
        const bool relaxed = top.flags & kRelaxed, fresh = top.flags & kFresh;
        const bool may_exit = relaxed || fresh || top.count >= e->lo;
        if (!fresh && (relaxed || top.count < e->hi)) {
            Stack t = may_exit ? s : std::move(s);
            t.push_back({e, relaxed ? 0 : top.count + 1, (top.flags & kRelaxed) | kFresh});
            push_alternatives(e->index, std::move(t), work);
        }
        if (may_exit) {
            if ((e + 1)->kind != Element::END) s.push_back({e + 1});
            work.push_back(std::move(s));
        }
    }
}

// One work item per alternative of `rule`, each with its first element on top of `stack`.
void Matcher::push_alternatives(uint32_t rule, Stack stack, std::vector<Stack>& work) const {
    const auto& alts = grammar_->rules[rule];
    for (size_t i = 0; i < alts.size(); ++i) {
        Stack t = i + 1 < alts.size() ? stack : std::move(stack);
        const Element* e = &grammar_->elems[alts[i]];
        if (e->kind != Element::END) t.push_back({e});
        work.push_back(std::move(t));
    }
}

// The stacks after one byte, sorted and deduplicated (the canonical form intern() keys on).
std::vector<Matcher::Stack> Matcher::step(const std::vector<Stack>& stacks, uint8_t byte) const {
    std::vector<Stack> next;
    for (const Stack& s : stacks) {
        if (s.empty()) continue;
        const Element* top = s.back().e;
        if (!grammar_->sets[top->index].test(byte)) continue;
        Stack t(s.begin(), s.end() - 1);
        if (grammar_->has_repeats)
            for (Frame& f : t) f.flags &= ~kFresh;  // every iteration in progress has matched a byte
        if ((top + 1)->kind != Element::END) t.push_back({top + 1});
        advance(std::move(t), next);
    }
    if (next.size() > 1) dedup(next);
    if (next.size() > kMaxStacks) too_ambiguous();
    return next;
}

int32_t Matcher::intern(std::vector<Stack> stacks) const {
    if (stacks.empty()) return kDead;
    auto [it, fresh] = ids_.try_emplace(stacks, int32_t(states_.size()));
    if (fresh) {
        close_.push_back(close_bytes(stacks));
        states_.push_back(std::move(stacks));
        next_.emplace_back();
        next_.back().fill(kUnknown);
    }
    return it->second;
}

int32_t Matcher::compute_next(int32_t state, uint8_t byte) const {
    // intern() may grow states_/next_: copy out the stacks' result before writing the row.
    const int32_t t = intern(step(states_[size_t(state)], byte));
    next_[size_t(state)][byte] = t;
    return t;
}

int32_t Matcher::run(int32_t state, std::string_view bytes) const {
    for (char c : bytes) {
        state = next_state(state, uint8_t(c));
        if (state == kDead) return kDead;
    }
    return state;
}

// Drops the cache between tokens once it is large, keeping the current state.
void Matcher::bound_cache() {
    if (states_.size() <= kMaxCachedStates) return;
    std::vector<Stack> current = std::move(states_[size_t(state_)]);
    states_.clear();
    next_.clear();
    ids_.clear();
    close_.clear();
    masks_.clear();
    next_mask_slot_ = 0;
    state_ = intern(std::move(current));
}

bool Matcher::accept_bytes(std::string_view bytes) {
    if (grammar_->has_repeats) {  // exact counts: step the exact stacks, then relax them again
        std::vector<Stack> s = exact_;
        for (char c : bytes) {
            s = step(s, uint8_t(c));
            if (s.empty()) return false;
        }
        set_state(std::move(s));
        return true;
    }
    const int32_t t = run(state_, bytes);
    if (t == kDead) return false;
    state_ = t;
    bound_cache();
    return true;
}

bool Matcher::accept_token(int32_t id) {
    if (id < 0 || id >= tokens_->n_vocab()) fail("grammar: token {} is out of range (allowed: 0 to {})", id, tokens_->n_vocab() - 1);
    if (tokens_->is_eog(id)) return can_end();
    const std::string& b = tokens_->bytes(id);
    return !b.empty() && accept_bytes(b);
}

bool Matcher::token_allowed(int32_t id) const {
    if (tokens_->is_eog(id)) return can_end();
    const std::string& b = tokens_->bytes(id);
    return !b.empty() && run(state_, b) != kDead;
}

bool Matcher::token_allowed_uncached(int32_t id) const {
    if (tokens_->is_eog(id)) return can_end();
    const std::string& b = tokens_->bytes(id);
    if (b.empty()) return false;
    std::vector<Stack> s = grammar_->has_repeats ? exact_ : states_[size_t(state_)];
    for (char c : b) {
        s = step(s, uint8_t(c));
        if (s.empty()) return false;
    }
    return true;
}

// The fewest bytes that finish a frame's element and the rest of its alternative.
uint64_t Matcher::frame_close(const Frame& f) const {
    const Element* base = grammar_->elems.data();
    if (f.flags & kEntered) return grammar_->min_bytes[size_t(f.e + 1 - base)];  // after the @len
    if (f.e->kind != Element::REPEAT) return grammar_->min_bytes[size_t(f.e - base)];
    const uint64_t rest = grammar_->min_bytes[size_t(f.e + 1 - base)];
    if ((f.flags & kRelaxed) || f.count >= f.e->lo) return rest;
    const uint64_t body = grammar_->rule_min_bytes[f.e->index];
    return body == Grammar::kNoEnd ? Grammar::kNoEnd : rest + body * (f.e->lo - f.count);
}

// True when, for every entered @len of the stack, its count plus the fewest ticks the stack can
// still add to it stays within the maximum, and plus the most reaches the minimum.
bool Matcher::within_lengths(const Stack& s) const {
    constexpr uint64_t kBig = uint64_t(1) << 40;
    const Grammar& g = *grammar_;
    const Element* base = g.elems.data();
    auto big = [](uint32_t v) { return v == Grammar::kUnbounded ? kBig : uint64_t(v); };
    uint64_t lo = 0, hi = 0;  // ticks the frames above the region can still take
    for (auto it = s.rbegin(); it != s.rend(); ++it) {
        const Element* e = it->e;
        const size_t i = size_t(e - base);
        if (it->flags & kEntered) {
            if (it->count + lo > big(e->hi) || it->count + std::min(hi, kBig) < e->lo) return false;
            lo = g.min_ticks[i + 1], hi = big(g.max_ticks[i + 1]);  // after the region, for an outer one
        } else if (e->kind == Element::REPEAT) {
            const bool relaxed = it->flags & kRelaxed;
            const uint64_t need = relaxed || it->count >= e->lo ? 0 : e->lo - it->count;
            const uint64_t room = relaxed || e->hi == Grammar::kUnbounded ? kBig : e->hi - it->count;
            lo += need * g.rule_min_ticks[e->index] + g.min_ticks[i + 1];
            const uint64_t each = big(g.rule_max_ticks[e->index]);
            hi += (each == 0 ? 0 : room >= kBig / each ? kBig : room * each) + big(g.max_ticks[i + 1]);
        } else {
            lo += g.min_ticks[i], hi += big(g.max_ticks[i]);
        }
        hi = std::min(hi, kBig);
    }
    return true;
}

uint32_t Matcher::close_bytes(const std::vector<Stack>& stacks) const {
    uint64_t best = Grammar::kNoEnd;
    for (const Stack& st : stacks) {
        uint64_t sum = 0;  // from the top down: a @len still short of its minimum needs a byte per tick
        for (auto it = st.rbegin(); it != st.rend() && sum < best; ++it) {
            if ((it->flags & kEntered) && it->count < it->e->lo) sum = std::max<uint64_t>(sum, it->e->lo - it->count);
            sum += frame_close(*it);
        }
        best = std::min(best, sum);
    }
    return uint32_t(std::min<uint64_t>(best, Grammar::kNoEnd));
}

uint32_t Matcher::min_bytes_after(int32_t id) const {
    if (tokens_->is_eog(id)) return can_end() ? 0 : Grammar::kNoEnd;
    const std::string& b = tokens_->bytes(id);
    const int32_t t = b.empty() ? kDead : run(state_, b);
    return t == kDead ? Grammar::kNoEnd : with_offset(close_[size_t(t)]);
}

void Matcher::walk_within(int32_t node, int32_t state, uint32_t max_close, uint8_t* allowed, int64_t& n) const {
    const auto& trie = tokens_->trie();
    for (const auto& [byte, child] : trie[size_t(node)].children) {
        const int32_t t = next_state(state, byte);
        if (t == kDead) continue;
        if (close_[size_t(t)] <= max_close)
            for (int32_t id : trie[size_t(child)].tokens) {
                allowed[size_t(id)] = 1;
                ++n;
            }
        walk_within(child, t, max_close, allowed, n);
    }
}

int64_t Matcher::allowed_tokens_within(std::vector<uint8_t>& allowed, uint32_t max_close_bytes) const {
    allowed.assign(size_t(tokens_->n_vocab()), 0);
    int64_t n = 0;
    if (max_close_bytes >= close_offset_)  // the cached states' reserves lack the offset
        walk_within(0, state_, uint32_t(max_close_bytes - close_offset_), allowed.data(), n);
    if (can_end())
        for (int32_t id : tokens_->eog_tokens()) {
            allowed[size_t(id)] = 1;
            ++n;
        }
    return n;
}

bool Matcher::can_end() const { return any_empty(states_[size_t(state_)]); }

bool Matcher::must_end() const {
    const auto& s = states_[size_t(state_)];
    return std::all_of(s.begin(), s.end(), [](const Stack& st) { return st.empty(); });
}

void Matcher::walk(int32_t node, int32_t state, uint8_t* allowed, int64_t& n, uint32_t& max_close) const {
    const auto& trie = tokens_->trie();
    for (const auto& [byte, child] : trie[size_t(node)].children) {
        const int32_t t = next_state(state, byte);
        if (t == kDead) continue;
        const auto& ids = trie[size_t(child)].tokens;
        for (int32_t id : ids) allowed[size_t(id)] = 1;
        n += int64_t(ids.size());
        if (!ids.empty()) max_close = std::max(max_close, close_[size_t(t)]);
        walk(child, t, allowed, n, max_close);
    }
}

const Matcher::CachedMask& Matcher::mask() const {
    for (const CachedMask& c : masks_)
        if (c.state == state_) return c;
    if (masks_.size() < kMaxCachedMasks) masks_.emplace_back();
    CachedMask& slot = masks_[next_mask_slot_];
    next_mask_slot_ = (next_mask_slot_ + 1) % kMaxCachedMasks;
    slot.allowed.assign(size_t(tokens_->n_vocab()), 0);
    slot.n_allowed = 0;
    slot.max_close = 0;
    walk(0, state_, slot.allowed.data(), slot.n_allowed, slot.max_close);
    if (can_end())
        for (int32_t id : tokens_->eog_tokens()) {
            slot.allowed[size_t(id)] = 1;
            ++slot.n_allowed;
        }
    slot.state = state_;
    return slot;
}

int64_t Matcher::allowed_tokens(std::vector<uint8_t>& allowed) const {
    const CachedMask& m = mask();
    allowed = m.allowed;
    return m.n_allowed;
}

uint32_t Matcher::max_close_after_allowed() const { return with_offset(mask().max_close); }

}  // namespace duet::model::grammar
