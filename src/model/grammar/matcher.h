#pragma once
// Incremental matching of generated text against a Grammar, and the token mask it implies.
//
// State: the set of pushdown stacks (llama.cpp's grammar approach): each stack lists the
// grammar positions still to match, top last; a stack whose top is a byte set waits for a
// byte, an empty stack means the text so far is a complete sentence. Feeding a byte keeps the
// stacks whose top set holds it (and expands rule references at the new tops).
//
// Masking: allowed_tokens() walks the token table's byte trie depth-first carrying the stacks,
// so tokens sharing a prefix share the work, and prunes a subtree as soon as its prefix is
// rejected. End-of-generation tokens are allowed exactly when the text is complete.
//
// Cost is proportional to the trie nodes reached, not to n_vocab x token length; measured by
// bench_grammar_mask (bench/model/).
//
// Ownership: shares the grammar and the token table. Thread safety: per-sequence state.
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "model/grammar/grammar.h"
#include "model/grammar/token_table.h"

namespace duet::model::grammar {

class Matcher {
public:
    using Stack = std::vector<const Element*>;

    Matcher(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const TokenTable> tokens);

    // Feeds a token's bytes; false (state unchanged) when the grammar rejects them. An
    // end-of-generation token is accepted only when can_end().
    bool accept_token(int32_t id);
    // Feeds raw bytes; false (state unchanged) when rejected.
    bool accept_bytes(std::string_view bytes);
    bool token_allowed(int32_t id) const;
    // allowed[i] = 1 when token i may come next ([n_vocab]); returns how many are allowed.
    int64_t allowed_tokens(std::vector<uint8_t>& allowed) const;

    bool can_end() const;   // the text so far is a complete sentence
    bool must_end() const;  // ... and nothing may follow it
    void reset();           // back to the empty text

    const Grammar& grammar() const { return *grammar_; }
    const TokenTable& tokens() const { return *tokens_; }

private:
    std::shared_ptr<const Grammar> grammar_;
    std::shared_ptr<const TokenTable> tokens_;
    std::vector<Stack> stacks_;

    void advance(Stack stack, std::vector<Stack>& out) const;
    std::vector<Stack> step(const std::vector<Stack>& stacks, uint8_t byte) const;
    bool feed(std::vector<Stack>& stacks, std::string_view bytes) const;
    void walk(int32_t node, const std::vector<Stack>& stacks, std::vector<uint8_t>& allowed, int64_t& n) const;
};

}  // namespace duet::model::grammar
