// The agent ablation (workload/ablation.h): the modelled replay charges each call exactly what
// the planner charges for its uncached tokens; the real engine reuses exactly the prefix the
// trace says is reusable; the CLI writes the report with both sides and their ratios.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "fake_hw.h"
#include "config/coop_config.h"
#include "config/settings.h"
#include "model/arch_presets.h"
#include "model/hparams.h"
#include "sim/hw_rig.h"
#include "sim/planner.h"
#include "sim/report.h"
#include "test_models.h"
#include "workload/ablation.h"

using namespace duet;
using namespace duet::workload;

namespace {

AgentTrace small_session() {
    AgentTrace t;
    t.source = "test";
    t.messages = {{Role::SYSTEM, 200, ""}, {Role::USER, 20, ""},     {Role::TOOL_CALL, 8, ""},
                  {Role::TOOL, 40, ""},    {Role::ASSISTANT, 12, ""}, {Role::USER, 10, ""},
                  {Role::ASSISTANT, 6, ""}};
    return t;
}

TEST(AgentModelled, EachCallIsThePlannersGenerationWithItsCachedPrefix) {
    fake::Rig rig;
    const sim::SimHardware hw = rig.hw();
    const graph::ModelShape s = fake::small_shape();
    const AgentTrace t = small_session();
    const ModelledRun on = replay_modelled(s, t, ModelledSwitches{}, hw, 1024);
    ModelledSwitches off_sw;
    off_sw.prefix_reuse = false;
    const ModelledRun off = replay_modelled(s, t, off_sw, hw, 1024);
    const auto reqs = agent_requests(t);
    ASSERT_EQ(on.calls.size(), reqs.size());
    sim::RunOptions ro;
    ro.placement.policy = sim::Policy::NPU_ONLY;
    double sum = 0;
    for (size_t i = 0; i < reqs.size(); ++i) {
        EXPECT_EQ(on.calls[i].n_cached, reqs[i].n_reusable);
        EXPECT_EQ(off.calls[i].n_cached, 0);
        const sim::Plan p = sim::plan_generation(s, reqs[i].n_prompt, reqs[i].n_generate, 1, {}, reqs[i].n_reusable);
        const sim::RunReport r = sim::simulate_run(s, p, reqs[i].n_prompt + reqs[i].n_generate, 1, ro, hw);
        EXPECT_DOUBLE_EQ(on.calls[i].ttft_ms, r.timeline.ttft_ns / 1e6);
        if (i > 0) {
            EXPECT_LT(on.calls[i].ttft_ms, off.calls[i].ttft_ms);
        }
        sum += on.calls[i].ttft_ms;
    }
    EXPECT_DOUBLE_EQ(on.ttft_mean_ms, sum / double(reqs.size()));
    EXPECT_DOUBLE_EQ(on.ttft_first_ms, off.ttft_first_ms);  // nothing to reuse on the first call
}

TEST(AgentModelled, MaxLengthReservationAndNoMemoryReuseCostMemoryOnly) {
    fake::Rig rig;
    const sim::SimHardware hw = rig.hw();
    const graph::ModelShape s = fake::small_shape();
    const AgentTrace t = small_session();
    const ModelledRun paged = replay_modelled(s, t, ModelledSwitches{}, hw, 4096);
    ModelledSwitches sw;
    sw.paged_kv = false;
    const ModelledRun reserved = replay_modelled(s, t, sw, hw, 4096);
    // max-length: ceil(4096 / block) blocks x block tokens x K,V x layers x kv width x f16
    const uint64_t per_token = 2 * uint64_t(s.n_layer) * uint64_t(s.n_head_kv * s.head_dim) * 2;
    for (const ModelledCall& c : reserved.calls) EXPECT_EQ(c.memory.kv_cache_bytes, 4096 * per_token);
    const int64_t last = 296;  // the longest call's context: 290 prompt + 6 generated
    const int64_t blocks = (last + hw.kv_block_tokens - 1) / hw.kv_block_tokens;
    EXPECT_EQ(paged.calls.back().memory.kv_cache_bytes, uint64_t(blocks * hw.kv_block_tokens) * per_token);
    EXPECT_DOUBLE_EQ(paged.ttft_mean_ms, reserved.ttft_mean_ms);

    sw = ModelledSwitches{};
    sw.static_plan = false;
    const ModelledRun no_reuse = replay_modelled(s, t, sw, hw, 4096);
    EXPECT_GT(no_reuse.peak.activations_bytes, paged.peak.activations_bytes);
    EXPECT_DOUBLE_EQ(no_reuse.ttft_mean_ms, paged.ttft_mean_ms);
}

// The int8 KV cache on the model: 34 bytes per 32 values of every call's KV (head_dim 64 here).
TEST(AgentModelled, Int8KvTakes34Of64KvBytes) {
    fake::Rig rig;
    const sim::SimHardware hw = rig.hw();
    const graph::ModelShape s = fake::small_shape();
    ModelledSwitches sw;
    const ModelledRun f16 = replay_modelled(s, small_session(), sw, hw, 4096);
    sw.kv_int8 = true;
    const ModelledRun i8 = replay_modelled(s, small_session(), sw, hw, 4096);
    for (size_t i = 0; i < f16.calls.size(); ++i)
        EXPECT_EQ(i8.calls[i].memory.kv_cache_bytes * 64, f16.calls[i].memory.kv_cache_bytes * 34) << "call " << i;
}

TEST(AgentAblation, ModelledSideRowsRatiosAndJson) {
    fake::Rig rig;
    const AblationSide side = ablate_modelled(fake::small_shape(), small_session(), rig.hw(), 4096, "fake", Targets{});
    ASSERT_EQ(side.rows.size(), 10u);  // all_off, 8 optimisations, all_on
    EXPECT_EQ(side.rows.front().name, "all_off");
    EXPECT_EQ(side.rows.back().name, "all_on");
    EXPECT_DOUBLE_EQ(side.rows.front().ttft_ratio, 1.0);
    EXPECT_FALSE(side.row("warmup").applies);
    const AblationRow& on = side.rows.back();
    EXPECT_DOUBLE_EQ(side.ttft_ratio, on.ttft_mean_ms / side.rows.front().ttft_mean_ms);
    EXPECT_DOUBLE_EQ(side.peak_memory_ratio,
                     double(on.peak_memory_bytes) / double(side.rows.front().peak_memory_bytes));
    EXPECT_EQ(side.ttft_met, side.ttft_ratio <= 0.5);
    EXPECT_EQ(side.ttft_binding.empty(), side.ttft_met);
    AgentAblation a;
    a.workload = "test";
    a.modelled = side;
    const nlohmann::json j = ablation_json(a);
    EXPECT_EQ(j["schema"], "duet.agent/1");
    EXPECT_DOUBLE_EQ(j["agent"]["modelled"]["ttft_ratio"].get<double>(), side.ttft_ratio);
    EXPECT_EQ(j["agent"]["modelled"]["rows"].size(), 10u);
    EXPECT_FALSE(j["agent"].contains("real"));
    EXPECT_NE(format_ablation(a).find("modelled: TTFT all-on/all-off = "), std::string::npos);
    EXPECT_EQ(ablation_svg(a).rfind("<svg", 0), 0u);
}

// Weight quantisation on the 910B2 model: int8 matrices hold half the f16 bytes (the NZ int8
// fractal is 16 x 32 bytes as the fp16 one is 16 x 16 x 2: the same padding for 7B's dims), W8A8
// runs the prefill GEMMs on the int8 cube (twice the MACs per cycle of fp16: [fractal] int8_k =
// 32 vs fp16_k = 16 in configs/hw/ascend910b2.toml) so its TTFT is below W8A16's, and W8A16,
// dequantising on the load path at the fp16 rate, is not slower than f16.
TEST(AgentModelled, WeightQuantisationHalvesWeightsAndW8A8UsesTheInt8Cube) {
    config::Settings st;
    st.ascend.soc_version = "Ascend910B2";
    const auto rig = sim::make_hardware_rig(st, config::CoopConfig{}, "");
    const graph::ModelShape s =
        model::model_shape(*model::find_arch_preset("llama2-7b"), DType::F16, DType::F16, "llama2-7b");
    AgentTrace t;
    t.source = "test";
    t.messages = {{Role::SYSTEM, 1024, ""}, {Role::ASSISTANT, 4, ""}};
    auto run = [&](ModelledSwitches::WeightQuant q) {
        ModelledSwitches sw;
        sw.weight_quant = q;
        return replay_modelled(s, t, sw, rig->hw, 2048);
    };
    using Q = ModelledSwitches::WeightQuant;
    const ModelledRun f16 = run(Q::NONE), w8a16 = run(Q::W8A16), w8a8 = run(Q::W8A8);
    const uint64_t norms = 4 * uint64_t(s.n_embd) * uint64_t(2 * s.n_layer + 1);  // f32 RMSNorm weights, not quantised
    EXPECT_EQ(w8a16.peak.weights_bytes - norms, (f16.peak.weights_bytes - norms) / 2);
    EXPECT_EQ(w8a8.peak.weights_bytes, w8a16.peak.weights_bytes);
    EXPECT_LT(w8a8.ttft_mean_ms, w8a16.ttft_mean_ms);
    EXPECT_LE(w8a16.ttft_mean_ms, f16.ttft_mean_ms);
    // W8A8 quantises the activations per token: with fusion each RMSNorm joins that quantisation
    // (graph/fuse_rmsnorm_matmul.h: 2 per layer and the output norm, one launch fewer each);
    // W8A16 and f16 feed the cube f16 activations, so there is nothing to fuse into.
    auto prefill = [&](Q q, bool fuse) {
        ModelledSwitches sw;
        sw.weight_quant = q;
        sw.fuse = fuse;
        return replay_modelled(s, t, sw, rig->hw, 2048).calls[0];
    };
    EXPECT_DOUBLE_EQ(prefill(Q::W8A8, false).prefill_launch_ns, prefill(Q::W8A16, false).prefill_launch_ns);
    EXPECT_LT(prefill(Q::W8A8, true).prefill_launch_ns, prefill(Q::W8A16, true).prefill_launch_ns);
    EXPECT_LT(prefill(Q::W8A8, true).ttft_ms, prefill(Q::W8A16, true).ttft_ms);
}

// The real engine reuses exactly the prefix the trace calls reusable (its own output included).
TEST(AgentReal, EngineReusesTheTracesPrefix) {
    const std::string model = test::generated_model("tiny-llama");
    ASSERT_FALSE(model.empty());
    const AgentTrace t = small_session();
    RealOptions ro;
    ro.threads = 1;
    ro.evict_first = false;
    const RealRun on = replay_real(model, t, RealSwitches{}, ro);
    RealSwitches off;
    off.prefix_reuse = false;
    const RealRun cold = replay_real(model, t, off, ro);
    const auto reqs = agent_requests(t);
    ASSERT_EQ(on.calls.size(), reqs.size());
    for (size_t i = 0; i < reqs.size(); ++i) {
        EXPECT_EQ(on.calls[i].n_prompt, reqs[i].n_prompt);
        EXPECT_EQ(on.calls[i].n_cached, reqs[i].n_reusable) << "call " << i;
        EXPECT_EQ(on.calls[i].n_generate, reqs[i].n_generate);
        EXPECT_EQ(cold.calls[i].n_cached, 0);
    }
    // paged: the pool holds the session's blocks; max-length: the trained context (at least the session)
    EXPECT_EQ(on.kv_pool_bytes % 16, 0u);
    RealSwitches reserve;
    reserve.paged_kv = false;
    ro.max_ctx = 4096;
    EXPECT_GT(replay_real(model, t, reserve, ro).kv_pool_bytes, on.kv_pool_bytes);
}

struct Cmd {
    int rc;
    std::string out, err;
};
Cmd run_duet(const std::string& args) {
    const std::string o = std::string(DUET_BINARY_DIR) + "/agent_cli." + std::to_string(::getpid());
    const int st = std::system(fmt::format("'{}' {} > '{}' 2> '{}.err'", test::duet_binary(), args, o, o).c_str());
    auto slurp = [](const std::string& p) {
        std::ifstream f(p);
        return std::string(std::istreambuf_iterator<char>(f), {});
    };
    Cmd c{WEXITSTATUS(st), slurp(o), slurp(o + ".err")};
    std::remove(o.c_str());
    std::remove((o + ".err").c_str());
    return c;
}

TEST(AgentBenchCli, FileModeWritesBothSidesPresetModeTheModelOnly) {
    const std::string model = test::generated_model("tiny-llama");
    ASSERT_FALSE(model.empty());
    const std::string dir = std::string(DUET_BINARY_DIR) + "/agent_cli_test";
    std::filesystem::create_directories(dir);
    const Cmd c = run_duet(fmt::format("bench --workload agent -m '{}' --turns 1 --threads 1 --report {}/r.json --svg "
                                       "{}/r.svg", model, dir, dir));
    ASSERT_EQ(c.rc, 0) << c.err;
    std::ifstream f(dir + "/r.json");
    const nlohmann::json j = nlohmann::json::parse(f);
    for (const char* side : {"real", "modelled"}) {
        ASSERT_TRUE(j["agent"].contains(side)) << side;
        EXPECT_TRUE(j["agent"][side]["ttft_ratio"].is_number());
        EXPECT_TRUE(j["agent"][side]["peak_memory_ratio"].is_number());
        EXPECT_EQ(j["agent"][side]["rows"].size(), 10u);
    }
    EXPECT_NE(c.out.find("real:     TTFT all-on/all-off = "), std::string::npos) << c.out;
    EXPECT_TRUE(std::filesystem::file_size(dir + "/r.svg") > 100);

    const Cmd p = run_duet(fmt::format("bench --workload agent -m llama2-7b --report {}/p.json", dir));
    ASSERT_EQ(p.rc, 0) << p.err;
    std::ifstream pf(dir + "/p.json");
    const nlohmann::json pj = nlohmann::json::parse(pf);
    EXPECT_FALSE(pj["agent"].contains("real"));
    EXPECT_EQ(pj["workload"]["calls"], 8);
    std::filesystem::remove_all(dir);

    const Cmd bad = run_duet("bench --workload chat -m llama2-7b");
    EXPECT_EQ(bad.rc, 2);
    EXPECT_NE(bad.err.find("duet: error: --workload = \"chat\" is not allowed (allowed: generation, agent, serving)"),
              std::string::npos) << bad.err;
}

}  // namespace
