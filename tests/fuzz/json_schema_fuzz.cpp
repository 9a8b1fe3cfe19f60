// libFuzzer target for the JSON Schema -> grammar compiler (model/grammar/json_schema.h) and the
// grammar it produces: any JSON text either compiles to a grammar that parses and can be walked,
// or ends in one duet::Error (a refused keyword, an exceeded depth/size limit). Depth- and
// size-heavy inputs come from json_schema.dict; the limits keep every input fast and small.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/error.h"
#include "fuzz_util.h"
#include "grammar_fuzz_util.h"
#include "model/grammar/grammar.h"
#include "model/grammar/json_schema.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    const auto schema = nlohmann::ordered_json::parse(text, nullptr, false);
    if (schema.is_discarded()) return 0;
    try {
        const std::string grammar = duet::model::grammar::json_schema_to_grammar(schema, "fuzz");
        duet::fuzz::walk_grammar(duet::model::grammar::Grammar::parse(grammar, "fuzz"), text);
    } catch (const duet::Error&) {
    } catch (const std::exception& e) {
        duet::fuzz::unexpected("not a duet::Error", &e);
    }
    return 0;
}
