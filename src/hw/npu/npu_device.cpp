#include "hw/npu/npu_device.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace duet::hw::npu {
namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t round_up(int64_t a, int64_t b) { return ceil_div(a, b) * b; }

// Bytes per element as the device holds it. Quantised weights are counted by op.weight_bytes;
// this is only used when an op leaves its byte counts at 0.
double elem_bytes(DType t) {
    switch (t) {
        case DType::F32:
        case DType::I32: return 4;
        case DType::I8: return 1;
        default: return dtype_info(t).block_bytes / double(dtype_info(t).block_elems);
    }
}

constexpr double kSoftmaxFlopsPerElem = 5;  // max, subtract, exp, sum, scale

}  // namespace

const char* dispatch_name(DispatchMode d) {
    switch (d) {
        case DispatchMode::EAGER: return "eager";
        case DispatchMode::QUEUE0: return "queue0";
        case DispatchMode::QUEUE1: return "queue1";
        case DispatchMode::QUEUE2: return "queue2";
        case DispatchMode::GRAPH: return "graph";
    }
    return "?";
}

std::optional<DispatchMode> dispatch_from_name(const std::string& n) {
    for (auto d : {DispatchMode::EAGER, DispatchMode::QUEUE0, DispatchMode::QUEUE1, DispatchMode::QUEUE2,
                   DispatchMode::GRAPH})
        if (n == dispatch_name(d)) return d;
    return std::nullopt;
}

NpuDevice::NpuDevice(NpuPreset preset, NpuOptions options) : preset_(std::move(preset)), options_(options) {
    if (!(options_.memory_efficiency > 0 && options_.memory_efficiency <= 1))
        fail("NPU options: memory_efficiency = {} is out of range (allowed: greater than 0, at most 1)",
             options_.memory_efficiency);
}

double NpuDevice::effective_bandwidth_gbps(int active_cores, double clock_mhz) const {
    const double per_core_limit = active_cores * preset_.ddr_read_bytes_per_cycle * clock_mhz * 1e-3;
    return std::min(preset_.memory_bandwidth_gbps * options_.memory_efficiency, per_core_limit);
}

double NpuDevice::step_overhead_ns() const {
    const StepOverheads& s = preset_.serving_step;
    return (options_.dispatch == DispatchMode::GRAPH ? s.graph_step_us : s.eager_step_us) * 1e3;
}

bool NpuDevice::supports(const OpShape& op) const {
    if ((op.weight_dtype == DType::BF16 || op.act_dtype == DType::BF16) && !preset_.supports_bf16) return false;
    switch (op.cls) {
        case OpClass::GEMM:
        case OpClass::GEMV:
        case OpClass::ATTENTION: return op.m > 0 && op.n > 0 && op.k > 0;
        default: return true;
    }
}

NpuBreakdown NpuDevice::explain(const OpShape& op) const {
    if (!supports(op)) {
        if (!preset_.supports_bf16 && (op.weight_dtype == DType::BF16 || op.act_dtype == DType::BF16))
            fail("{}: bf16 is not supported by this SoC (allowed: f16, i8)", preset_.soc_version);
        fail("{}: operator shape m = {}, n = {}, k = {} is not allowed (allowed: every dimension at least 1)",
             preset_.soc_version, op.m, op.n, op.k);
    }
    NpuBreakdown b;
    switch (op.cls) {
        case OpClass::GEMM:
        case OpClass::GEMV: b = cube_op(op); break;
        case OpClass::ATTENTION: b = attention_op(op); break;
        default: b = vector_op(op); break;
    }
    finish(b);
    return b;
}

// y[m][n] = x[m][k] . W[n][k]^T on the cube. The int8 fractal is used when both operands are
// int8 (W8A8); every other dtype runs at the fp16 rate (quantised weights are dequantised on the
// load path; f32 runs as fp16, CANN's allow_fp32_to_fp16).
NpuBreakdown NpuDevice::cube_op(const OpShape& op) const {
    const NpuPreset& p = preset_;
    const bool int8 = op.weight_dtype == DType::I8 && op.act_dtype == DType::I8;
    const CubeFractal f = int8 ? p.fractal_int8 : p.fractal_fp16;
    const double e_in = int8 ? 1 : 2;   // operand bytes in L1/L0
    const double e_acc = 4;             // L0C accumulator: fp32 / int32
    const double hz = p.cube_clock_mhz * 1e6;

    const int64_t mp = round_up(op.m, f.m0), np = round_up(op.n, f.n0), kp = round_up(op.k, f.k0);
    NpuBreakdown best;
    best.useful_flops = 2.0 * double(op.m) * double(op.n) * double(op.k);
    best.padded_flops = 2.0 * double(mp) * double(np) * double(kp);
    best.fractal_utilisation = best.useful_flops / best.padded_flops;

    const double a_bytes = op.in_bytes ? double(op.in_bytes) : double(op.m * op.k) * elem_bytes(op.act_dtype);
    const double w_bytes = op.weight_bytes ? double(op.weight_bytes) : double(op.n * op.k) * elem_bytes(op.weight_dtype);
    const double c_bytes = op.out_bytes ? double(op.out_bytes) : double(op.m * op.n) * elem_bytes(op.act_dtype);
    const double l2_cap = p.l2_mib * 1024 * 1024;
    const double l0a = p.l0a_kib * 1024, l0b = p.l0b_kib * 1024, l0c = p.l0c_kib * 1024, l1 = p.l1_kib * 1024;

    best.t_device_ns = INFINITY;
    for (int64_t bm = f.m0; bm <= std::min<int64_t>(mp, 256); bm += (bm < 64 ? f.m0 : 64)) {
        for (int64_t bn = f.n0; bn <= std::min<int64_t>(np, 256); bn += f.n0) {
            if (double(bm * bn) * e_acc > l0c) continue;  // the output tile accumulates in L0C
            // Largest L0 k-depth that double-buffers in L0A and L0B.
            const int64_t bk_a = int64_t(l0a / 2 / (double(bm) * e_in)), bk_b = int64_t(l0b / 2 / (double(bn) * e_in));
            const int64_t bk = std::min({bk_a, bk_b, kp}) / f.k0 * f.k0;
            if (bk < f.k0) continue;
            if (2.0 * double(bm + bn) * double(bk) * e_in > l1) continue;  // double-buffered L1 panels
            const int64_t mt = ceil_div(mp, bm), nt = ceil_div(np, bn), tiles = mt * nt;
            const int active = int(std::min<int64_t>(tiles, p.cube_cores));
            const int64_t waves = ceil_div(tiles, p.cube_cores);
            const double tile_cycles = double(bm / f.m0) * double(bn / f.n0) * double(kp / f.k0);
            const double t_cube = double(waves) * tile_cycles / hz * 1e9;
            const double feed_cycles = std::max(double(bm) * double(kp) * e_in / p.l1_to_l0a_bytes_per_cycle,
                                                double(bn) * double(kp) * e_in / p.l1_to_l0b_bytes_per_cycle);
            const double t_feed = double(waves) * feed_cycles / hz * 1e9;
            // L2 -> L1: every tile loads its A and B panels.
            const double l2_bytes = double(tiles) * double(bm + bn) * double(kp) * e_in;
            const double t_l2 = l2_bytes / (active * p.l2_read_bytes_per_cycle * hz) * 1e9;
            // Device memory: each operand once if it stays in L2, else re-read per tile row/column;
            // the better of the two loop orders.
            const bool a_fits = a_bytes <= l2_cap, w_fits = w_bytes <= l2_cap;
            const double order_n_outer = w_bytes + a_bytes * (a_fits ? 1.0 : double(nt));
            const double order_m_outer = a_bytes + w_bytes * (w_fits ? 1.0 : double(mt));
            const double mem_bytes = std::min(order_n_outer, order_m_outer) + c_bytes;
            const double bw = effective_bandwidth_gbps(active, p.cube_clock_mhz);
            const double t_mem = mem_bytes / bw;  // bytes / (GB/s) = ns
            const double t = std::max({t_cube, t_feed, t_l2, t_mem});
            if (t < best.t_device_ns * (1 - 1e-12)) {
                best.t_device_ns = t;
                best.t_cube_ns = t_cube;
                best.t_l1_to_l0_ns = t_feed;
                best.t_l2_ns = t_l2;
                best.t_memory_ns = t_mem;
                best.memory_bytes = mem_bytes;
                best.l2_bytes = l2_bytes;
                best.effective_bandwidth_gbps = bw;
                best.operands_fit_l2 = a_fits && w_fits;
                best.tiling = {bm, bn, bk, tiles, waves, active};
                best.core_utilisation = double(tiles) / double(waves * p.cube_cores);
            }
        }
    }
    DUET_CHECK(std::isfinite(best.t_device_ns), "no cube tiling fits {}'s L0/L1", p.soc_version);
    best.cube_utilisation = best.useful_flops / (p.peak_cube_flops(int8) * best.t_device_ns * 1e-9);
    return best;
}

// FlashAttention-style: per KV head, the g = n_head / n_head_kv query heads that share it are
// stacked (m * g rows), S = Q.K^T and O = P.V run on the cube, the online softmax on the vector
// units; K and V stream from device memory once. Work is split over KV heads, 128-row query
// blocks and 512-token KV chunks (flash decoding) to fill the cores.
NpuBreakdown NpuDevice::attention_op(const OpShape& op) const {
    const NpuPreset& p = preset_;
    const CubeFractal f = p.fractal_fp16;
    const int64_t n_head = std::max<int64_t>(op.n_head, 1);
    const int64_t n_head_kv = op.n_head_kv > 0 ? op.n_head_kv : n_head;
    if (n_head % n_head_kv != 0)
        fail("{}: attention with n_head = {} and n_head_kv = {} (allowed: n_head a multiple of n_head_kv)",
             p.soc_version, n_head, n_head_kv);
    const int64_t rows = op.m * (n_head / n_head_kv);
    const int64_t mp = round_up(rows, f.m0), np = round_up(op.n, f.n0), kp = round_up(op.k, f.k0);
    NpuBreakdown b;
    const double dense_flops = 4.0 * double(op.m) * double(op.n) * double(op.k) * double(n_head);
    b.useful_flops = op.flops > 0 ? op.flops : dense_flops;
    // A causal prefill does about half the dense work (op.flops says how much); the kernel skips
    // the masked blocks, so the padded work and the softmax shrink by the same factor.
    const double work_fraction = std::min(1.0, b.useful_flops / dense_flops);
    b.padded_flops = 4.0 * double(n_head_kv) * double(mp) * double(np) * double(kp) * work_fraction;
    b.fractal_utilisation = std::min(1.0, b.useful_flops / b.padded_flops);
    const int64_t units = n_head_kv * ceil_div(mp, 128) * ceil_div(op.n, 512);
    const int64_t waves = ceil_div(units, p.cube_cores);
    const int active = int(std::min<int64_t>(units, p.cube_cores));
    b.tiling = {std::min<int64_t>(mp, 128), std::min<int64_t>(np, 512), kp, units, waves, active};
    b.core_utilisation = double(units) / double(waves * p.cube_cores);
    const double per_core_flops = double(f.macs_per_cycle()) * 2.0 * p.cube_clock_mhz * 1e6;
    b.t_cube_ns = double(waves) * (b.padded_flops / double(units)) / per_core_flops * 1e9;
    const double lanes = p.vector_bytes_per_cycle / 2;  // fp16 lanes
    const double softmax_flops = kSoftmaxFlopsPerElem * double(op.m) * double(op.n) * double(n_head) * work_fraction;
    b.t_vector_ns = softmax_flops / (lanes * p.vector_cores * p.vector_clock_mhz * 1e6) * 1e9;
    const double e = elem_bytes(op.act_dtype);
    const double kv = op.weight_bytes ? double(op.weight_bytes) : 2.0 * double(op.n * op.k * n_head_kv) * elem_bytes(op.weight_dtype);
    const double q = op.in_bytes ? double(op.in_bytes) : double(op.m * op.k * n_head) * e;
    const double o = op.out_bytes ? double(op.out_bytes) : double(op.m * op.k * n_head) * e;
    b.memory_bytes = kv + q + o;
    if (!options_.fused_attention)  // scores [n_head][m][n] in the activation dtype: 4 passes (write, read, write, read)
        b.memory_bytes += 4.0 * double(n_head) * double(op.m) * double(op.n) * e * work_fraction;
    b.effective_bandwidth_gbps = effective_bandwidth_gbps(active, p.cube_clock_mhz);
    b.t_memory_ns = b.memory_bytes / b.effective_bandwidth_gbps;
    b.t_device_ns = std::max({b.t_cube_ns, b.t_vector_ns, b.t_memory_ns});
    b.cube_utilisation = b.useful_flops / (p.peak_cube_flops(false) * b.t_device_ns * 1e-9);
    return b;
}

// Elementwise, softmax, norms and copies on the vector units: one operation per fp16 lane per
// cycle (FMA counted as one), memory from the vector cores' share of the device memory.
NpuBreakdown NpuDevice::vector_op(const OpShape& op) const {
    const NpuPreset& p = preset_;
    NpuBreakdown b;
    const double e = elem_bytes(op.act_dtype);
    double in = double(op.in_bytes), out = double(op.out_bytes);
    if (in == 0 && out == 0) in = out = double(std::max<int64_t>(op.m, 1) * std::max<int64_t>(op.n, 1)) * e;
    const double elems = std::max(in, out) / e;
    double flops = op.flops;
    if (flops <= 0 && op.cls == OpClass::SOFTMAX) flops = kSoftmaxFlopsPerElem * elems;
    if (flops <= 0 && op.cls == OpClass::ELEMENTWISE) flops = elems;
    b.useful_flops = b.padded_flops = flops;
    b.fractal_utilisation = 1;
    const double lanes = p.vector_bytes_per_cycle / 2;
    // Work is split in 32-byte UB blocks over the vector cores.
    const int64_t blocks = std::max<int64_t>(1, int64_t(std::ceil(std::max(in, out) / 32)));
    const int active = int(std::min<int64_t>(blocks, p.vector_cores));
    b.tiling = {0, 0, 0, blocks, 1, active};
    b.core_utilisation = double(active) / double(p.vector_cores);
    b.t_vector_ns = flops / (lanes * active * p.vector_clock_mhz * 1e6) * 1e9;
    b.memory_bytes = in + out + double(op.weight_bytes);
    b.effective_bandwidth_gbps = effective_bandwidth_gbps(active, p.vector_clock_mhz);
    b.t_memory_ns = b.memory_bytes / b.effective_bandwidth_gbps;
    b.t_device_ns = std::max(b.t_vector_ns, b.t_memory_ns);
    return b;
}

// Launch overhead by dispatch mode, bound classification, energy.
//   eager (synchronous):  t = host + task + device
//   queue0/1/2 (async):   t = max(host, task + device)   (host and device pipeline)
//   graph (replay):       t = task + device
void NpuDevice::finish(NpuBreakdown& b) const {
    const LaunchOverheads& l = preset_.launch;
    const double task = l.device_task_us * 1e3, dev = b.t_device_ns;
    double t = 0;
    switch (options_.dispatch) {
        case DispatchMode::EAGER: t = l.eager_host_us * 1e3 + task + dev; break;
        case DispatchMode::QUEUE0: t = std::max(l.queue0_host_us * 1e3, task + dev); break;
        case DispatchMode::QUEUE1: t = std::max(l.queue1_host_us * 1e3, task + dev); break;
        case DispatchMode::QUEUE2: t = std::max(l.queue2_host_us * 1e3, task + dev); break;
        case DispatchMode::GRAPH: t = std::max(l.graph_host_us * 1e3, task + dev); break;
    }
    b.cost.t_ns = t;
    b.cost.t_launch_ns = t - dev;
    b.cost.bytes_moved = b.memory_bytes;
    b.cost.energy_pj = preset_.tdp_w * t * 1e3;  // W x ns = nJ = 1000 pJ: a TDP upper bound
    const double compute = std::max({b.t_cube_ns, b.t_l1_to_l0_ns, b.t_vector_ns});
    const double memory = std::max(b.t_l2_ns, b.t_memory_ns);
    if (b.cost.t_launch_ns >= dev)
        b.cost.bound = "launch";
    else
        b.cost.bound = compute >= memory ? "compute" : "memory";
}

}  // namespace duet::hw::npu
