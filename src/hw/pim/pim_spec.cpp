#include "hw/pim/pim_spec.h"

#include <cmath>

#include "core/error.h"
#include "core/toml_reader.h"
#include "hw/memory_presets.h"

namespace duet::hw::pim {

bool PimSpec::supports(DType t) const { return lanes(t) > 0; }

int PimSpec::lanes(DType t) const {
    switch (t) {
        case DType::F16: return unit.fp16 ? unit.lanes_16bit : 0;
        case DType::BF16: return unit.bf16 ? unit.lanes_16bit : 0;
        case DType::I8: return unit.lanes_int8;
        default: return 0;
    }
}

std::string PimSpec::dtype_list() const {
    std::string s;
    if (unit.fp16) s += "fp16";
    if (unit.bf16) s += std::string(s.empty() ? "" : ", ") + "bf16";
    if (unit.lanes_int8 > 0) s += std::string(s.empty() ? "" : ", ") + "int8";
    return s;
}

namespace {

PimController load_controller(TomlSection& t) {
    PimController c;
    c.clock_mhz = t.get_double("clock_mhz", 1, 1e5);
    c.vector_units = int(t.get_int("vector_units", 1, 4096));
    c.vector_lanes = int(t.get_int("vector_lanes", 1, 1024));
    c.sb_read_cycles = t.get_double("sb_read_cycles", 0, 1e6);
    c.sb_write_cycles = t.get_double("sb_write_cycles", 0, 1e6);
    c.exp_lane_cycles = t.get_double("exp_lane_cycles", 0, 1e6);
    c.riscv_cores = int(t.get_int("riscv_cores", 1, 4096));
    c.rv_rmsnorm_cycles = t.get_double("rv_rmsnorm_cycles", 0, 1e6);
    c.rv_rotary_cycles = t.get_double("rv_rotary_cycles", 0, 1e6);
    c.rv_softmax_cycles = t.get_double("rv_softmax_cycles", 0, 1e6);
    t.finish();
    return c;
}

}  // namespace

PimSpec load_pim_spec_file(const std::string& path, const std::string& name, const std::string& config_dir) {
    auto doc = TomlDoc::parse_file(path);
    auto& root = doc.root();
    root.get_enum("kind", {"pim"});
    PimSpec s;
    s.name = name;
    s.file = path;
    s.device = root.get_string("device");
    const std::string base = root.get_enum("base_memory", memory_preset_names());
    s.mem = load_memory_preset(base, config_dir);
    if (root.has("channels")) {
        // The device's channel count as published (modelled channels = pseudo channels for HBM).
        const int ch = int(root.get_int("channels", 1, 4096));
        const auto& o = s.mem.org;
        s.mem.org.stacks = 1;
        s.mem.org.channels_per_stack = ch / o.pseudo_channels;
        if (ch % o.pseudo_channels != 0)
            fail("{}: channels = {} is not a multiple of the base memory's pseudo_channels ({})", path, ch,
                 o.pseudo_channels);
    }

    auto u = doc.section("unit");
    s.unit.banks_per_unit = int(u.get_int("banks_per_unit", 1, 16));
    s.unit.access_bits = int(u.get_int("access_bits", 32, 4096));
    s.unit.lanes_16bit = int(u.get_int("lanes_16bit", 1, 1024));
    s.unit.lanes_int8 = int(u.get_int("lanes_int8", 0, 2048));
    s.unit.fp16 = u.get_bool("fp16");
    s.unit.bf16 = u.get_bool("bf16");
    s.unit.acc = u.get_enum("float_accumulator", {"fp16", "fp32"}) == "fp16" ? AccPrecision::FP16 : AccPrecision::FP32;
    s.unit.reduce_in_unit = u.get_enum("lane_reduction", {"unit", "host"}) == "unit";
    s.unit.input_buffer_bytes = int(u.get_int("input_buffer_bytes", 32, 1 << 24));
    s.unit.acc_registers = int(u.get_int("acc_registers", 1, 4096));
    s.unit.unit_clock_mhz = u.get_double("unit_clock_mhz", 0, 10000);
    s.unit.array_read_pj_per_bit = u.get_double_or("array_read_pj_per_bit", 0, 0, 1e3);
    u.finish();
    if (s.mem.org.banks() % s.unit.banks_per_unit != 0)
        fail("{}: unit.banks_per_unit = {} does not divide the {} banks of a channel", path, s.unit.banks_per_unit,
             s.mem.org.banks());
    if (s.unit.access_bits % 16 != 0 || s.unit.lanes_16bit * 16 > s.unit.access_bits * 4)
        fail("{}: unit.access_bits = {} and unit.lanes_16bit = {} are inconsistent", path, s.unit.access_bits,
             s.unit.lanes_16bit);

    auto t = doc.section("timing");
    const auto& mt = s.mem.timing;
    int ccd_unit = 0;  // cycles of the base memory per unit operation
    if (s.unit.unit_clock_mhz > 0) ccd_unit = int(std::ceil(1000.0 / s.unit.unit_clock_mhz / mt.tCK_ns - 1e-9));
    s.timing.nCCD_AB = int(t.get_int_or("nCCD_AB", std::max(mt.nCCD_L, ccd_unit), 1, 1 << 16));
    s.timing.nACT_AB = int(t.get_int_or("nACT_AB", mt.nRC, 1, 1 << 20));
    s.timing.nMAC_RD_OUT = int(t.get_int("nMAC_RD_OUT", 0, 1 << 16));
    s.timing.mode_switch_cycles = int(t.get_int("mode_switch_cycles", 0, 1 << 20));
    s.timing.nRCD_MAC = int(t.get_int_or("nRCD_MAC", mt.nRCD, 1, 1 << 16));
    s.timing.nRCD_EWMUL = int(t.get_int_or("nRCD_EWMUL", s.timing.nRCD_MAC, 1, 1 << 16));
    s.timing.host_sync_ns = t.get_double("host_sync_ns", 0, 1e9);
    s.timing.crf_bursts = int(t.get_int_or("crf_bursts", 0, 0, 64));
    s.timing.mode_switch_per_tile = t.get_bool_or("mode_switch_per_tile", false);
    s.timing.park_reads = int(t.get_int_or("park_reads", 0, 0, s.mem.org.banks()));
    s.timing.input_in_row = t.get_enum_or("input_write", "buffer", {"buffer", "row"}) == "row";
    s.timing.whole_tiles = t.get_bool_or("whole_tiles", false);
    s.timing.mode_writes_sb_ab = int(t.get_int_or("mode_writes_sb_ab", 0, 0, s.mem.org.banks()));
    s.timing.mode_writes_ab_pim = int(t.get_int_or("mode_writes_ab_pim", 0, 0, s.mem.org.banks()));
    s.timing.mode_writes_ab_sb = int(t.get_int_or("mode_writes_ab_sb", 0, 0, s.mem.org.banks()));
    t.finish();

    if (auto m = doc.find_section("mapping")) {
        s.attention_mapping = m->get_enum_or("attention", "gemv", {"gemv", "cent_head_per_bank"}) == "gemv"
                                  ? AttentionMapping::GEMV
                                  : AttentionMapping::CENT_HEAD_PER_BANK;
        s.host_request_cycles = int(m->get_int_or("host_request_cycles", 1, 1, 1 << 16));
        m->finish();
    }

    if (auto c = doc.find_section("controller")) {
        if (s.attention_mapping != AttentionMapping::CENT_HEAD_PER_BANK)
            fail("{}: section [controller] is not allowed here (allowed: with [mapping] attention = "
                 "\"cent_head_per_bank\", whose operators it serves)", path);
        s.controller = load_controller(*c);
    }

    s.pim_normal_overlap = root.get_bool("pim_normal_overlap");
    s.power_limit_w = root.get_double_or("power_limit_w", 0, 0, 1e4);
    s.default_alignment_bits = int(root.get_int_or("default_alignment_bits", 128, 8, 4096));
    doc.finish();
    return s;
}

}  // namespace duet::hw::pim
