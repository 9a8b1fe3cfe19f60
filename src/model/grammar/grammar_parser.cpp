// Grammar::parse: the text format of grammar.h -> rules of byte-set / rule-reference elements.
#include <algorithm>
#include <functional>
#include <limits>
#include <tuple>
#include <unordered_map>

#include "core/error.h"
#include "model/grammar/grammar.h"
#include "model/grammar/grammar_lengths.h"
#include "model/grammar/utf8_ranges.h"

namespace duet::model::grammar {
namespace {

using Seq = std::vector<Element>;
using Alts = std::vector<Seq>;

class Parser {
public:
    Parser(std::string_view text, std::string_view source, const GrammarLimits& limits)
        : s_(text), source_(source), limits_(limits) {}

    std::shared_ptr<const Grammar> run() {
        skip_space();
        while (pos_ < s_.size()) {
            const std::string name = identifier();
            if (name.empty()) error(fmt::format("expected a rule name, found '{}'", s_[pos_]));
            skip_space();
            if (s_.substr(pos_, 3) != "::=") error(fmt::format("expected '::=' after rule name '{}'", name));
            pos_ += 3;
            const uint32_t id = rule_id(name);
            if (defined_[id]) error(fmt::format("rule '{}' is defined twice", name));
            defined_[id] = true;
            def_line_[id] = line_;
            rules_[id] = alternatives(name, false);
            skip_space();
        }
        return finish();
    }

private:
    std::string_view s_;
    std::string source_;
    const GrammarLimits& limits_;
    size_t n_elements_ = 0;  // elements built so far (an over-count: transient copies count too)
    int depth_ = 0;          // ( ... ) groups open
    size_t pos_ = 0;
    int line_ = 1;
    std::vector<std::string> names_;
    std::vector<Alts> rules_;
    std::vector<bool> defined_;
    std::vector<int> def_line_, use_line_;
    std::unordered_map<std::string, uint32_t> ids_;
    std::vector<std::bitset<256>> sets_;
    std::unordered_map<std::bitset<256>, uint32_t> set_ids_;
    std::unordered_map<std::string, int> helper_count_;

    [[noreturn]] void error(const std::string& what) const { fail("{}: line {}: {}", source_, line_, what); }

    // Charges n elements to the budget (and polls the cancel callback).
    void charge(size_t n) {
        n_elements_ += n;
        if (n_elements_ > limits_.max_elements)
            error(fmt::format("the grammar expands to more than {} elements (the limit on grammar size)",
                              limits_.max_elements));
    }
    uint32_t rule_id(const std::string& name) {
        auto [it, fresh] = ids_.try_emplace(name, uint32_t(names_.size()));
        if (fresh) {
            if (names_.size() >= limits_.max_rules)
                error(fmt::format("the grammar has more than {} rules (the limit on grammar rules)", limits_.max_rules));
            if (limits_.cancelled && limits_.cancelled()) throw GrammarCancelled(source_ + ": grammar parsing cancelled");
            names_.push_back(name);
            rules_.emplace_back();
            defined_.push_back(false);
            def_line_.push_back(0);
            use_line_.push_back(line_);
        }
        return it->second;
    }
    uint32_t helper(const std::string& base, Alts alts) {
        const std::string name = fmt::format("{}_{}", base, ++helper_count_[base]);
        const uint32_t id = rule_id(name);
        defined_[id] = true;
        rules_[id] = std::move(alts);
        return id;
    }
    Element bytes(const std::bitset<256>& set) {
        auto [it, fresh] = set_ids_.try_emplace(set, uint32_t(sets_.size()));
        if (fresh) sets_.push_back(set);
        return {Element::BYTES, it->second};
    }

    void skip_space() {
        while (pos_ < s_.size()) {
            const char c = s_[pos_];
            if (c == '#') {
                while (pos_ < s_.size() && s_[pos_] != '\n') ++pos_;
            } else if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
                if (c == '\n') ++line_;
                ++pos_;
            } else {
                break;
            }
        }
    }
    static bool ident_char(char c) { return std::isalnum(uint8_t(c)) || c == '_' || c == '-'; }
    std::string identifier() {
        const size_t b = pos_;
        while (pos_ < s_.size() && ident_char(s_[pos_])) ++pos_;
        return std::string(s_.substr(b, pos_ - b));
    }
    // True when an identifier followed by ::= starts at pos_ (the next rule's definition).
    bool at_definition() const {
        size_t p = pos_;
        while (p < s_.size() && ident_char(s_[p])) ++p;
        if (p == pos_) return false;
        while (p < s_.size() && (s_[p] == ' ' || s_[p] == '\t')) ++p;
        return s_.substr(p, 3) == "::=";
    }

    Alts alternatives(const std::string& rule, bool nested) {
        Alts alts;
        alts.push_back(sequence(rule, nested));
        while (pos_ < s_.size() && s_[pos_] == '|') {
            ++pos_;
            alts.push_back(sequence(rule, nested));
        }
        return alts;
    }

    Seq sequence(const std::string& rule, bool nested) {
        Seq seq;
        for (;;) {
            skip_space();
            if (pos_ >= s_.size() || s_[pos_] == '|' || s_[pos_] == ')') break;
            if (at_definition()) {
                if (nested) error("missing ')' before the next rule");
                break;
            }
            Seq item = primary(rule);
            postfix(rule, item);
            charge(item.size());
            seq.insert(seq.end(), item.begin(), item.end());
        }
        return seq;
    }

    Seq primary(const std::string& rule) {
        const char c = s_[pos_];
        if (c == '"') {
            ++pos_;
            Seq seq;
            while (pos_ < s_.size() && s_[pos_] != '"') {
                std::bitset<256> one;
                for (uint8_t b : utf8_encode(escaped_char("literal"))) {
                    one.reset();
                    one.set(b);
                    seq.push_back(bytes(one));
                }
            }
            if (pos_ >= s_.size()) error("unterminated literal (missing '\"')");
            ++pos_;
            return seq;
        }
        if (c == '[') return char_class(rule);
        if (c == '.') {
            ++pos_;
            return class_elements(rule, {{0, kMaxCodePoint}});
        }
        if (c == '(') {
            if (++depth_ > limits_.max_depth)
                error(fmt::format("groups nest deeper than {} levels (the limit on grammar nesting)", limits_.max_depth));
            ++pos_;
            Alts alts = alternatives(rule, true);
            if (pos_ >= s_.size() || s_[pos_] != ')') error("missing ')'");
            ++pos_;
            --depth_;
            if (alts.size() == 1) return alts[0];
            return {{Element::RULE, helper(rule, std::move(alts))}};
        }
        if (c == '@') return counted(rule);
        const std::string name = identifier();
        if (name.empty()) error(fmt::format("unexpected '{}'", c));
        const uint32_t id = rule_id(name);
        if (!defined_[id] && use_line_[id] == 0) use_line_[id] = line_;
        return {{Element::RULE, id}};
    }

    // @tick, or @len{m,n}( alternatives ) (grammar.h)
    Seq counted(const std::string& rule) {
        ++pos_;  // '@'
        const std::string what = identifier();
        if (what == "tick") return {{Element::TICK}};
        if (what != "len") error(fmt::format("unknown '@{}' (allowed: @len{{m,n}}( ... ), @tick)", what));
        if (pos_ >= s_.size() || s_[pos_] != '{') error("expected '{' after @len");
        const auto [lo, hi] = bounds("@len", "@len");
        skip_space();
        if (pos_ >= s_.size() || s_[pos_] != '(') error("expected '(' after @len{m,n}");
        Seq body = primary(rule);
        const uint32_t id = body.size() == 1 && body[0].kind == Element::RULE ? body[0].index : helper(rule, {body});
        return {{Element::COUNT, id, uint32_t(lo), hi < 0 ? Grammar::kUnbounded : uint32_t(hi)}};
    }

    uint32_t escaped_char(const char* what) {
        if (pos_ >= s_.size()) error(fmt::format("unterminated {}", what));
        if (s_[pos_] != '\\') {
            size_t len = 0;
            const uint32_t cp = utf8_decode(s_.substr(pos_), len);
            if (s_[pos_] == '\n') ++line_;
            pos_ += len;
            return cp;
        }
        if (++pos_ >= s_.size()) error(fmt::format("unterminated {}", what));
        const char e = s_[pos_++];
        switch (e) {
            case 'n': return '\n';
            case 'r': return '\r';
            case 't': return '\t';
            case 'x': return hex(2);
            case 'u': return hex(4);
            case 'U': return hex(8);
            case '\\': case '"': case '[': case ']': case '-': case '^': case '/': case '\'': return uint32_t(e);
            default: error(fmt::format("unknown escape '\\{}' (allowed: \\n \\r \\t \\xHH \\uHHHH \\\\ \\\" \\] \\-)", e));
        }
    }
    uint32_t hex(int n) {
        uint32_t v = 0;
        for (int i = 0; i < n; ++i, ++pos_) {
            if (pos_ >= s_.size() || !std::isxdigit(uint8_t(s_[pos_])))
                error(fmt::format("escape needs {} hex digits", n));
            const char h = char(std::tolower(s_[pos_]));
            v = v * 16 + uint32_t(h <= '9' ? h - '0' : h - 'a' + 10);
        }
        if (v > kMaxCodePoint) error(fmt::format("code point {:#x} is out of range (allowed: up to 0x10FFFF)", v));
        return v;
    }

    Seq char_class(const std::string& rule) {
        ++pos_;  // '['
        const bool negate = pos_ < s_.size() && s_[pos_] == '^';
        if (negate) ++pos_;
        std::vector<CodeRange> ranges;
        while (pos_ < s_.size() && s_[pos_] != ']') {
            const uint32_t lo = escaped_char("character class");
            uint32_t hi = lo;
            if (pos_ + 1 < s_.size() && s_[pos_] == '-' && s_[pos_ + 1] != ']') {
                ++pos_;
                hi = escaped_char("character class");
                if (hi < lo) error(fmt::format("character range {:#x}-{:#x} is reversed", lo, hi));
            }
            ranges.push_back({lo, hi});
        }
        if (pos_ >= s_.size()) error("unterminated character class (missing ']')");
        ++pos_;
        if (negate) ranges = complement(ranges);
        if (ranges.empty()) error("character class matches nothing");
        return class_elements(rule, ranges);
    }

    // One element: a byte set when every code point is ASCII, else a helper rule whose
    // alternatives are the UTF-8 byte-range sequences of the class.
    Seq class_elements(const std::string& rule, const std::vector<CodeRange>& ranges) {
        std::vector<std::vector<ByteRange>> seqs;
        for (const auto& r : ranges) utf8_sequences(r, seqs);
        std::bitset<256> ascii;
        Alts alts;
        for (const auto& seq : seqs) {
            if (seq.size() == 1 && seq[0].hi < 0x80) {
                for (uint32_t b = seq[0].lo; b <= seq[0].hi; ++b) ascii.set(b);
                continue;
            }
            Seq s;
            for (const auto& br : seq) {
                std::bitset<256> set;
                for (uint32_t b = br.lo; b <= br.hi; ++b) set.set(b);
                s.push_back(bytes(set));
            }
            alts.push_back(std::move(s));
        }
        if (alts.empty()) return {bytes(ascii)};
        if (ascii.any()) alts.insert(alts.begin(), Seq{bytes(ascii)});
        return {{Element::RULE, helper(rule, std::move(alts))}};
    }

    int count() {
        const size_t b = pos_;
        while (pos_ < s_.size() && std::isdigit(uint8_t(s_[pos_]))) ++pos_;
        if (b == pos_) error("expected a number in {m,n}");
        if (pos_ - b > 7 || std::stol(std::string(s_.substr(b, pos_ - b))) > long(Grammar::kMaxCount))
            error(fmt::format("repeat count {} is too large (allowed: up to {})", s_.substr(b, pos_ - b),
                              Grammar::kMaxCount));
        return int(std::stol(std::string(s_.substr(b, pos_ - b))));
    }

    void postfix(const std::string& rule, Seq& item) {
        if (pos_ >= s_.size()) return;
        const char c = s_[pos_];
        int lo = 0, hi = 0;  // hi < 0: unbounded
        if (c == '*') lo = 0, hi = -1;
        else if (c == '+') lo = 1, hi = -1;
        else if (c == '?') lo = 0, hi = 1;
        else if (c != '{') return;
        if (c == '{') std::tie(lo, hi) = bounds("", "repeat ");
        else ++pos_;
        item = repeat(rule, item, lo, hi);
    }

    // {m}, {m,} or {m,n} at pos_ (on the '{') -> (m, n), n < 0: unbounded. `name` prefixes the
    // construct in the errors ("missing '}' in <name>{m,n}", "<shown>{m,n} has max below min").
    std::pair<int, int> bounds(const char* name, const char* shown) {
        ++pos_;
        const int lo = count();
        int hi = lo;
        if (pos_ < s_.size() && s_[pos_] == ',') {
            ++pos_;
            hi = pos_ < s_.size() && s_[pos_] == '}' ? -1 : count();
        }
        if (pos_ >= s_.size() || s_[pos_] != '}') error(fmt::format("missing '}}' in {}{{m,n}}", name));
        ++pos_;
        if (hi >= 0 && hi < lo) error(fmt::format("{}{{{},{}}} has max below min", shown, lo, hi));
        return {lo, hi};
    }

    Seq repeat(const std::string& rule, const Seq& x, int lo, int hi) {
        if (uint32_t(std::max(lo, hi)) > Grammar::kExpandCount) {  // one counted element, not copies
            charge(x.size());
            const uint32_t body = x.size() == 1 && x[0].kind == Element::RULE ? x[0].index : helper(rule, {x});
            return {{Element::REPEAT, body, uint32_t(lo), hi < 0 ? Grammar::kUnbounded : uint32_t(hi)}};
        }
        // lo copies inline, one per helper rule of the optional part (x{m,}: one)
        charge(x.size() * (size_t(lo) + size_t(hi < 0 ? 1 : hi - lo)));
        Seq out;
        for (int i = 0; i < lo; ++i) out.insert(out.end(), x.begin(), x.end());
        if (hi < 0) {  // R ::= x R | ""
            const uint32_t r = helper(rule, {});
            Seq loop = x;
            loop.push_back({Element::RULE, r});
            rules_[r] = {loop, {}};
            out.push_back({Element::RULE, r});
        } else if (hi > lo) {  // R_1 ::= x | "";  R_k ::= x R_{k-1} | ""
            uint32_t prev = helper(rule, {x, {}});
            for (int k = 2; k <= hi - lo; ++k) {
                Seq more = x;
                more.push_back({Element::RULE, prev});
                prev = helper(rule, {more, {}});
            }
            out.push_back({Element::RULE, prev});
        }
        return out;
    }

    static bool elem_nullable(const Element& e, const std::vector<bool>& nullable) {
        return e.kind == Element::TICK ||
               (e.kind != Element::BYTES && (nullable[e.index] || (e.kind == Element::REPEAT && e.lo == 0)));
    }

    // rule_min: the fewest bytes each rule can match (rule_min_bytes); 0 means nullable.
    void check_left_recursion(const std::vector<uint64_t>& rule_min) const {
        const size_t n = rules_.size();
        std::vector<bool> nullable(n, false);
        for (size_t r = 0; r < n; ++r) nullable[r] = rule_min[r] == 0;
        // Depth-first over "may start with" edges, with an explicit stack (a chain of rules as
        // long as the rule limit must not overflow the call stack).
        std::vector<int> state(n, 0);  // 0 new, 1 on the DFS path, 2 done
        struct Frame {
            size_t rule, alt = 0, elem = 0;
        };
        for (size_t start = 0; start < n; ++start) {
            if (state[start] != 0) continue;
            std::vector<Frame> stack{{start}};
            state[start] = 1;
            while (!stack.empty()) {
                Frame& f = stack.back();
                const Alts& alts = rules_[f.rule];
                if (f.alt >= alts.size()) {
                    state[f.rule] = 2;
                    stack.pop_back();
                    continue;
                }
                const Seq& alt = alts[f.alt];
                // the next element that may start this alternative, if any (a rule, or a repeat's body)
                if (f.elem >= alt.size() || alt[f.elem].kind == Element::BYTES ||
                    (f.elem > 0 && !elem_nullable(alt[f.elem - 1], nullable))) {
                    ++f.alt, f.elem = 0;
                    continue;
                }
                if (alt[f.elem].kind == Element::TICK) {  // no byte and no rule: look past it
                    ++f.elem;
                    continue;
                }
                const size_t r = alt[f.elem++].index;
                if (state[r] == 1)
                    fail("{}: rule '{}' is left-recursive (it can reach itself before matching any byte)", source_,
                         names_[r]);
                if (state[r] == 0) {
                    state[r] = 1;
                    stack.push_back({r});
                }
            }
        }
    }

    std::shared_ptr<const Grammar> finish() {
        for (size_t r = 0; r < names_.size(); ++r)
            if (!defined_[r]) fail("{}: line {}: rule '{}' is used but not defined", source_, use_line_[r], names_[r]);
        auto root = ids_.find("root");
        if (root == ids_.end()) fail("{}: no rule named 'root' (the start rule)", source_);
        auto g = std::make_shared<Grammar>();
        g->rule_names = names_;
        g->sets = sets_;
        g->root = root->second;
        g->rules.resize(rules_.size());
        for (size_t r = 0; r < rules_.size(); ++r)
            for (const Seq& alt : rules_[r]) {
                g->rules[r].push_back(uint32_t(g->elems.size()));
                g->elems.insert(g->elems.end(), alt.begin(), alt.end());
                g->elems.push_back({Element::END, 0});
            }
        const std::vector<uint64_t> rule_min = rule_minimum(*g, Measure::BYTES);
        check_left_recursion(rule_min);
        g->rule_min_bytes.assign(rule_min.begin(), rule_min.end());
        g->min_bytes.assign(g->elems.size(), 0);
        for (size_t i = g->elems.size(); i-- > 0;) {
            const Element& e = g->elems[i];
            if (e.kind == Element::END) continue;
            g->has_repeats = g->has_repeats || e.kind == Element::REPEAT;
            const uint64_t own = e.kind == Element::BYTES ? 1
                                 : e.kind == Element::TICK ? 0
                                 : e.kind == Element::COUNT ? std::max<uint64_t>(rule_min[e.index], e.lo)
                                 : e.kind != Element::REPEAT ? rule_min[e.index]
                                 : e.lo == 0               ? 0
                                 : rule_min[e.index] == Grammar::kNoEnd ? Grammar::kNoEnd
                                                                        : rule_min[e.index] * e.lo;
            const uint64_t c = g->min_bytes[i + 1] == Grammar::kNoEnd || own >= Grammar::kNoEnd
                                   ? Grammar::kNoEnd
                                   : std::min<uint64_t>(g->min_bytes[i + 1] + own, Grammar::kNoEnd - 1);
            g->min_bytes[i] = uint32_t(c);
        }
        analyse_lengths(*g, source_);
        return g;
    }
};

}  // namespace

std::shared_ptr<const Grammar> Grammar::parse(std::string_view text, std::string_view source) {
    return parse(text, source, GrammarLimits{});
}

std::shared_ptr<const Grammar> Grammar::parse(std::string_view text, std::string_view source,
                                              const GrammarLimits& limits) {
    return Parser(text, source, limits).run();
}

}  // namespace duet::model::grammar
