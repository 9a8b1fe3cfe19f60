// JSON Schema keywords the frameworks write (zod, pydantic): exact acceptance of integer
// ranges at and around their bounds, number bounds, patterns, formats, $ref recursion, allOf,
// prefixItems; the refusals and the compilation budgets (depth, rules, cancel), each with its
// exact message. Random schemas against an independent validator: grammar_schema_property.
#include <gtest/gtest.h>

#include <atomic>
#include <random>

#include "core/error.h"
#include "model/grammar/json_schema.h"
#include "model/grammar/matcher.h"
#include "grammar_byte_table.h"

namespace duet::model::grammar {
namespace {

using ojson = nlohmann::ordered_json;

struct Accepts {
    std::shared_ptr<const Grammar> g;
    explicit Accepts(const std::string& schema) : g(Grammar::parse(json_schema_to_grammar(ojson::parse(schema)))) {}
    bool operator()(const std::string& text) const {
        Matcher m(g, byte_table());
        return m.accept_bytes(text) && m.can_end();
    }
};

std::string error_of_schema(const ojson& schema, const SchemaLimits& limits = {}) {
    try {
        Grammar::parse(json_schema_to_grammar(schema, "s.json", limits));
    } catch (const Error& e) {
        return e.what();
    }
    return "(no error)";
}

std::string error_of(const std::string& schema, const SchemaLimits& limits = {}) {
    try {
        Grammar::parse(json_schema_to_grammar(ojson::parse(schema), "s.json", limits));
    } catch (const Error& e) {
        return e.what();
    }
    return "(no error)";
}

TEST(JsonSchemaKeywords, IntegerRangesAcceptExactlyTheirIntegers) {
    const std::vector<std::pair<int64_t, int64_t>> ranges = {
        {0, 0}, {-5, 5}, {3, 17}, {7, 1234}, {-1234, -7}, {100, 100000}, {-99, 0}, {19, 91}, {0, 9}, {10, 99}};
    for (const auto& [lo, hi] : ranges) {
        const Accepts ok(fmt::format(R"({{"type":"integer","minimum":{},"maximum":{}}})", lo, hi));
        for (int64_t v = lo - 150; v <= hi + 150; v += (v > lo + 200 && v < hi - 200) ? 97 : 1)
            EXPECT_EQ(ok(std::to_string(v)), v >= lo && v <= hi) << lo << ".." << hi << ": " << v;
        EXPECT_FALSE(ok("-0"));
        EXPECT_FALSE(ok("0" + std::to_string(std::max<int64_t>(lo, 1))));  // no leading zeros
    }
}

TEST(JsonSchemaKeywords, ZodSafeIntegerBoundsAreEnforced) {
    const Accepts ok(R"({"type":"integer","minimum":-9007199254740991,"maximum":9007199254740991})");
    EXPECT_TRUE(ok("9007199254740991"));
    EXPECT_TRUE(ok("-9007199254740991"));
    EXPECT_TRUE(ok("0"));
    EXPECT_TRUE(ok("8999999999999999"));
    EXPECT_FALSE(ok("9007199254740992"));
    EXPECT_FALSE(ok("-9007199254740992"));
    EXPECT_FALSE(ok("10000000000000000"));
    EXPECT_FALSE(ok("1.5"));
    const Accepts positive(R"({"type":"integer","exclusiveMinimum":0,"maximum":9007199254740991})");
    EXPECT_FALSE(positive("0"));
    EXPECT_TRUE(positive("1"));
    const Accepts draft4(R"({"type":"integer","minimum":5,"exclusiveMinimum":true,"maximum":9,"exclusiveMaximum":true})");
    EXPECT_FALSE(draft4("5"));
    EXPECT_TRUE(draft4("6"));
    EXPECT_TRUE(draft4("8"));
    EXPECT_FALSE(draft4("9"));
}

TEST(JsonSchemaKeywords, NumberBoundsKeepEveryValueInside) {
    const Accepts ok(R"({"type":"number","minimum":-2.5,"exclusiveMaximum":3})");
    for (const char* t : {"-2", "-1.99", "0", "0.5", "2.999999", "-0.5", "2"}) EXPECT_TRUE(ok(t)) << t;
    // -2.4 is inside but not generated: a fraction needs its whole unit interval inside (sound subset)
    for (const char* t : {"3", "3.0", "-3", "-2.6", "-2.5e0", "1e1", "4"}) EXPECT_FALSE(ok(t)) << t;
    EXPECT_EQ(error_of(R"({"type":"number","minimum":0.25,"maximum":0.75})"),
              "s.json: /: no number of at most 16 digits lies within the bounds (minimum/maximum/exclusiveMinimum/"
              "exclusiveMaximum)");
}

TEST(JsonSchemaKeywords, PatternsMatchTheirJsonEncodedStrings) {
    const Accepts code(R"({"type":"string","pattern":"^[A-Z]{3}-\\d{2}$"})");
    EXPECT_TRUE(code(R"("ABC-12")"));
    EXPECT_FALSE(code(R"("ABC-1")"));
    EXPECT_FALSE(code(R"("abc-12")"));
    const Accepts alt(R"({"type":"string","pattern":"^(foo|ba(r|z))+$"})");
    EXPECT_TRUE(alt(R"("foobazbar")"));
    EXPECT_FALSE(alt(R"("")"));
    EXPECT_FALSE(alt(R"("fob")"));
    // a quote and a backslash in the pattern are written escaped inside the JSON string
    const Accepts quote(R"({"type":"string","pattern":"^\"\\\\$"})");
    EXPECT_TRUE(quote(R"("\"\\")"));
    EXPECT_FALSE(quote(R"(""\")"));
    EXPECT_EQ(error_of(R"x({"type":"string","pattern":"^(?=a)"})x"),
              "s.json: /pattern: lookaround, inline flags and other (? groups are not supported at offset 2 "
              "(supported: literals, . [classes] \\d \\w \\s, groups, |, * + ? {m,n}, ^ at the start and $ at the end)");
    EXPECT_EQ(error_of(R"({"type":"string","pattern":"a$b"})").rfind("s.json: /pattern: '$' before the end of the "
                                                                     "pattern at offset 1 (supported:", 0), 0u);
}

TEST(JsonSchemaKeywords, FormatsProduceWellFormedValues) {
    const Accepts date(R"({"type":"string","format":"date"})");
    EXPECT_TRUE(date(R"("2024-02-28")"));
    EXPECT_FALSE(date(R"("2024-02-30")"));
    EXPECT_FALSE(date(R"("2024-13-01")"));
    const Accepts dt(R"({"type":"string","format":"date-time"})");
    EXPECT_TRUE(dt(R"("2024-06-30T23:59:59.123+02:00")"));
    EXPECT_TRUE(dt(R"("2024-06-30T00:00:00Z")"));
    EXPECT_FALSE(dt(R"("2024-06-30 00:00:00Z")"));
    const Accepts uuid(R"({"type":"string","format":"uuid"})");
    EXPECT_TRUE(uuid(R"("123e4567-e89b-12d3-a456-426614174000")"));
    EXPECT_FALSE(uuid(R"("123e4567e89b12d3a456426614174000")"));
    const Accepts email(R"({"type":"string","format":"email"})");
    EXPECT_TRUE(email(R"("a.b@example.com")"));
    EXPECT_FALSE(email(R"("a@b")"));
    const Accepts ip(R"({"type":"string","format":"ipv4"})");
    EXPECT_TRUE(ip(R"("255.0.10.1")"));
    EXPECT_FALSE(ip(R"("256.0.0.1")"));
    const Accepts uri(R"({"type":"string","format":"uri","minLength":1})");  // not enforced: any string
    EXPECT_TRUE(uri(R"("not a uri")"));
}

TEST(JsonSchemaKeywords, RefsAllOfPrefixItemsAndNullable) {
    const Accepts tree(R"({"$ref":"#/$defs/n","$defs":{"n":{"type":"object","properties":{
        "v":{"const":1},"k":{"type":"array","items":{"$ref":"#/$defs/n"}}},"required":["v"],
        "additionalProperties":false}}})");
    EXPECT_TRUE(tree(R"({"v":1,"k":[{"v":1},{"v":1,"k":[]}]})"));
    EXPECT_FALSE(tree(R"({"v":1,"k":[{}]})"));
    const Accepts self(R"({"type":"object","properties":{"next":{"anyOf":[{"$ref":"#"},{"type":"null"}]}},
        "required":["next"]})");
    EXPECT_TRUE(self(R"({"next":{"next":null}})"));
    const Accepts merged(R"({"allOf":[{"type":"object","properties":{"a":{"type":"integer","minimum":0}},
        "required":["a"]},{"properties":{"a":{"maximum":5},"b":{"type":"boolean"}}}]})");
    EXPECT_TRUE(merged(R"({"a":5,"b":true})"));
    EXPECT_FALSE(merged(R"({"a":6})"));
    EXPECT_FALSE(merged(R"({"b":true})"));
    const Accepts pair(R"({"type":"array","prefixItems":[{"type":"integer"},{"type":"string"}],"items":false,
        "minItems":1})");
    EXPECT_TRUE(pair(R"([1])"));
    EXPECT_TRUE(pair(R"([1,"x"])"));
    EXPECT_FALSE(pair(R"([])"));
    EXPECT_FALSE(pair(R"([1,"x",2])"));
    EXPECT_FALSE(pair(R"(["x"])"));
    const Accepts nullable(R"({"type":"string","nullable":true,"maxLength":2})");
    EXPECT_TRUE(nullable("null"));
    EXPECT_TRUE(nullable(R"("ab")"));
    EXPECT_FALSE(nullable(R"("abc")"));
}

TEST(JsonSchemaKeywords, OneOfNeedsProvablyDisjointBranches) {
    // a discriminated union (pydantic): a required property with different const values
    const Accepts pet(R"({"oneOf":[{"$ref":"#/$defs/cat"},{"$ref":"#/$defs/dog"}],"$defs":{
        "cat":{"type":"object","properties":{"kind":{"const":"cat"},"lives":{"type":"integer"}},"required":["kind"]},
        "dog":{"type":"object","properties":{"kind":{"enum":["dog"]},"good":{"type":"boolean"}},"required":["kind"]}}})");
    EXPECT_TRUE(pet(R"({"kind":"cat","lives":9})"));
    EXPECT_TRUE(pet(R"({"kind":"dog"})"));
    EXPECT_FALSE(pet(R"({"kind":"dog","lives":9})"));
    const Accepts types(R"({"oneOf":[{"type":"string"},{"type":["integer","null"]}]})");
    EXPECT_TRUE(types("null"));
    EXPECT_EQ(error_of(R"({"oneOf":[{"type":"number"},{"type":"integer","minimum":0}]})"),
              "s.json: /oneOf: branches 0 and 1 may both match one value, so 'exactly one' cannot be guaranteed (use "
              "anyOf, or give the branches different types or a required property with different const values)");
    EXPECT_NE(error_of(R"({"oneOf":[{"type":"object","properties":{"k":{"const":1}}},
        {"type":"object","properties":{"k":{"const":2}}}]})").find("branches 0 and 1 may both match"),
              std::string::npos);  // "k" is not required: {} matches both
}

TEST(JsonSchemaKeywords, UnenforceableKeywordsAreRefusedByName) {
    EXPECT_EQ(error_of(R"({"type":"array","uniqueItems":true})"),
              "s.json: /uniqueItems: true cannot be enforced by a grammar when maxItems is above 1 (allowed: false, or "
              "maxItems 0 or 1)");
    EXPECT_EQ(error_of(R"({"type":"number","multipleOf":0.5})"),
              "s.json: /multipleOf: 0.5 cannot be enforced by a grammar (allowed: 1, i.e. an integer)");
    EXPECT_EQ(error_of(R"({"type":"object","properties":{"a":{"type":"string","pattern":"^\\d{4}$","maxLength":3}}})"),
              "s.json: /properties/a: pattern '^\\d{4}$' matches no string of at most 3 characters (its matches have 4 "
              "to 4)");
    EXPECT_EQ(error_of(R"({"type":"string","format":"uuid","minLength":40})"),
              "s.json: /: format 'uuid' matches no string of at least 40 characters (its matches have 36 to 36)");
    EXPECT_EQ(error_of(R"({"type":"string","pattern":"^(ab)+$","minLength":3,"maxLength":9})"),
              "s.json: /: minLength 3 and maxLength 9 together with pattern '^(ab)+$' cannot be enforced: a repeated or "
              "optional part of 2 or more characters makes the lengths it can reach skip values (allowed with it: only "
              "one of minLength/maxLength, or both when its repeated and optional parts are single characters)");
    EXPECT_EQ(error_of(R"({"type":"string","format":"time","minLength":10,"maxLength":12})"),
              "s.json: /: minLength 10 and maxLength 12 together with format 'time' cannot be enforced: a repeated or "
              "optional part of 2 or more characters makes the lengths it can reach skip values (allowed with it: only "
              "one of minLength/maxLength, or both when its repeated and optional parts are single characters)");
    EXPECT_EQ(error_of(R"({"allOf":[{"type":"string"},{"type":"integer"}]})"),
              "s.json: /allOf/1: the types \"string\" and \"integer\" exclude each other");
}

// A schema nested `depth` levels deep through properties.
std::string deep_schema(int depth) {
    std::string s;
    for (int i = 0; i < depth; ++i) s += R"({"type":"object","properties":{"a":)";
    s += R"({"type":"integer"})";
    for (int i = 0; i < depth; ++i) s += "}}";
    return s;
}

TEST(JsonSchemaBudget, DeepSchemasAreRefusedAtTheDepthLimit) {
    EXPECT_EQ(error_of(deep_schema(40)), "(no error)");
    const std::string e = error_of(deep_schema(5000));
    EXPECT_NE(e.find(": schemas nest deeper than 64 levels (the limit on schema nesting)"), std::string::npos) << e;
    EXPECT_EQ(e.rfind("s.json: /properties/a/properties/a/", 0), 0u) << e.substr(0, 80);
}

TEST(JsonSchemaBudget, WideSchemasAreRefusedAtTheRuleLimit) {
    ojson wide = {{"type", "object"}, {"properties", ojson::object()}};
    auto& props = wide["properties"].get_ref<ojson::object_t&>();  // appended without ordered_json's key search
    for (int i = 0; i < 30000; ++i) props.emplace_back("p" + std::to_string(i), ojson{{"type", "string"}});
    EXPECT_EQ(error_of_schema(wide),
              "s.json: the schema needs more than 20000 grammar rules (the limit on grammar size)");
    SchemaLimits small;
    small.max_grammar_bytes = 1000;
    EXPECT_EQ(error_of(R"({"type":"object","properties":{"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa":{"type":"string",
        "pattern":"^(abc|def|ghi|jkl|mno|pqr|stu|vwx|yz0|123|456|789){1,2}[a-z0-9]{3,9}(x|y|z)+\\d{2,9}$"}}})", small),
              "s.json: the schema's grammar exceeds 1000 bytes (the limit on grammar size)");
}

TEST(JsonSchemaBudget, ManyOptionalPropertiesCompileInLinearSize) {
    auto grammar_of = [](int n) {
        ojson wide = {{"type", "object"}, {"properties", ojson::object()}};
        auto& props = wide["properties"].get_ref<ojson::object_t&>();
        for (int i = 0; i < n; ++i) props.emplace_back("p" + std::to_string(i), ojson{{"type", "boolean"}});
        return json_schema_to_grammar(wide);
    };
    const std::string text = grammar_of(2000);
    EXPECT_LT(double(grammar_of(4000).size()) / double(text.size()), 2.2);  // linear, not quadratic
    const auto g = Grammar::parse(text);
    Matcher m(g, byte_table());
    EXPECT_TRUE(m.accept_bytes(R"({"p5":true,"p1999":false})") && m.can_end());
    EXPECT_FALSE(Matcher(g, byte_table()).accept_bytes(R"({"p5":true,"p4":false})"));
}

TEST(JsonSchemaBudget, SchemaTextParsesInLinearTimeWithADepthLimit) {
    const auto s = parse_json_schema_text(R"({"b":1,"a":[true,null,"x",{"z":2.5,"y":-3}]})", "f.json");
    EXPECT_EQ(s.dump(), R"({"b":1,"a":[true,null,"x",{"z":2.5,"y":-3}]})");  // document order kept
    auto error = [](const std::string& text) {
        try {
            parse_json_schema_text(text, "f.json", 8);
        } catch (const Error& e) {
            return std::string(e.what());
        }
        return std::string("(no error)");
    };
    EXPECT_EQ(error(std::string(8, '[') + std::string(8, ']')), "(no error)");
    EXPECT_EQ(error(std::string(100000, '[') + std::string(100000, ']')),
              "f.json: JSON nests deeper than 8 levels (the limit on JSON nesting)");
    EXPECT_EQ(error(R"({"a":1,"a":2})"), "f.json: duplicate key 'a' in an object");
    EXPECT_EQ(error("{").rfind("f.json: [json.exception.parse_error.101] parse error at line 1, column 2", 0), 0u);
    // 200 000 keys in one object: ordered_json::parse searches the keys on every insertion
    std::string wide = "{";
    for (int i = 0; i < 200000; ++i) wide += fmt::format("{}\"k{}\":{}", i ? "," : "", i, i);
    const auto w = parse_json_schema_text(wide + "}", "wide.json");
    ASSERT_EQ(w.size(), 200000u);
    EXPECT_EQ(w.begin().key(), "k0");
    EXPECT_EQ(w["k199999"], 199999);
}

// Each anyOf branch is a $ref with a sibling keyword: the compiler merges a copy of the
// definition (with its 100-number annotation) per branch, so the work grows with branches x size.
TEST(JsonSchemaBudget, CopyingWorkIsBoundedByItsLimit) {
    auto schema = [](int branches) {
        ojson any = ojson::array();
        for (int i = 0; i < branches; ++i) any.push_back({{"$ref", "#/$defs/a"}, {"type", "object"}});
        return ojson{{"$defs", {{"a", {{"type", "object"}, {"examples", std::vector<int>(100, 0)}}}}}, {"anyOf", any}};
    };
    SchemaLimits limits;
    limits.max_copied_values = 1000;
    EXPECT_EQ(error_of_schema(schema(4), limits), "(no error)");
    EXPECT_EQ(error_of_schema(schema(40), limits),
              "s.json: /anyOf/8: resolving $ref, nullable and allOf copies more than 1000 JSON values (the limit "
              "on schema compilation work; a definition referenced many times with sibling keywords multiplies it)");
    EXPECT_EQ(error_of_schema(schema(40)), "(no error)");  // the default limit, 1048576 values
}

TEST(JsonSchemaBudget, CompilationStopsWhenCancelled) {
    std::atomic<int> polls{0};
    SchemaLimits limits;
    limits.cancelled = [&] { return ++polls > 3; };
    try {
        json_schema_to_grammar(ojson::parse(deep_schema(30)), "s.json", limits);
        FAIL() << "not cancelled";
    } catch (const GrammarCancelled& e) {
        EXPECT_STREQ(e.what(), "s.json: schema compilation cancelled");
    }
    GrammarLimits gl;
    gl.cancelled = [] { return true; };
    EXPECT_THROW(Grammar::parse("root ::= \"a\"", "g", gl), GrammarCancelled);
}

TEST(GrammarBudget, DeepGroupsAndHugeRepeatsAreRefusedByTheirLimit) {
    const std::string deep = "root ::= " + std::string(100000, '(') + "\"a\"" + std::string(100000, ')');
    try {
        Grammar::parse(deep, "g");
        FAIL() << "accepted";
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "g: line 1: groups nest deeper than 128 levels (the limit on grammar nesting)");
    }
    try {
        Grammar::parse("root ::= (((\"ab\"{64}){64}){64}){64}", "g");  // counts up to 64 are copied
        FAIL() << "accepted";
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "g: line 1: the grammar expands to more than 2097152 elements (the limit on grammar size)");
    }
    // larger counts are one counted element each, whatever the count
    EXPECT_LT(Grammar::parse("root ::= ((\"ab\"{1000}){1000}){1000000}", "g")->elems.size(), 16u);
    try {
        Grammar::parse("root ::= \"a\"{0,1000001}", "g");
        FAIL() << "accepted";
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "g: line 1: repeat count 1000001 is too large (allowed: up to 1000000)");
    }
}

TEST(GrammarBudget, AmbiguityBeyondTheStackLimitIsAnErrorNotAHang) {
    // found by grammar_fuzz: each byte can end any of 8 nullable groups, so the parse stacks grow
    // combinatorially
    const auto g = Grammar::parse("root ::= ([a-z]{0,1000}){0,8} \"!\"", "g");
    Matcher m(g, byte_table());
    try {
        for (int i = 0; i < 1000; ++i) m.accept_bytes("a");
        FAIL() << "no limit";
    } catch (const Error& e) {
        EXPECT_EQ(std::string(e.what()).rfind("grammar: the text so far can be read in more than 4096 ways (the limit "
                                              "on grammar ambiguity;", 0), 0u) << e.what();
    }
    // the same pattern from a schema is refused the same way, at generation, not by a hang
    const auto p = Grammar::parse(json_schema_to_grammar(ojson::parse(R"({"type":"string","pattern":"^(a{0,1000}){0,8}$"})")));
    Matcher pm(p, byte_table());
    ASSERT_TRUE(pm.accept_bytes("\""));
    EXPECT_THROW(
        for (int i = 0; i < 1000; ++i) pm.accept_bytes("a"), Error);
}

TEST(GrammarBudget, LongRuleChainsNeedNoDeepRecursion) {
    // r0 ::= r1 "a"; ... a chain as long as the rule limit allows, checked for left recursion
    // without recursing once per rule, and its closing reserve computed
    std::string text = "root ::= r0\n";
    const int n = 20000;
    for (int i = 0; i < n; ++i) text += fmt::format("r{} ::= r{} \"a\"\n", i, i + 1);
    text += fmt::format("r{} ::= \"b\"\n", n);
    const auto g = Grammar::parse(text, "chain");
    Matcher m(g, byte_table());
    EXPECT_EQ(m.min_bytes_to_end(), uint32_t(n + 1));
    text.resize(text.rfind('r'));  // drop the last rule: r<n> now loops back to r0 before any byte
    text += fmt::format("r{} ::= r0 \"b\"\n", n);
    try {
        Grammar::parse(text, "chain");
        FAIL() << "left recursion accepted";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("is left-recursive"), std::string::npos) << e.what();
    }
}

TEST(ClosingReserve, MinBytesToEndFollowsTheText) {
    const auto g = Grammar::parse(json_schema_to_grammar(ojson::parse(
        R"({"type":"object","properties":{"name":{"type":"string"},"n":{"type":"integer"}},"required":["name","n"]})")));
    Matcher m(g, byte_table());
    EXPECT_EQ(m.min_bytes_to_end(), std::string(R"({"name":"","n":0})").size());
    ASSERT_TRUE(m.accept_bytes(R"({"name":"abc)"));
    EXPECT_EQ(m.min_bytes_to_end(), std::string(R"(","n":0})").size());
    EXPECT_EQ(m.min_bytes_after('"'), std::string(R"(,"n":0})").size());
    EXPECT_EQ(m.min_bytes_after('{'), m.min_bytes_to_end());  // one more character of the string
    EXPECT_EQ(m.min_bytes_after(0x01), Grammar::kNoEnd);       // a raw control byte is not allowed
}

TEST(ClosingReserve, TheBudgetedMaskKeepsOnlyTokensThatStillClose) {
    const auto g = Grammar::parse(json_schema_to_grammar(ojson::parse(R"({"type":"object","properties":{
        "s":{"type":"string"}},"required":["s"]})")));
    Matcher m(g, byte_table());
    ASSERT_TRUE(m.accept_bytes(R"({"s":"x)"));
    std::vector<uint8_t> allowed;
    EXPECT_EQ(m.allowed_tokens_within(allowed, 1), 1);  // only the closing quote leaves <= 1 byte
    EXPECT_TRUE(allowed['"']);
    // one more ASCII character (0x20-0x7f but " and \) then "}, or the quote itself
    EXPECT_EQ(m.allowed_tokens_within(allowed, 2), 95);
    // the worst allowed byte: a 4-byte UTF-8 lead needs 3 continuation bytes, then "}
    EXPECT_EQ(m.max_close_after_allowed(), 5u);
}

}  // namespace
}  // namespace duet::model::grammar
