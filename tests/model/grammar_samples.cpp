// grammar_samples: the C++ half of the JSON Schema property test (grammar_schema_property,
// run by validate_grammar_samples.py). For each schema of a JSONL file it compiles the grammar
// and draws random texts from it, byte by byte, like a model that knows nothing of JSON, under a
// random token budget enforced by the closing reserve (Matcher::allowed_tokens_within, as the
// sampler does with max_tokens). Prints one JSON line per schema:
//   {"i": N, "samples": ["...", ...], "unclosed": K, "budget_ok": B}   or   {"i": N, "error": "..."}
// The Python side validates every sample with the jsonschema package, independently of duet.
#include <fstream>
#include <iostream>
#include <random>
#include <string_view>

#include "core/error.h"
#include "model/grammar/json_schema.h"
#include "model/grammar/matcher.h"
#include "grammar_byte_table.h"

using namespace duet::model::grammar;
using ojson = nlohmann::ordered_json;

namespace {

// One walk with a budget of `budget` tokens (bytes here; the EOG token counts too). Returns
// false when the text could not be completed within it. An eager walk never ends by choice and,
// while other bytes are allowed, avoids those that close a string or array and those that open
// a nested value, so it runs into maxLength/maxItems (or the budget) without nesting deeper.
bool walk(Matcher& m, int64_t budget, bool eager, std::mt19937_64& rng, std::string& out) {
    std::vector<uint8_t> allowed;
    for (int64_t used = 0; used < budget; ++used) {
        const int64_t left = budget - used;
        if (m.can_end() && (m.must_end() || (!eager && rng() % 3 == 0))) return true;  // the EOG token
        int64_t n = 0;
        for (const int64_t room : {left - 2, left - 1})
            if (room >= 0 && (n = m.allowed_tokens_within(allowed, uint32_t(room))) > 0) break;
        if (n == 0) n = m.allowed_tokens(allowed);
        std::vector<int32_t> ids;
        for (int32_t i = 0; i < 256; ++i)
            if (allowed[size_t(i)]) ids.push_back(i);
        if (ids.empty()) return m.can_end();
        // ASCII half the time, so strings are not all multi-byte noise
        std::vector<int32_t> ascii;
        for (int32_t i : ids)
            if (i >= 0x20 && i < 0x7F && !(eager && std::string_view("\"[]{").find(char(i)) != std::string_view::npos)) ascii.push_back(i);
        const auto& pool = !ascii.empty() && (eager || rng() % 2) ? ascii : ids;
        const int32_t id = pool[rng() % pool.size()];
        if (!m.accept_token(id)) {
            std::cerr << "grammar_samples: an allowed byte was rejected\n";
            std::exit(3);
        }
        out += char(id);
    }
    return m.can_end();
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 4) {
        std::cerr << "usage: grammar_samples SCHEMAS.jsonl WALKS SEED\n";
        return 2;
    }
    std::ifstream in(argv[1]);
    const int walks = std::stoi(argv[2]);
    std::mt19937_64 rng(std::stoull(argv[3]));
    const auto table = byte_table();
    std::string line;
    for (int i = 0; std::getline(in, line); ++i) {
        ojson result = {{"i", i}};
        try {
            const auto g = Grammar::parse(json_schema_to_grammar(ojson::parse(line), "schema"), "schema");
            ojson samples = ojson::array();
            int unclosed = 0, budget_ok = 0;
            for (int w = 0; w < walks; ++w) {
                Matcher m(g, table);
                // budgets from just enough (the shortest completion plus EOG) to generous; the
                // last walk is eager, with room for a 65535-character string
                const int64_t need = int64_t(m.min_bytes_to_end()) + 1;
                const bool eager = w == walks - 1;
                const int64_t budget = need + int64_t(eager ? (rng() % 2 ? 70000 : 3000) : rng() % 4 == 0 ? 0 : rng() % 200);
                std::string text;
                if (walk(m, budget, eager, rng, text)) {
                    samples.push_back(text);
                    ++budget_ok;
                } else {
                    ++unclosed;
                }
            }
            result["samples"] = samples;
            result["unclosed"] = unclosed;
            result["budget_ok"] = budget_ok;
        } catch (const duet::Error& e) {
            result["error"] = e.what();
        }
        std::cout << result.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    }
    return 0;
}
