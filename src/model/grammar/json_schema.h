#pragma once
// JSON Schema -> grammar text (grammar.h format), so a model's output can be constrained to
// JSON that parses and validates against the schema. docs/grammar.md lists every keyword as
// enforced, accepted and ignored, or refused; in short:
//
//   enforced: type (or a list of types), properties, required, additionalProperties,
//   unevaluatedProperties false, minProperties/maxProperties (when the declared properties
//   decide them), items, prefixItems, minItems, maxItems, uniqueItems (only when maxItems <= 1
//   or false), minLength, maxLength (counts up to Grammar::kMaxCount), pattern, format
//   (date-time, date, time, uuid, email, ipv4; with minLength/maxLength, as a pattern inside
//   @len, refused when no match fits or both bounds meet a pattern whose lengths skip values), minimum, maximum, exclusiveMinimum, exclusiveMaximum, multipleOf 1 on integers,
//   enum, const, anyOf, oneOf (branches provably disjoint), allOf (merged), nullable, $ref to any local JSON
//   pointer (#, #/$defs/NAME, #/definitions/NAME, ...) including recursion.
//   ignored: annotations (title, description, default, examples, $schema, $id, $comment,
//   deprecated, readOnly, writeOnly, discriminator, contentEncoding, contentMediaType, x-*) and
//   any other format.
//   refused with the keyword's path: anything else (not, if/then/else, patternProperties,
//   uniqueItems true with maxItems > 1, multipleOf other than 1, pattern with format, contains, ...).
//
// Shapes chosen so the text is always valid JSON whatever the model picks: properties in
// schema order (required ones first), at most one space between tokens, integers of at most
// 16 digits, exponents of at most 2 digits, no lone-surrogate \u escapes.
//
// Budgets (SchemaLimits): schema nesting is checked before recursing, the number of generated
// rules and the grammar's size are counted as it grows, and a cancel callback is polled, so a
// hostile schema is refused in bounded time and memory with an error naming the limit.
#include <nlohmann/json.hpp>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace duet::model::grammar {

struct SchemaLimits {
    int max_depth = 64;                      // schema objects nested inside each other
    size_t max_rules = 20000;                // grammar rules generated
    size_t max_grammar_bytes = size_t(4) << 20;  // grammar text generated
    // JSON values copied while resolving $ref with siblings, nullable and allOf (each a merge
    // over copies): bounds the compile time and memory a small schema can ask for, e.g. a
    // thousand references to one large definition.
    size_t max_copied_values = size_t(1) << 20;
    std::function<bool()> cancelled;         // polled while compiling; true throws GrammarCancelled
};

// Builds the rules of several schemas into one grammar (tool calls: one per function).
// Not thread-safe; one compiler per grammar being built.
class JsonSchemaCompiler {
public:
    explicit JsonSchemaCompiler(std::string_view source) : source_(source) {}
    JsonSchemaCompiler(std::string_view source, SchemaLimits limits) : source_(source), limits_(std::move(limits)) {}
    // Adds rules matching `schema` ($ref resolved within it); returns the name of its rule.
    // Throws duet::Error "<source>: <json pointer>: <what>" for an unsupported or malformed
    // schema or an exceeded limit, GrammarCancelled (grammar.h) when cancelled.
    std::string add(const nlohmann::ordered_json& schema, std::string_view name);
    // Every rule added so far plus the shared JSON value rules (no root rule).
    std::string rules() const;

private:
    struct Ctx;
    std::string visit(const nlohmann::ordered_json& s, const std::string& name, const std::string& path, Ctx& ctx);
    std::string visit_ref(const nlohmann::ordered_json& s, const std::string& name, const std::string& path, Ctx& ctx);
    std::string visit_type(const nlohmann::ordered_json& s, const std::string& t, const std::string& name,
                           const std::string& path, Ctx& ctx);
    std::string object_rule(const nlohmann::ordered_json& s, const std::string& name, const std::string& path, Ctx& ctx);
    std::string array_rule(const nlohmann::ordered_json& s, const std::string& name, const std::string& path, Ctx& ctx);
    std::string string_rule(const nlohmann::ordered_json& s, const std::string& path);
    std::string counted_contents(const std::string& contents, int lo, int hi, const std::string& w,
                                 const std::string& what);
    nlohmann::ordered_json merge_all_of(const nlohmann::ordered_json& s, const std::string& path, Ctx& ctx);
    // Counts the values of `copied` against max_copied_values; throws naming the limit past it.
    void charge_copy(const nlohmann::ordered_json& copied, const std::string& path, Ctx& ctx);
    const nlohmann::ordered_json& resolve(const std::string& ref, const std::string& path, const Ctx& ctx) const;
    const nlohmann::ordered_json& deref(const nlohmann::ordered_json& s, const std::string& path, const Ctx& ctx) const;
    unsigned type_bits(const nlohmann::ordered_json& s, const std::string& path, const Ctx& ctx, int depth) const;
    bool disjoint(const nlohmann::ordered_json& a, const nlohmann::ordered_json& b, const std::string& path,
                  const Ctx& ctx) const;
    std::string fresh(const std::string& base);
    void emit(const std::string& rule, const std::string& body);
    std::string where(const std::string& path) const;
    std::string source_;
    SchemaLimits limits_;
    std::string out_;
    size_t n_rules_ = 0;
    std::unordered_map<std::string, int> name_count_;  // base -> last suffix tried
    std::unordered_set<std::string> used_;             // rule names taken
};

// root ::= the schema. Throws like JsonSchemaCompiler::add.
std::string json_schema_to_grammar(const nlohmann::ordered_json& schema, std::string_view source = "json schema");
std::string json_schema_to_grammar(const nlohmann::ordered_json& schema, std::string_view source,
                                   const SchemaLimits& limits);

// JSON text -> ordered_json (keys in document order, as the compiler wants them) in time linear
// in the text, with a nesting limit checked before each level; nlohmann's ordered_json::parse is
// quadratic in depth and in keys per object. Throws duet::Error "<source>: <what>" for invalid
// JSON, a duplicate key or nesting deeper than max_depth.
nlohmann::ordered_json parse_json_schema_text(std::string_view text, std::string_view source, int max_depth = 256);

// Any JSON object (OpenAI's response_format json_object).
std::string json_object_grammar();

// The rules for JSON values the schema compiler uses (value, object, array, string, number,
// integer, boolean, null, ws); other generated grammars append them (chat tool calls).
std::string json_value_rules();

// `text` as a grammar literal: "..." with the escapes grammar.h reads.
std::string grammar_literal(std::string_view text);

}  // namespace duet::model::grammar
