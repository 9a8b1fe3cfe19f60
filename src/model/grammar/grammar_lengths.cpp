#include "model/grammar/grammar_lengths.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <queue>

#include "core/error.h"

namespace duet::model::grammar {
namespace {

constexpr uint64_t kBig = uint64_t(1) << 40;  // "no limit" while summing tick counts

uint64_t sat_add(uint64_t a, uint64_t b) { return std::min(a + b, kBig); }
uint64_t sat_mul(uint64_t a, uint64_t b) { return a == 0 || b == 0 ? 0 : a >= kBig / b ? kBig : a * b; }

// The rules the bodies of @len elements reach (through rules, repeats and nested @len).
std::vector<uint32_t> count_reach(const Grammar& g) {
    std::vector<bool> seen(g.rules.size(), false);
    std::vector<uint32_t> order, work;
    for (const Element& e : g.elems)
        if (e.kind == Element::COUNT && !seen[e.index]) seen[e.index] = true, work.push_back(e.index);
    while (!work.empty()) {
        const uint32_t r = work.back();
        work.pop_back();
        order.push_back(r);
        for (uint32_t start : g.rules[r])
            for (const Element* e = &g.elems[start]; e->kind != Element::END; ++e)
                if ((e->kind == Element::RULE || e->kind == Element::REPEAT || e->kind == Element::COUNT) &&
                    !seen[e->index])
                    seen[e->index] = true, work.push_back(e->index);
    }
    return order;
}

std::string count_text(const Element& e) {
    return e.hi == Grammar::kUnbounded ? fmt::format("@len{{{},}}", e.lo) : fmt::format("@len{{{},{}}}", e.lo, e.hi);
}

[[noreturn]] void count_error(const Grammar& g, size_t elem, const std::string& source, const std::string& why) {
    std::string rule = "?";
    for (size_t r = 0; r < g.rules.size(); ++r)
        for (uint32_t start : g.rules[r]) {
            size_t end = start;
            while (g.elems[end].kind != Element::END) ++end;
            if (start <= elem && elem < end) rule = g.rule_names[r];
        }
    fail("{}: rule '{}': {}: {}", source, rule, count_text(g.elems[elem]), why);
}

}  // namespace

std::vector<uint64_t> rule_minimum(const Grammar& g, Measure m) {
    constexpr uint64_t kInf = Grammar::kNoEnd;
    struct Alt {
        uint32_t rule, pending = 0;
        uint64_t cost = 0;
    };
    std::vector<Alt> alts;
    // rule -> uses: the alternative naming it, times (a repeat's minimum count), and at least
    // (a @len's minimum: a byte per tick), once per use
    struct Use {
        uint32_t alt, times, floor;
    };
    std::vector<std::vector<Use>> uses(g.rules.size());
    using Item = std::pair<uint64_t, uint32_t>;  // (cost, rule)
    std::priority_queue<Item, std::vector<Item>, std::greater<Item>> queue;
    for (size_t r = 0; r < g.rules.size(); ++r)
        for (uint32_t start : g.rules[r]) {
            Alt a{uint32_t(r)};
            auto use = [&](uint32_t rule, uint32_t times, uint32_t floor = 0) {
                ++a.pending;
                uses[rule].push_back({uint32_t(alts.size()), times, floor});
            };
            for (const Element* e = &g.elems[start]; e->kind != Element::END; ++e) {
                switch (e->kind) {
                    case Element::BYTES: a.cost += m == Measure::BYTES; break;
                    case Element::TICK: a.cost += m == Measure::TICKS; break;
                    case Element::RULE: use(e->index, 1); break;
                    case Element::REPEAT: if (e->lo > 0) use(e->index, e->lo); break;
                    case Element::COUNT: if (m == Measure::BYTES) use(e->index, 1, e->lo); break;
                    case Element::END: break;
                }
            }
            if (a.pending == 0) queue.push({a.cost, a.rule});
            alts.push_back(a);
        }
    std::vector<uint64_t> best(g.rules.size(), kInf);
    while (!queue.empty()) {
        const auto [cost, r] = queue.top();
        queue.pop();
        if (best[r] != kInf) continue;
        best[r] = cost;
        for (const auto& [ai, times, floor] : uses[r]) {
            Alt& a = alts[ai];
            a.cost = std::min(a.cost + std::max<uint64_t>(cost * times, floor), kInf - 1);  // finite stays below kNoEnd
            if (--a.pending == 0) queue.push({a.cost, a.rule});
        }
    }
    return best;
}

void analyse_lengths(Grammar& g, const std::string& source) {
    const size_t n_elems = g.elems.size();
    g.min_ticks.assign(n_elems, 0);
    g.max_ticks.assign(n_elems, 0);
    g.rule_min_ticks.assign(g.rules.size(), 0);
    g.rule_max_ticks.assign(g.rules.size(), 0);
    const std::vector<uint32_t> reach = count_reach(g);
    if (reach.empty()) return;
    g.has_counts = true;
    const std::vector<uint64_t> lo = rule_minimum(g, Measure::TICKS);
    auto finishable = [&](const Element& e) {
        return e.kind == Element::BYTES || e.kind == Element::TICK ||
               (e.kind == Element::REPEAT && e.lo == 0) || g.rule_min_bytes[e.index] != Grammar::kNoEnd;
    };
    auto alt_ok = [&](uint32_t start) {
        for (const Element* e = &g.elems[start]; e->kind != Element::END; ++e)
            if (!finishable(*e)) return false;
        return true;
    };
    // Most ticks per rule: longest paths (Bellman-Ford) over the reached rules; a rule still
    // growing after |reach| rounds lies on or after a cycle that adds ticks: no limit.
    std::vector<uint64_t> hi(g.rules.size(), 0);
    auto elem_max = [&](const Element& e) -> uint64_t {
        switch (e.kind) {
            case Element::TICK: return 1;
            case Element::RULE: return hi[e.index];
            case Element::REPEAT:
                return e.hi == Grammar::kUnbounded ? (hi[e.index] > 0 ? kBig : 0) : sat_mul(hi[e.index], e.hi);
            default: return 0;  // bytes; a nested @len's ticks are its own
        }
    };
    auto elem_min = [&](const Element& e) -> uint64_t {
        switch (e.kind) {
            case Element::TICK: return 1;
            case Element::RULE: return lo[e.index];
            case Element::REPEAT: return sat_mul(lo[e.index], e.lo);
            default: return 0;
        }
    };
    auto alt_sum = [&](uint32_t start, const std::function<uint64_t(const Element&)>& f) {
        uint64_t sum = 0;
        for (const Element* e = &g.elems[start]; e->kind != Element::END; ++e) sum = sat_add(sum, f(*e));
        return sum;
    };
    for (size_t round = 0; round < 2 * reach.size() + 1; ++round) {
        bool changed = false;
        for (uint32_t r : reach) {
            uint64_t v = 0;
            for (uint32_t start : g.rules[r])
                if (alt_ok(start)) v = std::max(v, alt_sum(start, elem_max));
            if (v > hi[r]) hi[r] = round >= reach.size() ? kBig : v, changed = true;
        }
        if (!changed) break;
    }
    // Gap-free: every rule's count set is an interval, from any position inside it (a repeat
    // of something taking 2 or more ticks skips counts unless its count is fixed).
    std::vector<bool> gap_free(g.rules.size(), true);
    for (bool changed = true; changed;) {
        changed = false;
        for (uint32_t r : reach) {
            if (!gap_free[r]) continue;
            std::vector<std::pair<uint64_t, uint64_t>> spans;
            bool ok = true;
            for (uint32_t start : g.rules[r]) {
                if (!alt_ok(start)) continue;
                for (const Element* e = &g.elems[start]; e->kind != Element::END; ++e)
                    if ((e->kind == Element::RULE && !gap_free[e->index]) ||
                        (e->kind == Element::REPEAT && (!gap_free[e->index] || (lo[e->index] > 1 && e->lo != e->hi))))
                        ok = false;
                spans.push_back({alt_sum(start, elem_min), alt_sum(start, elem_max)});
            }
            std::sort(spans.begin(), spans.end());
            for (size_t i = 1; i < spans.size() && ok; ++i) {
                if (spans[i].first > spans[i - 1].second + 1) ok = false;
                spans[i].second = std::max(spans[i].second, spans[i - 1].second);
            }
            if (!ok) gap_free[r] = false, changed = true;
        }
    }
    auto to32 = [](uint64_t v) { return v >= kBig ? Grammar::kUnbounded : uint32_t(std::min<uint64_t>(v, Grammar::kUnbounded - 1)); };
    for (uint32_t r : reach) {
        g.rule_min_ticks[r] = to32(lo[r]);
        g.rule_max_ticks[r] = to32(hi[r]);
        for (uint32_t start : g.rules[r]) {
            size_t end = start;
            while (g.elems[end].kind != Element::END) ++end;
            uint64_t mn = 0, mx = 0;
            for (size_t i = end; i-- > start;) {
                mn = sat_add(mn, elem_min(g.elems[i]));
                mx = sat_add(mx, elem_max(g.elems[i]));
                g.min_ticks[i] = to32(mn);
                g.max_ticks[i] = to32(mx);
            }
        }
    }
    for (uint32_t r : reach)  // an empty iteration ends a repeat (matcher.h): it must not hold ticks
        for (uint32_t start : g.rules[r])
            for (const Element* e = &g.elems[start]; e->kind != Element::END; ++e)
                if (e->kind == Element::REPEAT && g.rule_min_bytes[e->index] == 0 && hi[e->index] > 0)
                    fail("{}: rule '{}': a repeat of more than {} of something that can match no byte cannot hold "
                         "@tick (write it with a byte before each @tick)", source, g.rule_names[r], Grammar::kExpandCount);
    for (size_t i = 0; i < n_elems; ++i) {
        const Element& e = g.elems[i];
        if (e.kind != Element::COUNT || g.rule_min_bytes[e.index] == Grammar::kNoEnd) continue;
        const uint64_t top = e.hi == Grammar::kUnbounded ? kBig : e.hi;
        if (lo[e.index] > top || hi[e.index] < e.lo)
            count_error(g, i, source,
                        fmt::format("its body takes {} to {} ticks, none within the bounds", lo[e.index],
                                    hi[e.index] >= kBig ? std::string("any number of") : std::to_string(hi[e.index])));
        if (e.lo > 0 && e.hi != Grammar::kUnbounded && !gap_free[e.index])
            count_error(g, i, source,
                        "with both bounds, its body must take tick counts without gaps from any position (a "
                        "repeated or optional part of 2 or more ticks skips counts)");
    }
}

}  // namespace duet::model::grammar
