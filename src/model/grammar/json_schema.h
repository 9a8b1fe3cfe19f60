#pragma once
// JSON Schema -> grammar text (grammar.h format), so a model's output can be constrained to
// JSON that parses and validates against the schema. docs/grammar.md lists what is supported:
//
//   type: object (properties, required, additionalProperties false | schema), array (items,
//   minItems, maxItems), string (minLength, maxLength), number, integer, boolean, null, or a
//   list of types; enum; const; anyOf / oneOf; $ref to #/$defs/NAME or #/definitions/NAME.
//   Annotations (title, description, default, examples, format, $schema, $id, $comment) are
//   ignored. Any other keyword (pattern, minimum, allOf, ...) is refused: the output could
//   otherwise break it.
//
// Shapes chosen so the text is always valid JSON whatever the model picks: properties in
// schema order (required ones first), at most one space between tokens, integers of at most
// 16 digits, exponents of at most 2 digits, no lone-surrogate \u escapes.
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace duet::model::grammar {

// Builds the rules of several schemas into one grammar (tool calls: one per function).
// Not thread-safe; one compiler per grammar being built.
class JsonSchemaCompiler {
public:
    explicit JsonSchemaCompiler(std::string_view source) : source_(source) {}
    // Adds rules matching `schema` ($ref resolved within it); returns the name of its rule.
    // Throws duet::Error "<source>: <json pointer>: <what>" for an unsupported or malformed schema.
    std::string add(const nlohmann::ordered_json& schema, std::string_view name);
    // Every rule added so far plus the shared JSON value rules (no root rule).
    std::string rules() const;

private:
    struct Ctx;
    std::string visit(const nlohmann::ordered_json& s, const std::string& name, const std::string& path, Ctx& ctx);
    std::string object_rule(const nlohmann::ordered_json& s, const std::string& name, const std::string& path, Ctx& ctx);
    std::string fresh(const std::string& base);
    std::string source_;
    std::string out_;
    std::vector<std::string> used_;
};

// root ::= the schema. Throws like JsonSchemaCompiler::add.
std::string json_schema_to_grammar(const nlohmann::ordered_json& schema, std::string_view source = "json schema");

// Any JSON object (OpenAI's response_format json_object).
std::string json_object_grammar();

// The rules for JSON values the schema compiler uses (value, object, array, string, number,
// integer, boolean, null, ws); other generated grammars append them (chat tool calls).
std::string json_value_rules();

// `text` as a grammar literal: "..." with the escapes grammar.h reads.
std::string grammar_literal(std::string_view text);

}  // namespace duet::model::grammar
