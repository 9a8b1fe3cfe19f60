#include "hw/dram/dram_spec.h"

#include <cmath>

#include "core/error.h"
#include "core/toml_reader.h"

namespace duet::hw::dram {

namespace {

int cyc(TomlSection& t, const char* key, int64_t min = 0, int64_t max = 1 << 20) {
    return int(t.get_int(key, min, max));
}

}  // namespace

DramSpec load_dram_spec_file(const std::string& path, const std::string& name) {
    auto doc = TomlDoc::parse_file(path);
    DramSpec s;
    s.name = name;
    s.file = path;
    auto& root = doc.root();
    root.get_enum("kind", {"memory"});
    s.standard = root.get_string("standard");

    auto o = doc.section("organization");
    s.org.channels_per_stack = int(o.get_int("channels_per_stack", 1, 1024));
    s.org.pseudo_channels = int(o.get_int("pseudo_channels", 1, 8));
    s.org.stacks = int(o.get_int("stacks", 1, 64));
    s.org.ranks = int(o.get_int("ranks", 1, 16));
    s.org.bank_groups = int(o.get_int("bank_groups", 1, 16));
    s.org.banks_per_group = int(o.get_int("banks_per_group", 1, 64));
    s.org.rows = o.get_int("rows", 1, int64_t(1) << 24);
    s.org.page_bytes = int(o.get_int("page_bytes", 64, 1 << 16));
    s.org.bus_width_bits = int(o.get_int("bus_width_bits", 8, 1024));
    s.org.burst_length = int(o.get_int("burst_length", 1, 64));
    s.org.data_rate_mtps = int(o.get_int("data_rate_mtps", 100, 100000));
    o.finish();
    if (s.org.page_bytes % s.org.burst_bytes() != 0)
        fail("{}: organization.page_bytes = {} is not a multiple of the burst ({} bytes = bus_width_bits * "
             "burst_length / 8)",
             path, s.org.page_bytes, s.org.burst_bytes());

    auto t = doc.section("timing");
    auto& T = s.timing;
    T.tCK_ns = t.get_double("tCK_ns", 0.1, 10.0);
    T.nBL = cyc(t, "nBL", 1, 64);
    T.nCL = cyc(t, "nCL", 1);
    T.nCWL = cyc(t, "nCWL", 1);
    T.nRCD = cyc(t, "nRCD", 1);
    T.nRCDWR = int(t.get_int_or("nRCDWR", T.nRCD, 1, 1 << 20));
    T.nRP = cyc(t, "nRP", 1);
    T.nRAS = cyc(t, "nRAS", 1);
    T.nRC = cyc(t, "nRC", 1);
    T.nCCD_S = cyc(t, "nCCD_S", 1);
    T.nCCD_L = cyc(t, "nCCD_L", 1);
    T.nRRD_S = cyc(t, "nRRD_S", 1);
    T.nRRD_L = cyc(t, "nRRD_L", 1);
    T.nFAW = cyc(t, "nFAW", 0);
    T.nWR = cyc(t, "nWR", 1);
    T.nWTR_S = cyc(t, "nWTR_S", 0);
    T.nWTR_L = cyc(t, "nWTR_L", 0);
    T.nRTP = cyc(t, "nRTP", 1);
    T.nRTW = cyc(t, "nRTW", 0);
    T.nREFI = cyc(t, "nREFI", 0);
    T.nRFC = cyc(t, "nRFC", 0);
    T.act_commands = int(t.get_int_or("act_commands", 1, 1, 2));
    T.nAAD = int(t.get_int_or("nAAD", 0, 0, 64));
    t.finish();
    if (T.act_commands == 2 && T.nAAD < 1)
        fail("{}: timing.act_commands = 2 (two-part activation) needs timing.nAAD >= 1, the ACT-1 to ACT-2 limit",
             path);

    // Physical consistency: a burst of BL beats at data_rate MT/s lasts BL / (rate * tCK) cycles.
    const double beats_per_tck = s.org.data_rate_mtps * 1e-3 * T.tCK_ns;
    const double nbl_exact = s.org.burst_length / beats_per_tck;
    if (std::fabs(nbl_exact - T.nBL) > 0.05 * nbl_exact)
        fail("{}: timing.nBL = {} does not match burst_length / (data_rate_mtps * tCK_ns / 1000) = {:.3f}",
             path, T.nBL, nbl_exact);
    if (T.nRC < T.nRAS + T.nRP - 2)
        fail("{}: timing.nRC = {} is smaller than nRAS + nRP = {}", path, T.nRC, T.nRAS + T.nRP);
    if (T.nCCD_L < T.nCCD_S) fail("{}: timing.nCCD_L = {} < nCCD_S = {}", path, T.nCCD_L, T.nCCD_S);
    if (T.nREFI > 0 && T.nRFC >= T.nREFI)
        fail("{}: timing.nRFC = {} must be below nREFI = {}", path, T.nRFC, T.nREFI);

    if (auto e = doc.find_section("energy")) {
        s.energy.published = true;
        s.energy.act_pj = e->get_double("act_pj", 0, 1e6);
        s.energy.rd_pj_per_bit = e->get_double("rd_pj_per_bit", 0, 1e3);
        s.energy.wr_pj_per_bit = e->get_double("wr_pj_per_bit", 0, 1e3);
        s.energy.ref_pj = e->get_double("ref_pj", 0, 1e9);
        s.energy.background_mw = e->get_double("background_mw", 0, 1e6);
        e->finish();
    }
    doc.finish();
    return s;
}

}  // namespace duet::hw::dram
