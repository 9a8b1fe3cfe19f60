// json_budget_error: depth and keys per object on the text, strings and escapes skipped.
#include "core/json_budget.h"

#include <gtest/gtest.h>

#include <string>

namespace duet {
namespace {

std::string nested(size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }

TEST(JsonBudget, DepthUpToTheLimitPassesOneMoreIsRefused) {
    const JsonBudget b;  // 64 levels
    EXPECT_EQ(json_budget_error(nested(64), b, "request body"), "");
    EXPECT_EQ(json_budget_error(nested(65), b, "request body"),
              "request body is nested deeper than 64 levels (allowed: at most 64 nested objects and arrays)");
    // A million levels: refused at the 65th, in linear time, without recursion.
    EXPECT_NE(json_budget_error(std::string(1000000, '{'), b, "x"), "");
}

TEST(JsonBudget, BracketsInsideStringsDoNotCount) {
    const JsonBudget b{2, 1024};
    EXPECT_EQ(json_budget_error(R"({"a": "[[[[{{{{", "b": ["\"[[["]})", b, "x"), "");
    EXPECT_NE(json_budget_error(R"({"a": "\\", "b": [[1]]})", b, "x"), "");  // the string ended at \\"
}

TEST(JsonBudget, KeysPerObjectAreCounted) {
    const JsonBudget b{64, 3};
    EXPECT_EQ(json_budget_error(R"({"a":1,"b":{"c":1,"d":2,"e":3},"f":"x:y:z"})", b, "body"), "");
    EXPECT_EQ(json_budget_error(R"({"a":1,"b":2,"c":3,"d":4})", b, "body"),
              "body has an object with more than 3 keys (allowed: at most 3 keys per object)");
    EXPECT_EQ(json_budget_error(R"([{"a":1,"b":2,"c":3},{"a":1,"b":2,"c":3}])", b, "body"), "");  // per object
}

}  // namespace
}  // namespace duet
