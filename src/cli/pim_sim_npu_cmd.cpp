// `duet pim-sim npu`: one operator on the Ascend NPU model (hw/npu), printing time, bound and
// utilisation with the roofline terms behind them.
#include <cstdio>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "cli/flags.h"
#include "core/error.h"
#include "hw/npu/npu_device.h"
#include "hw/npu/npu_memory.h"
#include "sim/hw_rig.h"

namespace duet::cli {
namespace {

struct NpuArgs {
    std::string soc = "Ascend910B2";
    std::string op = "gemm";
    int64_t m = 0, n = 0, k = 0;
    int64_t heads = 32, kv_heads = 0;
    std::string dtype = "f16";
    std::string dispatch = "queue1";
    std::string memory_efficiency = "peak";  // as duet bench models the NPU (sim::npu_memory_efficiency)
    std::string presets;
};

DType parse_dtype(const std::string& s) {
    if (s == "f16") return DType::F16;
    if (s == "bf16") return DType::BF16;
    if (s == "i8") return DType::I8;
    fail("--dtype = '{}' is not allowed (allowed: f16, bf16, i8)", s);
}

void run(const NpuArgs& a) {
    const auto dispatch = hw::npu::dispatch_from_name(a.dispatch);
    if (!dispatch)
        fail("--npu-dispatch = '{}' is not allowed (allowed: eager, queue0, queue1, queue2, graph)", a.dispatch);
    hw::npu::NpuPreset preset =
        a.presets.empty() ? hw::npu::load_npu_preset(a.soc) : hw::npu::load_npu_preset(a.soc, a.presets);
    const double efficiency = sim::npu_memory_efficiency(a.memory_efficiency, preset.memory_type, "--memory-efficiency");
    const auto device = sim::make_npu(std::move(preset), *dispatch, efficiency);
    const hw::npu::NpuDevice& dev = *device;
    const hw::npu::NpuOptions& opt = dev.options();
    const auto& p = dev.preset();

    hw::OpShape op;
    op.weight_dtype = op.act_dtype = parse_dtype(a.dtype);
    int64_t m = a.m;
    if (a.op == "gemv") {
        if (m == 0) m = 1;
        if (m != 1) fail("--m = {} is not allowed with --op gemv (allowed: 1; use --op gemm for more rows)", m);
        op.cls = hw::OpClass::GEMV;
    } else if (a.op == "gemm") {
        op.cls = hw::OpClass::GEMM;
    } else if (a.op == "attention") {
        op.cls = hw::OpClass::ATTENTION;
        op.n_head = a.heads;
        op.n_head_kv = a.kv_heads > 0 ? a.kv_heads : a.heads;
        if (op.act_dtype == DType::I8) fail("--dtype int8 is not allowed with --op attention (allowed: fp16, bf16)");
    } else {
        fail("--op = '{}' is not allowed (allowed: gemm, gemv, attention)", a.op);
    }
    if (m < 1 || a.n < 1 || a.k < 1)
        fail("--m, --n and --k must be at least 1 (got m = {}, n = {}, k = {})", m, a.n, a.k);
    op.m = m, op.n = a.n, op.k = a.k;

    const auto b = dev.explain(op);
    const bool int8 = op.weight_dtype == DType::I8;
    std::printf("%s, %s m=%lld n=%lld k=%lld %s", p.soc_version.c_str(), a.op.c_str(), (long long)m,
                (long long)a.n, (long long)a.k, a.dtype.c_str());
    if (op.cls == hw::OpClass::ATTENTION)
        std::printf(" heads=%lld kv_heads=%lld", (long long)op.n_head, (long long)op.n_head_kv);
    std::printf(", dispatch %s\n", a.dispatch.c_str());
    std::printf("  time              %.3f us (device %.3f us + launch %.3f us)\n", b.cost.t_ns * 1e-3,
                b.t_device_ns * 1e-3, b.cost.t_launch_ns * 1e-3);
    std::printf("  bound             %s\n", b.cost.bound);
    std::printf("  cube utilisation  %.2f %% (fractal padding %.2f %%, cores %.2f %%)\n", b.cube_utilisation * 100,
                b.fractal_utilisation * 100, b.core_utilisation * 100);
    std::printf("  roofline terms    cube %.3f us | L1->L0 %.3f us | vector %.3f us | L2->L1 %.3f us | memory %.3f us\n",
                b.t_cube_ns * 1e-3, b.t_l1_to_l0_ns * 1e-3, b.t_vector_ns * 1e-3, b.t_l2_ns * 1e-3,
                b.t_memory_ns * 1e-3);
    std::printf("  tiling            %lld x %lld (k %lld), %lld tiles in %lld waves on %d of %d cores\n",
                (long long)b.tiling.bm, (long long)b.tiling.bn, (long long)b.tiling.bk, (long long)b.tiling.tiles,
                (long long)b.tiling.waves, b.tiling.active_cores, p.cube_cores);
    std::printf("  traffic           memory %.3f MiB at %.1f GB/s%s; L2->L1 %.3f MiB\n", b.memory_bytes / 1048576.0,
                b.effective_bandwidth_gbps, b.operands_fit_l2 ? " (operands stay in L2)" : "",
                b.l2_bytes / 1048576.0);
    std::printf("  device            %.1f TFLOP/s %s peak, %s %.0f GiB at %.1f GB/s x efficiency %.3f (%s)\n",
                p.peak_cube_flops(int8) * 1e-12, int8 ? "i8" : "f16", p.memory_type.c_str(), p.memory_capacity_gib,
                p.memory_bandwidth_gbps, opt.memory_efficiency,
                a.memory_efficiency == "dram"   ? "DRAM model, sequential stream"
                : a.memory_efficiency == "peak" ? "published peak, as duet bench"
                                                : "--memory-efficiency");
    if (p.tdp_w > 0)
        std::printf("  energy            at most %.3f mJ (TDP %.0f W x time)\n", b.cost.energy_pj * 1e-9, p.tdp_w);
    else
        std::printf("  energy            unknown (no published TDP for %s)\n", p.soc_version.c_str());
}

CLI::App* find_or_add_pim_sim(CLI::App& app) {
    const auto found = app.get_subcommands([](CLI::App* s) { return s->get_name() == "pim-sim"; });
    if (!found.empty()) return found.front();
    auto* cmd = app.add_subcommand("pim-sim", "Run one kernel on a modelled device (NPU, PIM, DRAM)");
    cmd->require_subcommand(1);
    return cmd;
}

}  // namespace

void register_pim_sim_npu(CLI::App& app) {
    auto args = std::make_shared<NpuArgs>();
    auto* cmd = find_or_add_pim_sim(app)->add_subcommand(
        "npu", "One operator on the Ascend NPU model: time, bound (compute, memory, launch), utilisation");
    cmd->footer(
        "Examples:\n"
        "  duet pim-sim npu --soc Ascend910B2 --op gemm --m 2048 --n 4096 --k 4096\n"
        "  duet pim-sim npu --soc Ascend310P3 --op gemv --n 4096 --k 4096 --npu-dispatch graph\n"
        "  duet pim-sim npu --soc Ascend910B --op attention --m 1 --n 2048 --k 128 --heads 32 --kv-heads 8\n"
        "gemm/gemv: y[m][n] = x[m][k] . W[n][k]^T. attention: m query tokens, n context tokens, k = head_dim.\n"
        "Presets: configs/hw/ascend*.toml (Ascend910B is an alias of Ascend910B2).\n");
    text(cmd, "--soc", args->soc, "soc_version of an NPU preset");
    text(cmd, "--op", args->op, "gemm, gemv or attention");
    number(cmd, "--m", args->m, "rows of x / query tokens", int64_t(1), kMaxTokens, DefaultFrom{"1 for gemv"});
    number(cmd, "--n", args->n, "output features / context tokens", int64_t(1), kMaxTokens)->required();
    number(cmd, "--k", args->k, "reduction length / head_dim", int64_t(1), kMaxTokens)->required();
    number(cmd, "--heads", args->heads, "attention: query heads", int64_t(1), int64_t(4096));
    number(cmd, "--kv-heads", args->kv_heads, "attention: KV heads", int64_t(1), int64_t(4096),
           DefaultFrom{"= --heads"});
    text(cmd, "--dtype", args->dtype, help::kPimDtype)
        ->transform(dtype_alias("--dtype"));
    text(cmd, "--npu-dispatch", args->dispatch, help::kNpuDispatch);
    alias(cmd, "--dispatch", "--npu-dispatch", args->dispatch);
    text(cmd, "--memory-efficiency", args->memory_efficiency,
         "sustained fraction of the peak memory bandwidth: peak (as duet bench), dram (the DRAM model's analytical "
         "efficiency for a sequential stream on the preset's memory) or a number in (0, 1]",
         DefaultFrom{"peak"});
    text(cmd, "--presets", args->presets, "directory of the NPU presets", DefaultFrom{"configs/hw"});
    cmd->callback([args] { run(*args); });
}

}  // namespace duet::cli
