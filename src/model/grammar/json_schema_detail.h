#pragma once
// Shared by the JSON Schema compiler's files (json_schema.cpp: visiting and rules;
// json_schema_strings.cpp: strings; json_schema_combine.cpp: allOf merging and oneOf
// disjointness). Not a public API.
#include <nlohmann/json.hpp>
#include <map>
#include <string>
#include <vector>

#include "core/error.h"
#include "model/grammar/json_schema.h"

namespace duet::model::grammar {
namespace detail {

using ojson = nlohmann::ordered_json;

bool is_annotation(const std::string& k);          // accepted and ignored (plus "x-...")
std::string into(const std::string& where);        // "<where>/", the root's "/" not doubled
std::vector<std::string> type_list(const ojson& t);  // "type" as a list of names
ojson without(const ojson& s, std::initializer_list<const char*> keys);
bool only_annotations(const ojson& s);
// s[key] as a count from 0 to Grammar::kMaxCount (fallback when absent); throws naming where/key.
int count_in(const ojson& s, const char* key, int fallback, const std::string& where);
std::string repeat(int lo, int hi);  // the grammar's {lo,hi} suffix; hi < 0: unbounded

// JSON types as bits; integers and numbers are one class (an integer is a number).
enum : unsigned { kNull = 1, kBool = 2, kNum = 4, kStr = 8, kArr = 16, kObj = 32, kAll = 63 };
unsigned type_bit(const std::string& t);
unsigned value_bit(const ojson& v);

}  // namespace detail

struct JsonSchemaCompiler::Ctx {
    const detail::ojson* root;
    std::map<std::string, std::string> refs;  // "#/$defs/x" -> rule name
    int depth = 0;
    size_t copied_values = 0;  // charged by charge_copy
};

namespace detail {
// Counts one level of schema nesting for the lifetime of a visit.
struct DepthGuard {
    int& depth;
    DepthGuard(int& d, int max, const std::string& where) : depth(d) {
        if (++depth > max) {
            --depth;
            fail("{}: schemas nest deeper than {} levels (the limit on schema nesting)", where, max);
        }
    }
    ~DepthGuard() { --depth; }
};
}  // namespace detail

}  // namespace duet::model::grammar
