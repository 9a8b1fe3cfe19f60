// `duet pim-sim mem` and `duet pim-sim gemv`: one memory pattern on the DRAM model, one GEMV on
// a PIM device model (hw/dram, hw/pim). `pim-sim npu` is added by the npu branch's file.
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include <limits>

#include "cli/commands.h"
#include "cli/flags.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/memory_info.h"
#include "hw/dram/mem_workload.h"
#include "hw/memory_presets.h"
#include "hw/pim/pim_functional.h"
#include "hw/pim/pim_gemv.h"
#include "sim/layout_placement.h"

namespace duet::cli {
namespace {

struct MemArgs {
    std::string memory, pattern = "stream", fidelity = "command", mapping = hw::dram::AddressMapping::kDefault;
    uint64_t bytes = 16 << 20, stride = 0, seed = 1, request_bytes = 64;
    int channels = 0, stacks = 0, queue_depth = 32;
    double write_fraction = 0;
};

struct GemvArgs {
    std::string pim, dtype, fidelity = "command", layout = "row_major_128bit";
    int64_t m = 4096, k = 4096;
    int alignment = 0, channels = 0, stacks = 0, batch = 1, scale_block = 0;
    bool functional = false;
    uint64_t seed = 1;
};

// --stacks N: N stacks (HBM) or packages of the preset's per-stack channels; --channels wins.
int device_channels(const hw::dram::DramOrg& o, int channels, int stacks) {
    if (channels < 0 || channels > 4096) fail("--channels {} is out of range (allowed: 1 to 4096)", channels);
    if (stacks < 0 || stacks > 64) fail("--stacks {} is out of range (allowed: 1 to 64)", stacks);
    if (channels > 0 && stacks > 0) fail("give --channels or --stacks, not both");
    if (stacks > 0) return stacks * o.channels_per_stack * o.pseudo_channels;
    return channels;
}

// Work the command-level simulations can do in well under a minute. Measured, not sourced:
// `duet pim-sim mem --memory lpddr5 --bytes 67108864` takes 1.3 s of CPU (about 0.8 M bursts/s) and
// `duet pim-sim gemv --pim pim_hbm2_fimdram --m 262144 --k 262144` 1.5 s, on the 2-core dev machine.
constexpr uint64_t kMaxCommandMemBytes = uint64_t(1) << 30;     // 16 M bursts of 64 B: ~20 s
constexpr long double kMaxCommandGemvElems = 1099511627776.0L;  // 2^40 weights: ~25 s

// The closed form (hw/pim/pim_program.cpp, ClosedFormBackend) still walks the program: one step
// per tile x vector x input chunk, and one per row activation inside the MAC runs; the time per
// step was measured between 15 ns (pim_gddr6_aim) and 95 ns (pim_hbm2_fimdram, two channel
// loads) with `duet pim-sim gemv --fidelity analytical --m 1048576..4194304 --k 1048576 --batch
// 1..8` on the 2-core dev machine, so the limit keeps the slowest preset near 25 s.
constexpr long double kMaxAnalyticalGemvSteps = 2.5e8L;
constexpr long double kAnalyticalGemvStepsPerS = 1.05e7L;  // the slowest preset measured (95 ns a step)

void check_analytical_work(const GemvArgs& a, const hw::pim::GemvPlan& p) {
    const long double acts =
        (long double)p.batch * p.tasks_per_unit * p.cols_per_task / std::max<int64_t>(1, p.cols_per_act);
    const long double steps = (long double)p.batch * p.tiles * p.chunks_per_tile + acts;
    if (steps > kMaxAnalyticalGemvSteps)
        fail("--m {} x --k {} with --batch {} at --fidelity analytical walks about {:.3g} program steps on {} "
             "(tiles x vectors x input chunks, plus row activations): up to {:.0f} s at the ~{:.2g} steps/s measured "
             "on a 2-core machine (allowed: at most {:.3g} steps; a smaller --m, --k or --batch, or more --channels)",
             a.m, a.k, a.batch, double(steps), a.pim, double(steps / kAnalyticalGemvStepsPerS),
             double(kAnalyticalGemvStepsPerS), double(kMaxAnalyticalGemvSteps));
}

void check_fidelity(const std::string& f) {
    if (f != "command" && f != "analytical")
        fail("--fidelity '{}' is not allowed (allowed: command, analytical)", f);
}

void run_mem(const MemArgs& a) {
    check_fidelity(a.fidelity);
    if (a.fidelity == "command" && a.bytes > kMaxCommandMemBytes)
        fail("--bytes = {} at --fidelity command simulates about {} bursts of 64 B: about {:.0f} s at the ~0.8 M "
             "bursts/s measured on a 2-core machine (allowed: --bytes at most {} with --fidelity command, or "
             "--fidelity analytical for any size)",
             a.bytes, a.bytes / 64, double(a.bytes / 64) / 0.8e6, kMaxCommandMemBytes);
    const auto spec = hw::load_memory_preset(a.memory);
    hw::dram::MemWorkload w;
    w.pattern = hw::dram::pattern_from_name(a.pattern);
    w.bytes = a.bytes;
    w.stride_bytes = a.stride;
    if (w.pattern == hw::dram::Pattern::STRIDED && a.stride == 0) fail("--pattern strided needs --stride BYTES");
    w.seed = a.seed;
    w.channels = device_channels(spec.org, a.channels, a.stacks);
    w.queue_depth = a.queue_depth;
    w.write_fraction = a.write_fraction;
    w.mapping = a.mapping;
    w.request_bytes = a.request_bytes;
    const auto t0 = std::chrono::steady_clock::now();
    const auto r = a.fidelity == "command" ? hw::dram::simulate_memory(spec, w) : hw::dram::estimate_memory(spec, w);
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("memory        %s (%s), %d channels, mapping %s\n", spec.name.c_str(), spec.standard.c_str(),
                r.channels, w.mapping.c_str());
    const int bpr = hw::dram::bursts_per_request(spec, w);
    std::printf("pattern       %s%s, %llu requests of %d B (%d burst%s of %d B), fidelity %s\n", a.pattern.c_str(),
                w.pattern == hw::dram::Pattern::STRIDED ? fmt::format(" (stride {} B)", a.stride).c_str() : "",
                (unsigned long long)((r.requests + bpr - 1) / bpr), bpr * spec.org.burst_bytes(), bpr,
                bpr == 1 ? "" : "s", spec.org.burst_bytes(), r.fidelity.c_str());
    std::printf("bytes         requested %llu, served %llu\n", (unsigned long long)r.bytes_requested,
                (unsigned long long)r.bytes_served);
    std::printf("time          %.1f ns\n", r.t_ns);
    std::printf("bandwidth     %.2f GB/s of %.2f GB/s peak (%.1f %%)\n", r.bw_gbps, r.peak_gbps,
                100.0 * r.bw_gbps / r.peak_gbps);
    std::printf("latency       average %.1f ns (loaded, queue %d), unloaded %.1f ns\n", r.avg_latency_ns,
                w.queue_depth, r.unloaded_latency_ns);
    std::printf("row hit rate  %.3f\n", r.row_hit_rate);
    std::printf("commands      ACT %llu%s  PRE %llu  RD %llu  WR %llu  REF %llu\n", (unsigned long long)r.n_act,
                r.n_act2 ? fmt::format(" (+ ACT-2 {})", r.n_act2).c_str() : "", (unsigned long long)r.n_pre,
                (unsigned long long)r.n_rd, (unsigned long long)r.n_wr, (unsigned long long)r.n_ref);
    if (spec.energy.published)
        std::printf("energy        %.1f nJ\n", r.energy_pj * 1e-3);
    else
        std::printf("energy        not modelled (preset publishes no energies)\n");
    std::printf("wall time     %.3f s\n", wall);
}

DType gemv_dtype(const hw::pim::PimSpec& s, const std::string& name) {
    if (name.empty()) return s.unit.fp16 ? DType::F16 : (s.unit.bf16 ? DType::BF16 : DType::I8);
    if (name == "f16") return DType::F16;
    if (name == "bf16") return DType::BF16;
    if (name == "i8") return DType::I8;
    fail("--dtype '{}' is not allowed (allowed: f16, bf16, i8)", name);
}

// Random operands in the dtype's raw encoding.
std::vector<uint8_t> random_operands(DType t, int64_t n, std::mt19937_64& rng) {
    const int e = t == DType::I8 ? 1 : 2;
    std::vector<uint8_t> v(size_t(n * e));
    std::uniform_real_distribution<float> uf(-1.0f, 1.0f);
    std::uniform_int_distribution<int> ui(-127, 127);
    for (int64_t i = 0; i < n; ++i) {
        if (t == DType::I8) {
            v[size_t(i)] = uint8_t(int8_t(ui(rng)));
        } else {
            const uint16_t h = t == DType::F16 ? fp32_to_fp16(uf(rng)) : fp32_to_bf16(uf(rng));
            std::memcpy(&v[size_t(i * 2)], &h, 2);
        }
    }
    return v;
}

void run_gemv(const GemvArgs& a) {
    check_fidelity(a.fidelity);
    if (a.layout != "row_major_128bit" && a.layout != "row_per_unit")  // before any work, --functional or not
        fail("--layout '{}' is not allowed (allowed: row_major_128bit, row_per_unit)", a.layout);
    const long double elems = (long double)a.m * (long double)a.k;
    if (a.fidelity == "command" && elems > kMaxCommandGemvElems)
        fail("--m {} x --k {} = {:.3g} weights at --fidelity command: about {:.0f} s at the ~4.7e10 weights/s "
             "measured on a 2-core machine (allowed: --m x --k at most {:.0f} with --fidelity command, or --fidelity "
             "analytical)",
             a.m, a.k, double(elems), double(elems / 4.7e10L), double(kMaxCommandGemvElems));
    if (a.functional) {  // the weights and their PIM-layout copy are held in host memory
        const long double need = elems * 2.0L * 2.0L;  // 2 bytes per f16/bf16 weight (int8: 1), twice
        const uint64_t avail = available_memory_bytes();
        if (avail > 0 && need > (long double)avail)
            fail("--functional with --m {} x --k {} holds {:.1f} GiB of weights (2 bytes each, twice: plain and PIM "
                 "layout) but {:.1f} GiB of memory is available (allowed: a smaller --m or --k)",
                 a.m, a.k, double(need / (1024.0L * 1024 * 1024)), double(avail) / double(1ull << 30));
    }
    const auto spec = hw::load_pim_preset(a.pim);
    hw::pim::GemvShape g;
    g.m = a.m;
    g.k = a.k;
    g.dtype = gemv_dtype(spec, a.dtype);
    g.alignment_bits = a.alignment > 0 ? a.alignment : spec.default_alignment_bits;
    g.channels = device_channels(spec.mem.org, a.channels, a.stacks);
    g.batch = a.batch;
    g.scale_block = a.scale_block;
    const auto plan = hw::pim::plan_gemv(spec, g);
    if (a.fidelity == "analytical") check_analytical_work(a, plan);
    const auto t0 = std::chrono::steady_clock::now();
    const auto r = a.fidelity == "command" ? hw::pim::simulate_gemv(spec, g) : hw::pim::estimate_gemv(spec, g);
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("device        %s (%s), base %s, %d channels x %d units (%d banks per unit)\n", spec.name.c_str(),
                spec.device.c_str(), spec.mem.name.c_str(), plan.channels, plan.units_per_channel,
                spec.unit.banks_per_unit);
    std::printf("gemv          y[%lld] = W[%lld][%lld] x, %s, alignment %d bits, batch %d, fidelity %s\n",
                (long long)g.m, (long long)g.m, (long long)g.k, a.dtype.empty() ? dtype_name(g.dtype) : a.dtype.c_str(),
                g.alignment_bits, g.batch, r.fidelity.c_str());
    if (g.scale_block > 0)
        std::printf("block scales  one f16 per %d elements: %lld column loads per %lld-element task\n", g.scale_block,
                    (long long)plan.scale_cols_per_task, (long long)plan.k_slice);
    std::printf("time          %.1f ns (%.3f us)\n", r.t_ns, r.t_ns * 1e-3);
    std::printf("commands      ACT_AB %llu  MAC_AB %llu  RD %llu  WR %llu  REF %llu  PRE %llu  mode switches %llu\n",
                (unsigned long long)r.n_act, (unsigned long long)r.n_mac, (unsigned long long)r.n_rd,
                (unsigned long long)r.n_wr, (unsigned long long)r.n_ref, (unsigned long long)r.n_pre,
                (unsigned long long)r.n_mode);
    std::printf("internal bw   %.1f GB/s of weights (%.1f MB read by the units incl. unused lanes)\n", r.internal_gbps,
                r.internal_bytes * 1e-6);
    std::printf("utilisation   units %.1f %%, lanes %.1f %% (%d-bit columns, %.2f per %lld-B row segment; "
                "padding and segment straddles only)\n",
                100 * r.unit_utilisation, 100 * r.lane_utilisation, plan.useful_bits_per_col, plan.cols_per_task_avg,
                (long long)plan.seg_bytes);
    std::printf("external      %.1f KB (input broadcast + result readout)\n", r.external_bytes * 1e-3);
    std::printf("vs host       streaming the weights once over the same %d channels: %.1f ns -> PIM speedup %.2fx%s\n",
                plan.channels, r.host_stream_ns, r.speedup, r.speedup < 1 ? " (slower than streaming)" : "");
    std::printf("bound         %s\n", r.bound);
    if (spec.mem.energy.published && spec.unit.array_read_pj_per_bit > 0)
        std::printf("energy        %.1f nJ (per command; unit column reads at %.2f pJ/bit, bank-local)\n",
                    r.energy_pj * 1e-3, spec.unit.array_read_pj_per_bit);
    else if (spec.mem.energy.published)
        std::printf("energy        %.1f nJ (upper bound: unit column reads charged at the base memory's read energy)\n",
                    r.energy_pj * 1e-3);
    else
        std::printf("energy        not modelled (base memory publishes no energies)\n");
    std::printf("wall time     %.4f s\n", wall);
    if (!a.functional) return;

    std::mt19937_64 rng(a.seed);
    const auto w = random_operands(g.dtype, g.m * g.k, rng);
    const auto x = random_operands(g.dtype, g.k, rng);
    hw::pim::FunctionalResult f;
    if (a.layout == "row_major_128bit") {
        const auto lp = sim::plan_for_device(spec, g, plan);
        const auto base = layout::to_pim(w.data(), lp);
        f = hw::pim::run_gemv_functional(spec, g, sim::layout_placement(lp, base), w.data(), x.data());
    } else if (a.layout == "row_per_unit") {
        std::vector<uint8_t> storage;
        const auto pl = hw::pim::row_per_unit_placement(spec, g, w.data(), storage);
        f = hw::pim::run_gemv_functional(spec, g, pl, w.data(), x.data());
    } else {
        fail("--layout '{}' is not allowed (allowed: row_major_128bit, row_per_unit)", a.layout);
    }
    const char* acc = g.dtype == DType::I8 ? "int32" : (spec.unit.acc == hw::pim::AccPrecision::FP16 ? "f16" : "f32");
    std::printf("functional    layout %s, %s operands, %s accumulators, lane reduction in %s\n", a.layout.c_str(),
                dtype_name(g.dtype), acc, spec.unit.reduce_in_unit ? "unit" : "host");
    std::printf("              %llu column commands, %llu partial sums reduced on the host\n",
                (unsigned long long)f.column_commands, (unsigned long long)f.partials);
    std::printf("error vs f64  max %.3g, mean %.3g, max relative to sum|w x| %.3g\n", f.max_abs_err, f.mean_abs_err,
                f.max_rel_err);
}

}  // namespace

void register_pim_sim(CLI::App& app) {
    auto* ps = app.add_subcommand(
        "pim-sim",
        "Run one kernel on a modelled device (NPU, PIM, DRAM). Examples:\n"
        "  duet pim-sim mem --memory lpddr5 --pattern stream --bytes 67108864\n"
        "  duet pim-sim gemv --pim pim_hbm2_fimdram --m 4096 --k 4096 --functional\n"
        "  duet pim-sim npu --soc Ascend910B2 --op gemm --m 2048 --n 4096 --k 4096");
    ps->require_subcommand(1);

    static MemArgs ma;
    auto* mem = ps->add_subcommand("mem", "One access pattern on a DRAM preset (command-level or analytical)");
    mem->footer(
        "Examples:\n"
        "  duet pim-sim mem --memory lpddr5 --pattern stream --bytes 16777216\n"
        "  duet pim-sim mem --memory hbm3 --pattern random --bytes 4194304 --fidelity analytical\n"
        "  duet pim-sim mem --memory hbm3 --pattern random --request-bytes 32 --bytes 4194304\n"
        "  duet pim-sim mem --memory lpddr5 --pattern strided --stride 4096 --bytes 1048576 --channels 8\n"
        "  duet pim-sim mem --memory hbm2e --stacks 8 --bytes 67108864 --fidelity analytical\n"
        "Presets: lpddr4x, lpddr5, lpddr5x, hbm2, hbm2e, hbm3, gddr6 (configs/hw/<name>.toml).");
    mem->add_option("--memory", ma.memory, "Memory preset")->required();
    text(mem, "--pattern", ma.pattern, "stream | random | strided");
    number(mem, "--stride", ma.stride, "Bytes between consecutive bursts (strided; 0: one burst)", uint64_t(0),
           uint64_t(1) << 40);
    number(mem, "--bytes", ma.bytes, "Bytes requested (whole bursts)", uint64_t(1), uint64_t(1) << 40);
    text(mem, "--fidelity", ma.fidelity, "command | analytical");
    number(mem, "--channels", ma.channels, help::kChannels, 0, 4096);
    number(mem, "--stacks", ma.stacks, help::kStacks, 0, 64);
    number(mem, "--write-fraction", ma.write_fraction, "Share of requests that are writes", 0.0, 1.0);
    text(mem, "--mapping", ma.mapping, "Address mapping, MSB first, e.g. RoRaBaCoBgCh");
    number(mem, "--queue-depth", ma.queue_depth, "Read and write queue depth per channel", 1, 4096);
    number(mem, "--seed", ma.seed, "Random pattern seed", uint64_t(0), std::numeric_limits<uint64_t>::max());
    number(mem, "--request-bytes", ma.request_bytes,
           "Bytes per request (a cache line; whole bursts of one row of one bank)", uint64_t(1), uint64_t(1) << 20);
    mem->callback([] { run_mem(ma); });

    static GemvArgs ga;
    auto* gemv = ps->add_subcommand("gemv", "One all-bank GEMV y = W x on a PIM preset");
    gemv->footer(
        "Examples:\n"
        "  duet pim-sim gemv --pim pim_hbm2_fimdram --m 4096 --k 4096\n"
        "  duet pim-sim gemv --pim pim_lpddr5x_bank --m 4096 --k 4096 --dtype int8 --alignment 256 --functional\n"
        "  duet pim-sim gemv --pim pim_gddr6_aim --m 1024 --k 1024 --fidelity analytical\n"
        "  duet pim-sim gemv --pim pim_lpddr5x_bank --m 6144 --k 2048 --dtype int8 --batch 2\n"
        "Presets: pim_hbm2_fimdram, pim_gddr6_aim, pim_lpddr5x_bank, pim_hbm3_bank, pim_cxl_aim (configs/hw/<name>.toml).");
    gemv->add_option("--pim", ga.pim, help::kPim)->required();
    number(gemv, "--m", ga.m, "Output rows", int64_t(1), kMaxTokens);
    number(gemv, "--k", ga.k, "Input length", int64_t(1), kMaxTokens);
    text(gemv, "--dtype", ga.dtype, help::kPimDtype,
         DefaultFrom{"the preset's first"})
        ->transform(dtype_alias("--dtype"));
    number(gemv, "--alignment", ga.alignment, "Layout granule in bits, [pim] alignment", 8, 65536,
           DefaultFrom{"128"});
    text(gemv, "--fidelity", ga.fidelity, "command | analytical");
    number(gemv, "--channels", ga.channels, help::kChannels, 0, 4096);
    number(gemv, "--stacks", ga.stacks, help::kStacks, 0, 64);
    gemv->add_flag("--functional", ga.functional, "Also run the lane-accurate arithmetic on reordered weights");
    text(gemv, "--layout", ga.layout, "Weight placement for --functional: row_major_128bit | row_per_unit");
    number(gemv, "--seed", ga.seed, "Seed of the random weights and input", uint64_t(0), std::numeric_limits<uint64_t>::max());
    number(gemv, "--batch", ga.batch, "Input vectors sharing the weights (timing only)", 1, 64);
    number(gemv, "--scale-block", ga.scale_block,
           "Elements per f16 block scale loaded beside the weights (32: ggml Q8_0 as int8); 0 = none (timing only)",
           0, 4096);
    gemv->callback([] { run_gemv(ga); });
}

}  // namespace duet::cli
