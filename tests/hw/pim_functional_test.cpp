// Lane-accurate functional GEMV on weights placed by the layout component (and by the
// row-per-unit placement): errors against f64, exactness of int8, reading through the layout.
#include <gtest/gtest.h>

#include <random>

#include "core/dtype.h"
#include "hw/memory_presets.h"
#include "hw/pim/pim_functional.h"
#include "sim/layout_placement.h"

using namespace duet;
using namespace duet::hw;
using namespace duet::hw::pim;
using duet::sim::layout_placement;
using duet::sim::plan_for_device;

namespace {

std::vector<uint8_t> operands(DType t, int64_t n, uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<float> uf(-1, 1);
    std::uniform_int_distribution<int> ui(-127, 127);
    const int e = t == DType::I8 ? 1 : 2;
    std::vector<uint8_t> v(size_t(n * e));
    for (int64_t i = 0; i < n; ++i) {
        if (t == DType::I8) {
            v[size_t(i)] = uint8_t(int8_t(ui(rng)));
        } else {
            const uint16_t h = t == DType::F16 ? fp32_to_fp16(uf(rng)) : fp32_to_bf16(uf(rng));
            std::memcpy(&v[size_t(2 * i)], &h, 2);
        }
    }
    return v;
}

GemvShape shape(int64_t m, int64_t k, int align, DType t, int channels = 0) {
    GemvShape g;
    g.m = m;
    g.k = k;
    g.alignment_bits = align;
    g.dtype = t;
    g.channels = channels;
    return g;
}

FunctionalResult run_layout(const PimSpec& s, const GemvShape& g, uint64_t seed, std::vector<uint8_t>* base_out = nullptr) {
    const auto w = operands(g.dtype, g.m * g.k, seed);
    const auto x = operands(g.dtype, g.k, seed + 1);
    const GemvPlan p = plan_gemv(s, g);
    const auto lp = plan_for_device(s, g, p);
    auto base = layout::to_pim(w.data(), lp);
    if (base_out) {
        (*base_out)[0] ^= 0;  // placeholder to keep the signature simple
    }
    return run_gemv_functional(s, g, layout_placement(lp, base), w.data(), x.data());
}

}  // namespace

TEST(PimFunctional, Int8WithInt32AccumulationIsExact) {
    const PimSpec s = load_pim_preset("pim_lpddr5x_bank");
    for (int align : {128, 256}) {
        for (const auto& [m, k] : {std::pair<int64_t, int64_t>{37, 300}, {256, 1024}, {5, 4099}}) {
            SCOPED_TRACE(std::to_string(m) + "x" + std::to_string(k) + " align " + std::to_string(align));
            const FunctionalResult r = run_layout(s, shape(m, k, align, DType::I8, 2), 7);
            EXPECT_EQ(r.max_abs_err, 0.0);
            ASSERT_EQ(r.y.size(), size_t(m));
            double mag = 0;
            for (double v : r.y) mag += std::fabs(v);
            EXPECT_GT(mag, 0);
        }
    }
}

TEST(PimFunctional, Fp16AccumulationErrorIsWithinTheRoundingBound) {
    const PimSpec s = load_pim_preset("pim_hbm2_fimdram");  // fp16 operands and accumulators
    const int64_t k = 1024;
    const FunctionalResult r = run_layout(s, shape(128, k, 128, DType::F16, 4), 3);
    // Each lane adds k / 8 products (8 fp16 per 128-bit granule), each add rounding to fp16:
    // |error| <= n u sum|w x| with u = 2^-11, plus the fp32 host sums.
    const double bound = (double(k) / 8 + 2) * std::ldexp(1.0, -11);
    EXPECT_GT(r.max_rel_err, 0.0);  // fp16 accumulation does lose bits
    EXPECT_LT(r.max_rel_err, bound);
    EXPECT_LT(r.mean_abs_err, 0.05);
}

TEST(PimFunctional, Fp32AccumulationIsNearlyExact) {
    const PimSpec s = load_pim_preset("pim_gddr6_aim");  // bf16 x bf16, fp32 adder tree
    const FunctionalResult r = run_layout(s, shape(64, 2048, 256, DType::BF16), 5);
    EXPECT_LT(r.max_rel_err, 2048 * std::ldexp(1.0, -24) * 2);
}

TEST(PimFunctional, RowPerUnitPlacementMatchesTheTimingModelsColumnCount) {
    const PimSpec s = load_pim_preset("pim_hbm3_bank");
    const GemvShape g = shape(1024, 512, 128, DType::F16, 4);
    const auto w = operands(g.dtype, g.m * g.k, 11), x = operands(g.dtype, g.k, 12);
    std::vector<uint8_t> storage;
    const PimPlacement pl = row_per_unit_placement(s, g, w.data(), storage);
    const FunctionalResult f = run_gemv_functional(s, g, pl, w.data(), x.data());
    const GemvPlan p = plan_gemv(s, g);
    const GemvResult t = simulate_gemv(s, g);
    EXPECT_EQ(f.column_commands, t.n_mac * uint64_t(p.units_per_channel));
    EXPECT_EQ(f.partials, uint64_t(g.m));  // one unit per output row
    EXPECT_LT(f.max_rel_err, 1e-6);
}

TEST(PimFunctional, ComputesFromTheReorderedBytes) {
    const PimSpec s = load_pim_preset("pim_lpddr5x_bank");
    const GemvShape g = shape(16, 256, 128, DType::I8, 1);
    const auto w = operands(g.dtype, g.m * g.k, 21), x = operands(g.dtype, g.k, 22);
    const GemvPlan p = plan_gemv(s, g);
    const auto lp = plan_for_device(s, g, p);
    auto base = layout::to_pim(w.data(), lp);
    const FunctionalResult good = run_gemv_functional(s, g, layout_placement(lp, base), w.data(), x.data());
    EXPECT_EQ(good.max_abs_err, 0.0);
    // Change one weight in the reordered base only: exactly the row that holds it goes wrong.
    const uint64_t off = layout::pim_offset(lp, 5, 100);
    base[off] = uint8_t(int8_t(base[off]) == 0 ? 1 : 0);
    const FunctionalResult bad = run_gemv_functional(s, g, layout_placement(lp, base), w.data(), x.data());
    for (int64_t r = 0; r < g.m; ++r) {
        if (r == 5)
            EXPECT_NE(bad.y[size_t(r)], bad.y_ref[size_t(r)]);
        else
            EXPECT_EQ(bad.y[size_t(r)], bad.y_ref[size_t(r)]);
    }
}
