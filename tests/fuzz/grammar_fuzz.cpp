// libFuzzer target for the grammar text parser (model/grammar/grammar.h) and the matcher: any
// text either parses to a grammar that can be walked byte by byte under a budget, or ends in one
// duet::Error naming the line (syntax, undefined rule, left recursion, nesting/size limits).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/error.h"
#include "fuzz_util.h"
#include "grammar_fuzz_util.h"
#include "model/grammar/grammar.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    try {
        duet::fuzz::walk_grammar(duet::model::grammar::Grammar::parse(text, "fuzz"), text);
    } catch (const duet::Error&) {
    } catch (const std::exception& e) {
        duet::fuzz::unexpected("not a duet::Error", &e);
    }
    return 0;
}
