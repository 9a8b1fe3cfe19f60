#include "config/coop_config.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "test_files.h"

using namespace duet::config;

namespace {
std::string error_of(const std::string& path, const EnvMap& env = {}) {
    try {
        load_coop_config(path, env);
    } catch (const duet::Error& e) {
        return e.what();
    }
    return "no error";
}
}  // namespace

TEST(CoopConfig, ShippedFileEqualsBuiltInDefaults) {
    CoopConfig c = load_coop_config(std::string(DUET_SOURCE_DIR) + "/configs/config.toml", {});
    CoopConfig d;
    for (const auto& f : coop_config_fields()) EXPECT_EQ(f.show(c), f.show(d)) << f.dotted();
    EXPECT_EQ(c.reorder.prefetch_depth, 4);
    EXPECT_DOUBLE_EQ(c.reorder.index_ratio_limit, 0.05);
}

TEST(CoopConfig, ValuesAndErrors) {
    auto p = write_test_file("ok.toml", "[reorder]\nprefetch_depth = 8\n[memory]\nweight_base_shared = false\n");
    CoopConfig c = load_coop_config(p, {});
    EXPECT_EQ(c.reorder.prefetch_depth, 8);
    EXPECT_FALSE(c.memory.weight_base_shared);
    EXPECT_EQ(c.pim.alignment_bits, 128);

    auto a = write_test_file("align.toml", "[pim]\nalignment = 192\n");
    EXPECT_EQ(error_of(a), a + ": key 'pim.alignment' = 192 is not allowed (allowed: 128 or 256 (bits))");
    auto b = write_test_file("unknown.toml", "[pim]\nalign = 128\n");
    EXPECT_EQ(error_of(b), b + ": unknown key 'pim.align' (allowed here: layout, alignment, compute_unit, precision)");
    auto s = write_test_file("section.toml", "[pimm]\n");
    EXPECT_EQ(error_of(s), s + ": unknown key 'pimm' (allowed here: pim, reorder, scheduling, memory, topology)");
    auto t = write_test_file("type.toml", "[memory]\ncache_limit_mb = \"lots\"\n");
    EXPECT_EQ(error_of(t), t + ": key 'memory.cache_limit_mb' has type string, expected integer");
    auto r = write_test_file("range.toml", "[reorder]\nindex_ratio_limit = 2.0\n");
    EXPECT_EQ(error_of(r), r + ": key 'reorder.index_ratio_limit' = 2 is out of range (allowed: 0.0001 to 1)");
    auto e = write_test_file("enum.toml", "[scheduling]\ndecode_engine = \"gpu\"\n");
    EXPECT_EQ(error_of(e), e + ": key 'scheduling.decode_engine' = \"gpu\" is not allowed (allowed: pim_gemv, npu_gemv)");
}

TEST(CoopConfig, EnvironmentOverrides) {
    CoopConfig c = load_coop_config("", {{"DUET_PIM_ALIGNMENT", "256"}, {"DUET_PIM_LAYOUT", "row_major_256bit"}, {"DUET_SCHEDULING_ZERO_COPY_SWITCH", "false"},
                                         {"DUET_REORDER_INDEX_RATIO_LIMIT", "0.1"}});
    EXPECT_EQ(c.pim.alignment_bits, 256);
    EXPECT_FALSE(c.scheduling.zero_copy_switch);
    EXPECT_DOUBLE_EQ(c.reorder.index_ratio_limit, 0.1);
    EXPECT_EQ(error_of("", {{"DUET_REORDER_BLOCK_SIZE_KB", "3"}}),
              "environment variable DUET_REORDER_BLOCK_SIZE_KB: key 'reorder.block_size_kb' = 3 is not allowed "
              "(allowed: a power of two)");
}

TEST(CoopConfig, LayoutMustMatchAlignment) {
    auto p = write_test_file("mismatch.toml", "[pim]\nlayout = \"row_major_256bit\"\n");
    EXPECT_EQ(error_of(p), p + ": key 'pim.layout' = \"row_major_256bit\" needs pim.alignment = 256 (found 128)");
}

TEST(CoopConfig, CollectAll) {
    auto p = write_test_file("many.toml", "[pim]\nalignment = 3\nprecision = \"fp8\"\n[memory]\nfoo = 1\n");
    Diagnostics d(true);
    load_coop_config(p, {{"DUET_MEMORY_CACHE_LIMIT_MB", "0"}}, d);
    ASSERT_EQ(d.errors().size(), 4u);
    // TOML tables iterate in key order: [memory] before [pim].
    EXPECT_EQ(d.errors()[0],
              p + ": unknown key 'memory.foo' (allowed here: weight_base_shared, index_granularity, cache_limit_mb)");
    EXPECT_EQ(d.errors()[1], p + ": key 'pim.alignment' = 3 is out of range (allowed: 128 to 256)");
    EXPECT_EQ(d.errors()[2], p + ": key 'pim.precision' = \"fp8\" is not allowed (allowed: f16, bf16, i8, auto; also read as one of those: float16, fp16, bfloat16, int8)");
    EXPECT_EQ(d.errors()[3],
              "environment variable DUET_MEMORY_CACHE_LIMIT_MB: key 'memory.cache_limit_mb' = 0 is out of range "
              "(allowed: 1 to 1048576)");
}

TEST(CoopConfig, LayerList) {
    EXPECT_EQ(parse_layer_list("0-2,31,1", "x"), (std::vector<int>{0, 1, 2, 31}));
    EXPECT_TRUE(parse_layer_list("", "x").empty());
    EXPECT_THROW(parse_layer_list("3-1", "x"), duet::Error);
    EXPECT_THROW(parse_layer_list("1,", "x"), duet::Error);
    try {
        parse_layer_list("a", "--npu-layers");
        FAIL();
    } catch (const duet::Error& e) {
        EXPECT_STREQ(e.what(), "--npu-layers: layer list \"a\" is not valid (allowed: layers and ranges like \"0-1,31\")");
    }
}

// Against the model's layer count: the first layer past it is named, before a range is expanded
// (a layer past the model used to be accepted and silently matched no layer).
TEST(CoopConfig, LayerListWithinTheModel) {
    EXPECT_EQ(parse_layer_list("0,30-31", "x", 32, "llama2-7b"), (std::vector<int>{0, 30, 31}));
    try {
        parse_layer_list("0,30-2000000000", "config.toml: scheduling.npu_only_layers", 32, "llama2-7b");
        FAIL();
    } catch (const duet::Error& e) {
        EXPECT_STREQ(e.what(), "config.toml: scheduling.npu_only_layers = \"0,30-2000000000\": layer 32 is past "
                               "llama2-7b's 32 layers (allowed: layers 0 to 31)");
    }
    EXPECT_THROW(parse_layer_list("40", "x", 32, "llama2-7b"), duet::Error);
}

// Enumerated knobs are validated once into typed enums; the file spelling comes back from show().
TEST(CoopConfig, EnumsAreTypedAtLoad) {
    CoopConfig c = load_coop_config("", {{"DUET_PIM_PRECISION", "bf16"}, {"DUET_REORDER_TARGET_FORMAT", "ND"},
                                         {"DUET_SCHEDULING_DECODE_ENGINE", "npu_gemv"}, {"DUET_TOPOLOGY_PIMS", "2"}});
    EXPECT_EQ(c.pim.precision, PimPrecision::BF16);
    EXPECT_EQ(c.reorder.target_format, TargetFormat::ND);
    EXPECT_EQ(c.scheduling.decode_engine, DecodeEngine::NPU_GEMV);
    EXPECT_EQ(c.scheduling.prefill_engine, PrefillEngine::NPU_GEMM);
    EXPECT_EQ(c.topology.pims, 2);
    for (const auto& f : coop_config_fields())
        if (f.dotted() == "reorder.target_format") EXPECT_EQ(f.show(c), "\"ND\"");
    const CoopConfig i8 = load_coop_config("", {{"DUET_PIM_PRECISION", "int8"}});
    EXPECT_EQ(i8.pim.precision, PimPrecision::INT8);
    EXPECT_STREQ(pim_precision_name(i8.pim.precision), "i8");
}

TEST(CoopConfig, TopologyFileOnlyTakesTopologyKeys) {
    const std::string p = write_test_file("config_test_topology.toml", "[topology]\npims = 2\n[pim]\nalignment = 256\n");
    try {
        load_topology_file(p, TopologySection{});
        FAIL();
    } catch (const duet::Error& e) {
        EXPECT_EQ(std::string(e.what()), p + ": unknown key 'pim' (allowed here: topology)");
    }
    TopologySection two;
    two.pims = 2;
    two.pim_presets = "a";
    try {
        check_pim_presets(two);
        FAIL();
    } catch (const duet::Error& e) {
        EXPECT_EQ(std::string(e.what()), "topology.pim_presets = \"a\" names 1 presets for topology.pims = 2 (allowed: "
                                         "one per PIM device, or \"\")");
    }
    const std::string ok = write_test_file("config_test_topology3.toml", "[topology]\nnpus = 4\n");
    const TopologySection t = load_topology_file(ok, TopologySection{});
    EXPECT_EQ(t.npus, 4);
    EXPECT_EQ(t.pims, 1);
}

TEST(CoopConfig, TpSplitTakesMegatronOrCent) {
    EXPECT_EQ(TopologySection{}.tp_split, TpSplitMode::MEGATRON);
    const std::string ok = write_test_file("config_test_tp_split.toml", "[topology]\ntp_split = \"cent\"\n");
    EXPECT_EQ(load_topology_file(ok, TopologySection{}).tp_split, TpSplitMode::CENT);
    const std::string bad = write_test_file("config_test_tp_split_bad.toml", "[topology]\ntp_split = \"ring\"\n");
    try {
        load_topology_file(bad, TopologySection{});
        FAIL();
    } catch (const duet::Error& e) {
        EXPECT_EQ(std::string(e.what()), bad + ": key 'topology.tp_split' = \"ring\" is not allowed (allowed: megatron, cent)");
    }
}
