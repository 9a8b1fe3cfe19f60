#include "model/grammar/matcher.h"

#include <algorithm>

#include "core/error.h"

namespace duet::model::grammar {

namespace {

void dedup(std::vector<Matcher::Stack>& stacks) {
    std::sort(stacks.begin(), stacks.end());
    stacks.erase(std::unique(stacks.begin(), stacks.end()), stacks.end());
}

}  // namespace

Matcher::Matcher(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const TokenTable> tokens)
    : grammar_(std::move(grammar)), tokens_(std::move(tokens)) {
    DUET_CHECK(grammar_ && tokens_, "matcher needs a grammar and a token table");
    reset();
}

void Matcher::reset() {
    stacks_.clear();
    for (uint32_t start : grammar_->rules[grammar_->root]) {
        Stack s;
        const Element* e = &grammar_->elems[start];
        if (e->kind != Element::END) s.push_back(e);
        advance(std::move(s), stacks_);
    }
    dedup(stacks_);
}

// Expands rule references at the top until every stack's top is a byte set (or it is empty).
void Matcher::advance(Stack stack, std::vector<Stack>& out) const {
    if (stack.empty() || stack.back()->kind == Element::BYTES) {
        out.push_back(std::move(stack));
        return;
    }
    const Element* top = stack.back();
    stack.pop_back();
    if ((top + 1)->kind != Element::END) stack.push_back(top + 1);  // continue after the rule
    for (uint32_t start : grammar_->rules[top->index]) {
        Stack s = stack;
        const Element* e = &grammar_->elems[start];
        if (e->kind != Element::END) s.push_back(e);
        advance(std::move(s), out);
    }
}

std::vector<Matcher::Stack> Matcher::step(const std::vector<Stack>& stacks, uint8_t byte) const {
    std::vector<Stack> next;
    for (const Stack& s : stacks) {
        if (s.empty()) continue;
        const Element* top = s.back();
        if (!grammar_->sets[top->index].test(byte)) continue;
        Stack t(s.begin(), s.end() - 1);
        if ((top + 1)->kind != Element::END) t.push_back(top + 1);
        advance(std::move(t), next);
    }
    if (next.size() > 1) dedup(next);
    return next;
}

bool Matcher::feed(std::vector<Stack>& stacks, std::string_view bytes) const {
    for (char c : bytes) {
        stacks = step(stacks, uint8_t(c));
        if (stacks.empty()) return false;
    }
    return true;
}

bool Matcher::accept_bytes(std::string_view bytes) {
    std::vector<Stack> s = stacks_;
    if (!feed(s, bytes)) return false;
    stacks_ = std::move(s);
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
    if (b.empty()) return false;
    std::vector<Stack> s = stacks_;
    return feed(s, b);
}

bool Matcher::can_end() const {
    return std::any_of(stacks_.begin(), stacks_.end(), [](const Stack& s) { return s.empty(); });
}

bool Matcher::must_end() const {
    return std::all_of(stacks_.begin(), stacks_.end(), [](const Stack& s) { return s.empty(); });
}

void Matcher::walk(int32_t node, const std::vector<Stack>& stacks, std::vector<uint8_t>& allowed, int64_t& n) const {
    const auto& nd = tokens_->trie()[size_t(node)];
    if (node != 0)
        for (int32_t id : nd.tokens) {
            allowed[size_t(id)] = 1;
            ++n;
        }
    // The bytes any live stack can take next: children outside it are pruned without work.
    std::bitset<256> next;
    for (const Stack& s : stacks)
        if (!s.empty()) next |= grammar_->sets[s.back()->index];
    for (const auto& [byte, child] : nd.children) {
        if (!next.test(byte)) continue;
        const std::vector<Stack> after = step(stacks, byte);
        if (!after.empty()) walk(child, after, allowed, n);
    }
}

int64_t Matcher::allowed_tokens(std::vector<uint8_t>& allowed) const {
    allowed.assign(size_t(tokens_->n_vocab()), 0);
    int64_t n = 0;
    walk(0, stacks_, allowed, n);
    if (can_end())
        for (int32_t id : tokens_->eog_tokens()) {
            allowed[size_t(id)] = 1;
            ++n;
        }
    return n;
}

}  // namespace duet::model::grammar
