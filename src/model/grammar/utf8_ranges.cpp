#include "model/grammar/utf8_ranges.h"

#include <algorithm>

namespace duet::model::grammar {

std::string utf8_encode(uint32_t cp) {
    std::string s;
    if (cp < 0x80) {
        s += char(cp);
    } else if (cp < 0x800) {
        s += char(0xC0 | (cp >> 6));
        s += char(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        s += char(0xE0 | (cp >> 12));
        s += char(0x80 | ((cp >> 6) & 0x3F));
        s += char(0x80 | (cp & 0x3F));
    } else {
        s += char(0xF0 | (cp >> 18));
        s += char(0x80 | ((cp >> 12) & 0x3F));
        s += char(0x80 | ((cp >> 6) & 0x3F));
        s += char(0x80 | (cp & 0x3F));
    }
    return s;
}

uint32_t utf8_decode(std::string_view s, size_t& len) {
    const uint8_t b0 = uint8_t(s[0]);
    const int n = b0 < 0x80 ? 1 : (b0 >> 5) == 6 ? 2 : (b0 >> 4) == 14 ? 3 : (b0 >> 3) == 30 ? 4 : 0;
    if (n <= 1 || size_t(n) > s.size()) {
        len = 1;
        return b0;
    }
    uint32_t cp = b0 & (0x7F >> n);
    for (int i = 1; i < n; ++i) {
        const uint8_t b = uint8_t(s[size_t(i)]);
        if ((b & 0xC0) != 0x80) {
            len = 1;
            return b0;
        }
        cp = (cp << 6) | (b & 0x3F);
    }
    len = size_t(n);
    return cp;
}

std::vector<CodeRange> complement(std::vector<CodeRange> ranges) {
    ranges.push_back({0xD800, 0xDFFF});
    std::sort(ranges.begin(), ranges.end(), [](const CodeRange& a, const CodeRange& b) { return a.lo < b.lo; });
    std::vector<CodeRange> out;
    uint32_t next = 0;  // first code point not yet covered
    for (const auto& r : ranges) {
        if (r.lo > next) out.push_back({next, r.lo - 1});
        next = std::max(next, r.hi + 1);
    }
    if (next <= kMaxCodePoint) out.push_back({next, kMaxCodePoint});
    return out;
}

namespace {

constexpr uint32_t kLenMax[] = {0x7F, 0x7FF, 0xFFFF, kMaxCodePoint};

void split(uint32_t lo, uint32_t hi, std::vector<std::vector<ByteRange>>& out) {
    if (lo > hi) return;
    // Remove surrogates.
    if (lo <= 0xDFFF && hi >= 0xD800) {
        if (lo < 0xD800) split(lo, 0xD7FF, out);
        if (hi > 0xDFFF) split(0xE000, hi, out);
        return;
    }
    // One encoded length per range.
    for (uint32_t b : kLenMax)
        if (lo <= b && b < hi) {
            split(lo, b, out);
            split(b + 1, hi, out);
            return;
        }
    if (hi <= 0x7F) {
        out.push_back({{lo, hi}});
        return;
    }
    // Split until every continuation byte position spans a full or aligned range.
    const int n = lo <= 0x7FF ? 2 : lo <= 0xFFFF ? 3 : 4;
    for (int i = 1; i < n; ++i) {
        const uint32_t m = (1u << (6 * i)) - 1;
        if ((lo & ~m) != (hi & ~m)) {
            if ((lo & m) != 0) {
                split(lo, lo | m, out);
                split((lo | m) + 1, hi, out);
                return;
            }
            if ((hi & m) != m) {
                split(lo, (hi & ~m) - 1, out);
                split(hi & ~m, hi, out);
                return;
            }
        }
    }
    const std::string a = utf8_encode(lo), b = utf8_encode(hi);
    std::vector<ByteRange> seq;
    for (size_t i = 0; i < a.size(); ++i) seq.push_back({uint8_t(a[i]), uint8_t(b[i])});
    out.push_back(std::move(seq));
}

}  // namespace

void utf8_sequences(CodeRange r, std::vector<std::vector<ByteRange>>& out) { split(r.lo, r.hi, out); }

}  // namespace duet::model::grammar
