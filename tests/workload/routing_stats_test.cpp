// The routing-statistics file of `duet bench --routing-stats` (workload/routing_stats.h): a good
// file gives each listed layer its fractions and the others uniform; each bad input stops with
// the exact message naming the file, the line of the layer's entry, the field and what is allowed.
#include <gtest/gtest.h>

#include "core/error.h"
#include "workload/routing_stats.h"

using namespace duet;

namespace {

// 4 layers, the first dense; 4 routed experts, 2 per token.
graph::ModelShape shape() {
    graph::ModelShape s;
    s.name = "tiny-moe";
    s.n_layer = 4;
    s.n_expert = 4;
    s.n_expert_used = 2;
    s.n_ff_exp = 64;
    s.n_layer_dense_lead = 1;
    return s;
}

std::string error_of(const std::string& text) {
    try {
        workload::parse_routing_stats(text, "stats.json", shape());
    } catch (const Error& e) {
        return e.what();
    }
    return "(no error)";
}

}  // namespace

TEST(RoutingStats, ListedLayersTakeTheirFractionsTheOthersAreUniform) {
    const sim::ExpertRouting r = workload::parse_routing_stats(
        "{\"model\": \"tiny-moe\",\n \"layers\": [\n  {\"layer\": 2, \"fractions\": [0.4, 0.3, 0.2, 0.1]}\n ]}\n",
        "stats.json", shape());
    EXPECT_EQ(r.source, "routing stats stats.json");
    EXPECT_EQ(r.layer(2, 4), (std::vector<double>{0.4, 0.3, 0.2, 0.1}));
    EXPECT_EQ(r.layer(3, 4), (std::vector<double>{0.25, 0.25, 0.25, 0.25}));
}

TEST(RoutingStats, BadInputsNameTheFileLineAndField) {
    const std::string head = "{\"layers\": [\n  {\"layer\": 1, \"fractions\": [0.25, 0.25, 0.25, 0.25]},\n";
    EXPECT_EQ(error_of(head + "  {\"layer\": 2, \"fractions\": [0.5, 0.5, -0.1, 0.1]}\n]}"),
              "stats.json: line 3: layers[1].fractions[2] = -0.1 is not allowed (allowed: a number >= 0)");
    EXPECT_EQ(error_of(head + "  {\"layer\": 2, \"fractions\": [0.3, 0.3, 0.3, 0.3]}\n]}"),
              "stats.json: line 3: layers[1].fractions sum to 1.2 (allowed: 1 within 0.001)");
    EXPECT_EQ(error_of(head + "  {\"layer\": 2,\n   \"fractions\": [0.5, 0.5, 0.0]}\n]}"),
              "stats.json: line 3: layers[1].fractions has 3 values but 'tiny-moe' has 4 routed experts (allowed: 4 "
              "values)");
    EXPECT_EQ(error_of(head + "  {\"layer\": 2, \"fractions\": [0.7, 0.1, 0.1, 0.1]}\n]}"),
              "stats.json: line 3: layers[1].fractions[0] = 0.7 is more than 1/k = 0.5: each token picks 2 distinct "
              "experts (allowed: 0 to 0.5)");
    EXPECT_EQ(error_of(head + "  {\"layer\": 0, \"fractions\": [0.25, 0.25, 0.25, 0.25]}\n]}"),
              "stats.json: line 3: layers[1].layer = 0 is not a MoE layer of 'tiny-moe' (allowed: 1 to 3)");
    EXPECT_EQ(error_of(head + "  {\"layer\": 1, \"fractions\": [0.25, 0.25, 0.25, 0.25]}\n]}"),
              "stats.json: line 3: layers[1].layer = 1 is listed twice (allowed: once)");
    EXPECT_EQ(error_of(head + "  {\"layer\": 2, \"fraction\": [0.25, 0.25, 0.25, 0.25]}\n]}"),
              "stats.json: line 3: layers[1] has unknown field 'fraction' (allowed: layer, fractions)");
    EXPECT_EQ(error_of(head + "  {\"layer\": \"2\", \"fractions\": []}\n]}"),
              "stats.json: line 3: layers[1].layer is missing or not an integer (allowed: a MoE layer, 1 to 3)");
    EXPECT_EQ(error_of("{\"experts\": []}"),
              "stats.json: line 1: field 'layers' is missing or not an array (allowed: {\"layers\": [{\"layer\": L, "
              "\"fractions\": [...]}, ...]})");
    EXPECT_EQ(error_of("{\"layers\": [], \"note\": 1}"), "stats.json: line 1: unknown field 'note' (allowed: layers, model)");
    EXPECT_EQ(error_of("{\"layers\": [\n"),
              "stats.json: not JSON: [json.exception.parse_error.101] parse error at line 2, column 1: syntax error "
              "while parsing value - unexpected end of input; expected '[', '{', or a literal (allowed: a "
              "routing-statistics file, docs/scale-out.md)");
}

TEST(RoutingStats, FlagsPickOneRoutingAndRefuseDenseModels) {
    EXPECT_EQ(workload::routing_from_flags(-1, "", shape())->source, "uniform");
    EXPECT_EQ(workload::routing_from_flags(0.5, "", shape())->source, "zipf s = 0.5");
    graph::ModelShape dense = shape();
    dense.n_expert = 0;
    dense.name = "dense";
    try {
        workload::routing_from_flags(-1, "stats.json", dense);
        FAIL();
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "--routing-stats: 'dense' has no routed experts (allowed: a Mixture-of-Experts model)");
    }
}
