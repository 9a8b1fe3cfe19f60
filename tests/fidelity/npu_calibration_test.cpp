// Whole-model NPU calibration (workload/npu_calibration.h): Qwen2-7B on one 910B4 as TorchAir's
// README measures it (prefill step and mean decode step, single-operator and graph mode), against
// duet bench's NPU-only baseline on the same shape, SoC, dispatch, lengths and batch.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "workload/npu_calibration.h"

using duet::hw::calibration::Check;
using duet::hw::calibration::Point;

namespace {

const std::vector<Point>& table() {
    static const std::vector<Point> t = duet::workload::npu_reference_points();
    return t;
}

const Point& find(const std::string& name) {
    for (const Point& p : table())
        if (p.name == name) return p;
    throw std::runtime_error("no NPU calibration point '" + name + "'");
}

std::string name(const char* metric, int batch, const char* mode) {
    const bool ttft = std::string(metric) == "TTFT";
    return std::string("Ascend 910B 7B model ") + metric +
           (ttft ? " (prefill step, 1024 tokens)" : " (decode step, 1024 new tokens)") + ", batch " +
           std::to_string(batch) + ", " + mode + " dispatch";
}

}  // namespace

// The reference values are the README's, each point cites its table, and the one combination the
// README does not measure (single-operator mode at batch 1) stays missing with duet's value shown.
TEST(NpuCalibration, ReferencesAreTheReadmeValues) {
    ASSERT_EQ(table().size(), 8u);
    struct Ref {
        const char* metric;
        int batch;
        const char* mode;
        double ms;
    };
    for (const Ref& r : {Ref{"TTFT", 1, "graph", 94}, Ref{"TPOT", 1, "graph", 23}, Ref{"TTFT", 4, "eager", 366},
                         Ref{"TPOT", 4, "eager", 25}, Ref{"TTFT", 4, "graph", 345}, Ref{"TPOT", 4, "graph", 24}}) {
        const Point& p = find(name(r.metric, r.batch, r.mode));
        SCOPED_TRACE(p.name);
        EXPECT_EQ(p.check, Check::RELATIVE);
        EXPECT_DOUBLE_EQ(p.reference, r.ms);
        EXPECT_DOUBLE_EQ(p.tolerance, 0.30);
        EXPECT_EQ(p.unit, "ms");
        EXPECT_NE(p.source.find("Ascend/torchair npu_tuned_model/llm/qwen/README.md"), std::string::npos);
    }
    for (const char* metric : {"TTFT", "TPOT"}) {
        const Point& p = find(name(metric, 1, "eager"));
        EXPECT_EQ(p.check, Check::MISSING);
        EXPECT_TRUE(std::isnan(p.reference));
        EXPECT_GT(p.duet, 0);
        EXPECT_FALSE(p.note.empty());
    }
}
