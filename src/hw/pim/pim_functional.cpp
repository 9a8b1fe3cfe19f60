#include "hw/pim/pim_functional.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <unordered_map>

#include "core/error.h"

namespace duet::hw::pim {

namespace {

double operand(DType t, const uint8_t* p) {
    switch (t) {
        case DType::F16: {
            uint16_t h;
            std::memcpy(&h, p, 2);
            return fp16_to_fp32(h);
        }
        case DType::BF16: {
            uint16_t h;
            std::memcpy(&h, p, 2);
            return bf16_to_fp32(h);
        }
        default: return double(int8_t(*p));
    }
}

// Accumulator arithmetic of one lane.
struct Arith {
    bool integer = false;
    bool fp16_acc = false;
    double add(double acc, double prod) const {
        if (integer) return acc + prod;  // int32 exact for |sum| < 2^31 (checked by the caller's range)
        const float s = float(acc) + float(prod);  // products of 16-bit floats are exact in fp32
        return fp16_acc ? double(fp16_to_fp32(fp32_to_fp16(s))) : double(s);
    }
};

}  // namespace

FunctionalResult run_gemv_functional(const PimSpec& spec, const GemvShape& g, const PimPlacement& pl, const void* w,
                                     const void* x) {
    const GemvPlan plan = plan_gemv(spec, g);
    if (pl.channels != plan.channels || pl.banks != spec.mem.org.banks())
        fail("PIM placement has {} channels x {} banks, the device {} x {}", pl.channels, pl.banks, plan.channels,
             spec.mem.org.banks());
    const int e_bytes = plan.operand_bits / 8;
    const auto* wb = static_cast<const uint8_t*>(w);
    const auto* xb = static_cast<const uint8_t*>(x);
    std::vector<double> xv(size_t(g.k));
    for (int64_t i = 0; i < g.k; ++i) xv[size_t(i)] = operand(g.dtype, xb + i * e_bytes);

    Arith ar;
    ar.integer = g.dtype == DType::I8;
    ar.fp16_acc = !ar.integer && spec.unit.acc == AccPrecision::FP16;
    const int lanes = plan.lanes;
    // A column command reads col_bytes of a bank; the layout's granules inside it may belong to
    // two matrix rows, each of which costs its own command (docs/hardware-model.md 3.1).
    const int col_bytes = plan.useful_bits_per_col / 8;
    const int piece_bytes = std::min(col_bytes, g.alignment_bits / 8);
    const int piece_elems = piece_bytes / e_bytes;

    FunctionalResult res;
    std::vector<double> host(size_t(g.m), 0.0);  // host-side sums (fp32, or exact for int8)
    const int bpu = spec.unit.banks_per_unit;
    for (int c = 0; c < pl.channels; ++c) {
        for (int u = 0; u < pl.banks / bpu; ++u) {
            // Accumulator lanes per matrix row, in the order the unit meets the rows.
            std::unordered_map<int64_t, std::vector<double>> acc;
            std::vector<int64_t> order;
            for (int64_t r = 0; r < pl.rows_per_bank; ++r) {
                for (int bb = 0; bb < bpu; ++bb) {  // one all-bank ACT opens the row in every bank
                    const uint64_t slot = pl.slot_base_offset(c, u * bpu + bb, r);
                    int64_t col_row = -2;  // matrix row last counted in the current column
                    for (int64_t o = 0; o < pl.row_bytes; o += piece_bytes) {
                        const uint64_t off = slot + uint64_t(o);
                        if (off >= pl.base_bytes) break;
                        const PlacedElement el = pl.element_of_offset(off);
                        if (o % col_bytes == 0) col_row = -2;
                        if (el.row != col_row) ++res.column_commands;
                        col_row = el.row;
                        if (el.row >= g.m) continue;
                        const int lane0 = int(o % col_bytes) / e_bytes;
                        auto it = acc.find(el.row);
                        if (it == acc.end()) {
                            it = acc.emplace(el.row, std::vector<double>(size_t(lanes), 0.0)).first;
                            order.push_back(el.row);
                        }
                        for (int e = 0; e < piece_elems; ++e) {
                            const int64_t col = el.col + e;
                            if (col >= g.k) break;  // padding lanes stay idle
                            const double wv = operand(g.dtype, pl.base + off + uint64_t(e) * e_bytes);
                            double& a = it->second[size_t((lane0 + e) % lanes)];
                            a = ar.add(a, wv * xv[size_t(col)]);
                        }
                    }
                }
            }
            for (int64_t row : order) {
                std::vector<double> v = acc[row];
                double partial;
                if (spec.unit.reduce_in_unit) {  // pairwise adder tree in accumulator precision
                    size_t n = v.size();
                    while (n > 1) {
                        const size_t h = n / 2;
                        for (size_t i = 0; i < h; ++i) v[i] = ar.add(v[2 * i], v[2 * i + 1]);
                        if (n % 2) v[h] = v[n - 1];
                        n = h + n % 2;
                    }
                    partial = v[0];
                } else {  // host reads the lane partials and sums them in fp32
                    float s = 0;
                    double si = 0;
                    for (double lane : v) {
                        s += float(lane);
                        si += lane;
                    }
                    partial = ar.integer ? si : double(s);
                }
                host[size_t(row)] = ar.integer ? host[size_t(row)] + partial : double(float(host[size_t(row)]) + float(partial));
                ++res.partials;
            }
        }
    }
    res.y = host;
    res.y_ref.assign(size_t(g.m), 0.0);
    double sum_err = 0;
    for (int64_t r = 0; r < g.m; ++r) {
        double ref = 0, mag = 0;
        for (int64_t i = 0; i < g.k; ++i) {
            const double p = operand(g.dtype, wb + (r * g.k + i) * e_bytes) * xv[size_t(i)];
            ref += p;
            mag += std::fabs(p);
        }
        res.y_ref[size_t(r)] = ref;
        const double err = std::fabs(res.y[size_t(r)] - ref);
        res.max_abs_err = std::max(res.max_abs_err, err);
        if (mag > 0) res.max_rel_err = std::max(res.max_rel_err, err / mag);
        sum_err += err;
    }
    res.mean_abs_err = g.m ? sum_err / double(g.m) : 0;
    return res;
}

PimPlacement row_per_unit_placement(const PimSpec& spec, const GemvShape& g, const void* w,
                                    std::vector<uint8_t>& storage) {
    const GemvPlan plan = plan_gemv(spec, g);
    const int e = plan.operand_bits / 8;
    const int gran_elems = std::max(1, g.alignment_bits / plan.operand_bits);
    const int64_t k_pad = (g.k + gran_elems - 1) / gran_elems * gran_elems;
    const int64_t row_bytes = spec.mem.org.page_bytes;
    const int bpu = spec.unit.banks_per_unit;
    const int upc = plan.units_per_channel;
    const int64_t units = plan.units;
    const int channels = plan.channels, banks = spec.mem.org.banks();
    const int64_t rows_per_unit = (g.m + units - 1) / units;
    const int64_t stream_bytes = rows_per_unit * k_pad * e;
    const int64_t chunks = (stream_bytes + row_bytes - 1) / row_bytes;
    const int64_t rows_per_bank = (chunks + bpu - 1) / bpu;
    storage.assign(size_t(rows_per_bank * banks * channels * row_bytes), 0);
    auto slot_of = [=](int c, int b, int64_t r) {
        return uint64_t(((r * banks + b) * channels + c) * row_bytes);
    };
    // Stream position p of unit u -> base offset.
    auto offset_of = [=](int64_t u, int64_t p) {
        const int c = int(u / upc), j = int(u % upc);
        const int64_t i = p / row_bytes;
        return slot_of(c, j * bpu + int(i % bpu), i / bpu) + uint64_t(p % row_bytes);
    };
    const auto* wb = static_cast<const uint8_t*>(w);
    for (int64_t row = 0; row < g.m; ++row) {
        const int64_t u = row % units, lr = row / units;
        for (int64_t col = 0; col < g.k; ++col)
            std::memcpy(&storage[offset_of(u, (lr * k_pad + col) * e)], wb + (row * g.k + col) * e, size_t(e));
    }
    PimPlacement pl;
    pl.base = storage.data();
    pl.base_bytes = storage.size();
    pl.channels = channels;
    pl.banks = banks;
    pl.row_bytes = row_bytes;
    pl.rows_per_bank = rows_per_bank;
    pl.slot_base_offset = slot_of;
    pl.element_of_offset = [=](uint64_t off) {
        const int64_t slot = int64_t(off) / row_bytes;
        const int c = int(slot % channels);
        const int b = int((slot / channels) % banks);
        const int64_t r = slot / (int64_t(channels) * banks);
        const int64_t u = int64_t(c) * upc + b / bpu;
        const int64_t p = (r * bpu + b % bpu) * row_bytes + int64_t(off) % row_bytes;
        const int64_t lr = p / (k_pad * e), col = (p % (k_pad * e)) / e;
        PlacedElement el;
        el.row = lr * units + u;
        el.col = col;
        el.padding = col >= g.k || el.row >= g.m;
        if (el.row >= g.m) el.row = g.m;  // beyond the matrix: skipped by the walker
        return el;
    };
    return pl;
}

}  // namespace duet::hw::pim
