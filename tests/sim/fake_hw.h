#pragma once
// Closed-form test doubles for the simulator: a roofline NPU, a bandwidth-only PIM and a
// layout whose sizes and conversion times are simple formulas, so timeline results can be
// checked by hand.
#include <algorithm>
#include <cmath>

#include "sim/hardware.h"
#include "graph/model_shape.h"
#include "sim/timeline.h"

namespace fake {

using namespace duet;

struct Npu : hw::Device {
    double flops_per_ns = 300e3;  // 300 TFLOP/s
    double bytes_per_ns = 1600;   // 1.6 TB/s
    double launch_ns = 1000;
    double pj_per_byte = 10;
    std::string name() const override { return "fake-npu"; }
    bool supports(const hw::OpShape&) const override { return true; }
    hw::Cost estimate(const hw::OpShape& s) const override {
        hw::Cost c;
        double bytes = double(s.weight_bytes + s.in_bytes + s.out_bytes);
        c.t_ns = std::max(s.flops / flops_per_ns, bytes / bytes_per_ns) + launch_ns;
        c.t_launch_ns = launch_ns;
        c.bytes_moved = bytes;
        c.energy_pj = bytes * pj_per_byte;
        return c;
    }
};

struct Pim : hw::Device {
    double internal_bytes_per_ns = 6400;  // 4x the external bus
    double ext_bytes_per_ns = 1600;
    double fixed_ns = 500;
    double pj_per_byte = 3;
    std::string name() const override { return "fake-pim"; }
    bool supports(const hw::OpShape& s) const override {
        return (s.cls == hw::OpClass::GEMV || s.cls == hw::OpClass::GEMM || s.cls == hw::OpClass::ATTENTION) &&
               s.m <= 8;
    }
    hw::Cost estimate(const hw::OpShape& s) const override {
        hw::Cost c;
        c.t_ns = double(s.weight_bytes) / internal_bytes_per_ns + double(s.in_bytes + s.out_bytes) / ext_bytes_per_ns +
                 fixed_ns;
        c.bytes_moved = double(s.weight_bytes);
        c.energy_pj = double(s.weight_bytes) * pj_per_byte;
        return c;
    }
};

struct Layout : sim::LayoutModel {
    double conv_bytes_per_ns = 1600;  // PIM -> NZ load path
    double switch_bytes_per_ns = 800; // NZ -> PIM vector pass
    uint64_t block_bytes = 16 * 1024;
    uint64_t nz_bytes(int64_t n, int64_t k, DType) const override {
        auto up = [](int64_t x) { return (x + 15) / 16 * 16; };
        return uint64_t(up(n) * up(k)) * 2;
    }
    sim::PimMatrixInfo pim(int64_t n, int64_t k, DType) const override {
        sim::PimMatrixInfo p;
        p.base_bytes = uint64_t(n) * uint64_t((k + 7) / 8 * 8) * 2;
        p.n_blocks = int64_t((p.base_bytes + block_bytes - 1) / block_bytes);
        p.index_bytes = uint64_t(p.n_blocks) * 24;
        p.to_nz_bytes_read = p.base_bytes + p.index_bytes;
        p.to_nz_ns = double(p.to_nz_bytes_read) / conv_bytes_per_ns;
        return p;
    }
    double nz_to_pim_ns(int64_t n, int64_t k, DType dt) const override {
        return 2.0 * double(nz_bytes(n, k, dt)) / switch_bytes_per_ns;
    }
};

struct Rig {
    Npu npu;
    Pim pim;
    Layout layout;
    sim::SimHardware hw() const {
        sim::SimHardware h = sim::npu_pim_hardware(&npu, &pim, &layout);
        h.memory_name = "fake-mem";
        h.mem_bw_gbps = npu.bytes_per_ns;
        h.pim_internal_bw_gbps = pim.internal_bytes_per_ns;
        h.conversion_pj_per_byte = 5;
        h.pointer_switch_ns = 2000;
        return h;
    }
};

// Decode stats of the classic machine (npu0, pim0) for hand-made reports.
inline void npu_pim_devices(sim::PhaseStats& p) {
    p.device.resize(2);
    p.device[0].name = "npu0";
    p.device[0].kind = sim::DeviceKind::NPU;
    p.device[1].name = "pim0";
    p.device[1].kind = sim::DeviceKind::PIM;
}

// A small llama-like shape: fast to simulate, big enough for steady state.
inline graph::ModelShape small_shape() {
    graph::ModelShape s;
    s.name = "small";
    s.n_vocab = 32000;
    s.n_embd = 1024;
    s.n_layer = 4;
    s.n_head = 16;
    s.n_head_kv = 4;
    s.n_ff = 2816;
    s.head_dim = 64;
    return s;
}

// A link of 50 GB/s, 1 us latency and 0.5 us per transfer, for the scale-out tests.
inline sim::SimLink test_link() {
    sim::SimLink l;
    l.bandwidth_gbps = 50;
    l.latency_ns = 1000;
    l.per_transfer_ns = 500;
    return l;
}

// `npus` fake NPUs joined by test_link (a star to npu0 plus the mesh between the others).
struct Cluster {
    Npu npu;
    Layout layout;
    sim::SimHardware hw;
    explicit Cluster(int npus) {
        hw = sim::npu_pim_hardware(&npu, nullptr, &layout);
        hw.mem_bw_gbps = npu.bytes_per_ns * npus;
        for (int i = 1; i < npus; ++i) hw.add_device(sim::DeviceKind::NPU, &npu, test_link());
        hw.add_mesh(sim::DeviceKind::NPU, test_link());
    }
};

}  // namespace fake
