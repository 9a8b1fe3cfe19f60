#include "model/grammar/json_schema_values.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace duet::model::grammar {
namespace {

std::string digit_class(char lo, char hi) { return lo == hi ? fmt::format("\"{}\"", lo) : fmt::format("[{}-{}]", lo, hi); }

std::string any_digits(size_t n) { return n == 0 ? "" : n == 1 ? " [0-9]" : fmt::format(" [0-9]{{{}}}", n); }

// Digit strings of equal length from a to b (a <= b), as an expression without outer parens.
std::string same_length(const std::string& a, const std::string& b) {
    if (a.empty()) return "\"\"";
    if (a == b) return "\"" + a + "\"";
    if (a.size() == 1) return digit_class(a[0], b[0]);
    const size_t n = a.size() - 1;
    const std::string ra = a.substr(1), rb = b.substr(1);
    if (a[0] == b[0]) return fmt::format("\"{}\" ( {} )", a[0], same_length(ra, rb));
    const bool a_low = ra == std::string(n, '0'), b_high = rb == std::string(n, '9');
    std::vector<std::string> alts;
    char mid_lo = a[0], mid_hi = b[0];
    if (!a_low) alts.push_back(fmt::format("\"{}\" ( {} )", a[0], same_length(ra, std::string(n, '9')))), ++mid_lo;
    if (!b_high) --mid_hi;
    if (mid_lo <= mid_hi) alts.push_back(digit_class(mid_lo, mid_hi) + any_digits(n));
    if (!b_high) alts.push_back(fmt::format("\"{}\" ( {} )", b[0], same_length(std::string(n, '0'), rb)));
    std::string out;
    for (const auto& x : alts) out += (out.empty() ? "" : " | ") + x;
    return out;
}

// Non-negative integers in [lo, hi], without leading zeros.
std::string unsigned_range(uint64_t lo, uint64_t hi) {
    const std::string a = std::to_string(lo), b = std::to_string(hi);
    std::string out;
    for (size_t d = a.size(); d <= b.size(); ++d) {
        std::string from = a;
        if (d != a.size()) from.assign(d, '0'), from[0] = '1';  // 10...0 (no operator+: GCC 12 -Wrestrict)
        const std::string to = d == b.size() ? b : std::string(d, '9');
        out += (out.empty() ? "" : " | ") + same_length(from, to);
    }
    return "( " + out + " )";
}

}  // namespace

std::string integer_range(int64_t lo, int64_t hi) {
    std::vector<std::string> alts;
    if (lo < 0) alts.push_back("\"-\" " + unsigned_range(uint64_t(hi < 0 ? -hi : 1), uint64_t(-lo)));
    if (hi >= 0) alts.push_back(unsigned_range(uint64_t(std::max<int64_t>(lo, 0)), uint64_t(hi)));
    return alts.size() == 1 ? alts[0] : "( " + alts[0] + " | " + alts[1] + " )";
}

std::string number_range(const NumberBounds& b, bool integer) {
    const double cap = double(kMaxIntMagnitude);
    // The smallest and largest integers inside the interval, clamped to 16 digits.
    double lo_int = -cap, hi_int = cap;
    if (b.has_lo) lo_int = std::max(lo_int, b.exclusive_lo ? std::floor(b.lo) + 1 : std::ceil(b.lo));
    if (b.has_hi) hi_int = std::min(hi_int, b.exclusive_hi ? std::ceil(b.hi) - 1 : std::floor(b.hi));
    std::vector<std::string> alts;
    if (lo_int <= hi_int) alts.push_back(integer_range(int64_t(lo_int), int64_t(hi_int)));
    if (!integer) {
        // Fractions only below 2^24 and of at most 6 digits: a reader parsing the number into a
        // double (the validators do) then lands strictly inside (I, I+1) (ulp <= 2^-29 << 1e-6),
        // never on a bound by rounding.
        const double frac_cap = 16777215;
        const std::string frac = " \".\" [0-9]{1,6}";
        // I.f >= 0 lies in [I, I+1): I >= lo_int and I + 1 <= hi.
        const double pos_lo = std::max(0.0, lo_int);
        const double pos_hi = b.has_hi ? std::min(frac_cap, std::floor(b.hi) - 1) : frac_cap;
        if (pos_lo <= pos_hi) alts.push_back(integer_range(int64_t(pos_lo), int64_t(pos_hi)) + frac);
        // -I.f lies in (-(I+1), -I]: -I <= hi_int and -(I+1) >= lo.
        const double neg_lo = std::max(0.0, -hi_int);
        const double neg_hi = b.has_lo ? std::min(frac_cap, std::floor(-b.lo) - 1) : frac_cap;
        if (neg_lo <= neg_hi) alts.push_back("\"-\" " + integer_range(int64_t(neg_lo), int64_t(neg_hi)) + frac);
    }
    std::string out;
    for (const auto& x : alts) out += (out.empty() ? "" : " | ") + x;
    return out.empty() ? "" : "( " + out + " )";
}

std::string format_regex(const std::string& format) {
    const std::string hour = "([01][0-9]|2[0-3])", minsec = "[0-5][0-9]";
    // days valid in every year (no 29 February, so no leap-year rule is needed)
    const std::string date =
        "[1-9][0-9]{3}-((0[13578]|1[02])-(0[1-9]|[12][0-9]|3[01])|(0[469]|11)-(0[1-9]|[12][0-9]|30)|"
        "02-(0[1-9]|1[0-9]|2[0-8]))";
    const std::string time = fmt::format("{0}:{1}:{1}(\\.[0-9]{{1,6}})?(Z|[+-]{0}:{1})", hour, minsec);
    if (format == "date") return date;
    if (format == "time") return time;
    if (format == "date-time") return fmt::format("{}T{}", date, time);
    if (format == "uuid") return "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}";
    if (format == "email") return "[a-zA-Z0-9_+-]{1,32}(\\.[a-zA-Z0-9_+-]{1,32})?@[a-z0-9]{1,32}(\\.[a-z0-9]{1,32}){1,3}";
    if (format == "ipv4") {
        const std::string octet = "(25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9][0-9]|[0-9])";
        return fmt::format("{0}\\.{0}\\.{0}\\.{0}", octet);
    }
    return "";
}

std::string json_string_char(const std::vector<CodeRange>& ranges) {
    std::string cls;
    std::vector<std::string> alts;
    auto has = [&](uint32_t cp) {
        return std::any_of(ranges.begin(), ranges.end(), [&](const CodeRange& r) { return r.lo <= cp && cp <= r.hi; });
    };
    for (const auto& [cp, esc] : std::vector<std::pair<uint32_t, const char*>>{
             {'"', "\"\\\\\\\"\""}, {'\\', "\"\\\\\\\\\""}, {'\n', "\"\\\\n\""}, {'\r', "\"\\\\r\""}, {'\t', "\"\\\\t\""}})
        if (has(cp)) alts.push_back(esc);
    for (CodeRange r : ranges) {
        // raw: >= 0x20, minus '"' and '\\' (and surrogates, which utf8 classes never produce)
        r.lo = std::max<uint32_t>(r.lo, 0x20);
        if (r.lo > r.hi) continue;
        std::vector<CodeRange> parts{r};
        for (uint32_t cut : {uint32_t('"'), uint32_t('\\')}) {
            std::vector<CodeRange> next;
            for (const auto& p : parts) {
                if (cut < p.lo || cut > p.hi) {
                    next.push_back(p);
                    continue;
                }
                if (p.lo < cut) next.push_back({p.lo, cut - 1});
                if (cut < p.hi) next.push_back({cut + 1, p.hi});
            }
            parts = next;
        }
        for (const auto& p : parts) {
            if (p.lo >= 0xD800 && p.hi <= 0xDFFF) continue;
            cls += p.lo == p.hi ? fmt::format("\\U{:08X}", p.lo) : fmt::format("\\U{:08X}-\\U{:08X}", p.lo, p.hi);
        }
    }
    if (!cls.empty()) alts.insert(alts.begin(), "[" + cls + "]");
    if (alts.empty()) return "";
    if (alts.size() == 1) return alts[0];
    std::string out;
    for (const auto& x : alts) out += (out.empty() ? "" : " | ") + x;
    return "( " + out + " )";
}

}  // namespace duet::model::grammar
