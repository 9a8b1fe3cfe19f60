// JSON Schema -> grammar: random walks through the grammar (any allowed byte, like a model
// that knows nothing of JSON) always end in text that parses and validates against the
// schema, checked by a small validator written here independently of the compiler.
#include "model/grammar/json_schema.h"

#include <gtest/gtest.h>

#include <random>

#include "core/error.h"
#include "model/grammar/matcher.h"
#include "grammar_byte_table.h"

namespace duet::model::grammar {
namespace {

using ojson = nlohmann::ordered_json;
using json = nlohmann::json;

// Independent validator for the keywords the tests use.
bool valid(const json& v, const json& s, const json& root) {
    if (s.contains("$ref")) {
        const std::string r = s["$ref"];
        return valid(v, root["$defs"][r.substr(8)], root);
    }
    if (s.contains("enum")) {
        for (const auto& e : s["enum"])
            if (e == v) return true;
        return false;
    }
    if (s.contains("const")) return s["const"] == v;
    if (s.contains("anyOf")) {
        for (const auto& sub : s["anyOf"])
            if (valid(v, sub, root)) return true;
        return false;
    }
    const std::string t = s.value("type", "");
    if (t == "object") {
        if (!v.is_object()) return false;
        for (const auto& k : s.value("required", json::array()))
            if (!v.contains(k.get<std::string>())) return false;
        for (const auto& [k, x] : v.items()) {
            if (!s["properties"].contains(k)) return false;
            if (!valid(x, s["properties"][k], root)) return false;
        }
        return true;
    }
    if (t == "array") {
        if (!v.is_array()) return false;
        if (v.size() < s.value("minItems", 0u) || v.size() > s.value("maxItems", 1000000u)) return false;
        for (const auto& x : v)
            if (!valid(x, s["items"], root)) return false;
        return true;
    }
    if (t == "string") {
        if (!v.is_string()) return false;
        // length in code points
        size_t n = 0;
        for (char c : v.get<std::string>()) n += (uint8_t(c) & 0xC0) != 0x80;
        return n >= s.value("minLength", 0u) && n <= s.value("maxLength", 1000000u);
    }
    if (t == "integer") return v.is_number_integer();
    if (t == "number") return v.is_number();
    if (t == "boolean") return v.is_boolean();
    if (t == "null") return v.is_null();
    return true;
}

// Walks the grammar choosing uniformly among the allowed next bytes (and, once complete,
// stopping with probability 1/2); returns the text.
std::string random_sentence(Matcher& m, std::mt19937_64& rng) {
    std::string out;
    std::vector<uint8_t> allowed;
    for (int steps = 0; steps < 5000; ++steps) {
        m.allowed_tokens(allowed);
        std::vector<int32_t> ids;
        for (int32_t i = 0; i < 257; ++i)
            if (allowed[size_t(i)]) ids.push_back(i);
        if (ids.empty()) break;
        // Half the time pick a closing byte when one is allowed, so walks stay short.
        int32_t id = ids[rng() % ids.size()];
        std::vector<int32_t> closing;
        for (int32_t c : {'"', ']', '}'})
            if (allowed[size_t(c)]) closing.push_back(c);
        if (!closing.empty() && rng() % 2 == 0) id = closing[rng() % closing.size()];
        if (m.can_end() && rng() % 2 == 0) id = 256;
        if (id == 256) return out;
        EXPECT_TRUE(m.accept_token(id));
        out += char(id);
    }
    ADD_FAILURE() << "walk did not finish: " << out;
    return out;
}

const char* kNested = R"({
  "type": "object",
  "properties": {
    "name": {"type": "string", "maxLength": 8},
    "age": {"type": "integer"},
    "score": {"type": "number"},
    "tags": {"type": "array", "items": {"type": "string", "enum": ["red", "green", "blue"]}, "minItems": 1, "maxItems": 3},
    "address": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 5}, "zip": {"type": "integer"}},
                "required": ["city"]},
    "active": {"type": "boolean"},
    "nothing": {"type": "null"},
    "kind": {"anyOf": [{"const": "a"}, {"type": "integer"}]},
    "child": {"$ref": "#/$defs/leaf"}
  },
  "required": ["name", "tags", "address"],
  "$defs": {"leaf": {"type": "object", "properties": {"v": {"type": "boolean"}}, "required": ["v"]}}
})";

TEST(JsonSchema, RandomWalksAlwaysParseAndValidate) {
    const ojson schema = ojson::parse(kNested);
    const auto g = Grammar::parse(json_schema_to_grammar(schema), "nested");
    const json plain = json::parse(kNested);
    std::mt19937_64 rng(7);
    int with_optional = 0;
    for (int i = 0; i < 200; ++i) {
        Matcher m(g, byte_table());
        const std::string text = random_sentence(m, rng);
        const json v = json::parse(text, nullptr, false);
        ASSERT_FALSE(v.is_discarded()) << text;
        EXPECT_TRUE(valid(v, plain, plain)) << text;
        with_optional += v.contains("child");
    }
    EXPECT_GT(with_optional, 0);  // optional properties do appear
}

TEST(JsonSchema, OnlyOptionalPropertiesAnySubsetInOrder) {
    const ojson schema = ojson::parse(R"({"type":"object","properties":{"a":{"const":1},"b":{"const":2},"c":{"const":3}}})");
    const auto g = Grammar::parse(json_schema_to_grammar(schema));
    auto ok = [&](const std::string& t) {
        Matcher m(g, byte_table());
        return m.accept_bytes(t) && m.can_end();
    };
    for (const char* t : {"{}", "{\"a\": 1}", "{\"b\":2}", "{\"a\":1, \"c\":3}", "{\"a\":1,\"b\":2,\"c\":3}"}) EXPECT_TRUE(ok(t)) << t;
    for (const char* t : {"{,}", "{\"b\":2,\"a\":1}", "{\"a\":1,}", "{\"a\":1 \"b\":2}"}) EXPECT_FALSE(ok(t)) << t;
}

TEST(JsonSchema, JsonObjectGrammarAcceptsObjectsOnly) {
    const auto g = Grammar::parse(json_object_grammar());
    auto ok = [&](const std::string& t) {
        Matcher m(g, byte_table());
        return m.accept_bytes(t) && m.can_end();
    };
    EXPECT_TRUE(ok(R"({"a": [1, -2.5e3, "x\u00e9\n"], "b": {"c": null}, "d": true})"));
    EXPECT_FALSE(ok("[1]"));
    EXPECT_FALSE(ok(R"({"a": "\ud800"})"));  // a lone surrogate escape would not parse
    EXPECT_FALSE(ok("{\"a\": 01}"));
    std::mt19937_64 rng(3);
    for (int i = 0; i < 100; ++i) {
        Matcher m(g, byte_table());
        const std::string t = random_sentence(m, rng);
        EXPECT_TRUE(json::parse(t, nullptr, false).is_object()) << t;
    }
}

std::string error_of(const char* schema) {
    try {
        json_schema_to_grammar(ojson::parse(schema), "schema.json");
    } catch (const Error& e) {
        return e.what();
    }
    return "(no error)";
}

TEST(JsonSchema, UnsupportedKeywordsAreRefusedWithTheirPath) {
    EXPECT_EQ(error_of(R"({"type":"object","properties":{"n":{"not":{"type":"integer"}}}})"),
              "schema.json: /properties/n: keyword 'not' is not supported (supported: type, properties, required, "
              "additionalProperties, unevaluatedProperties: false, minProperties, maxProperties, items, prefixItems, "
              "additionalItems, minItems, maxItems, uniqueItems (false or with maxItems <= 1), minLength, maxLength, "
              "pattern, format, minimum, maximum, exclusiveMinimum, exclusiveMaximum, multipleOf 1, enum, const, "
              "anyOf, oneOf, allOf, $ref, nullable; annotations are ignored)");
    EXPECT_EQ(error_of(R"({"type":"strin"})"),
              "schema.json: /type: 'strin' is not a JSON Schema type (allowed: object, array, string, number, "
              "integer, boolean, null)");
    EXPECT_EQ(error_of(R"({"type":"object","properties":{"a":{}},"required":["b"],"additionalProperties":false})"),
              "schema.json: /required: 'b' is not in properties and additionalProperties is false");
    EXPECT_EQ(error_of(R"({"$ref":"#/$defs/x"})"),
              "schema.json: /$ref: '#/$defs/x' does not name an entry of this schema (e.g. #/$defs or #/definitions)");
}

}  // namespace
}  // namespace duet::model::grammar
