#include "model/grammar/regex_to_grammar.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "core/error.h"
#include "model/grammar/grammar.h"
#include "model/grammar/json_schema_values.h"
#include "model/grammar/utf8_ranges.h"

namespace duet::model::grammar {
namespace {

constexpr int kMaxCount = int(Grammar::kMaxCount);  // as the grammar format's {m,n}

using Ranges = std::vector<CodeRange>;

// printable ASCII minus the ranges: the negation of an ASCII shorthand class
Ranges ascii_complement(const Ranges& r) {
    Ranges out;
    for (const auto& c : complement(r))
        if (c.lo <= 0x7E && c.hi >= 0x20) out.push_back({std::max<uint32_t>(c.lo, 0x20), std::min<uint32_t>(c.hi, 0x7E)});
    return out;
}

class RegexCompiler {
public:
    RegexCompiler(std::string_view p, const std::string& where, int max_depth, bool ticks)
        : p_(p), where_(where), max_depth_(max_depth), ticks_(ticks) {}

    std::string run() {
        if (peek('^')) ++i_;
        std::string e = alternation();
        if (i_ < p_.size()) error("unmatched ')'");
        return e;
    }

private:
    std::string_view p_;
    std::string where_;
    int max_depth_;
    bool ticks_;
    int depth_ = 0;
    size_t i_ = 0;

    [[noreturn]] void error(const std::string& what) const {
        fail("{}pattern: {} at offset {} (supported: literals, . [classes] \\d \\w \\s, groups, |, * + ? {{m,n}}, "
             "^ at the start and $ at the end)",
             where_, what, i_);
    }
    bool peek(char c) const { return i_ < p_.size() && p_[i_] == c; }

    std::string alternation() {
        std::vector<std::string> alts{sequence()};
        while (peek('|')) {
            ++i_;
            if (peek('^')) {
                if (depth_ > 0) error("'^' inside a group");
                ++i_;
            }
            alts.push_back(sequence());
        }
        if (alts.size() == 1) return alts[0];
        std::string out;
        for (const auto& a : alts) out += (out.empty() ? "" : " | ") + a;
        return "( " + out + " )";
    }

    // True when only ')' characters follow position i (so a '$' there ends every match).
    bool only_closers_after(size_t i) const {
        for (size_t j = i; j < p_.size(); ++j)
            if (p_[j] != ')') return false;
        return true;
    }

    std::string sequence() {
        std::string out;
        while (i_ < p_.size() && p_[i_] != '|' && p_[i_] != ')') {
            if (p_[i_] == '$') {
                if (!(only_closers_after(i_ + 1) || (depth_ == 0 && i_ + 1 < p_.size() && p_[i_ + 1] == '|')))
                    error("'$' before the end of the pattern");
                ++i_;
                continue;
            }
            std::string a = quantified(atom());
            out += (out.empty() ? "" : " ") + a;
        }
        return out.empty() ? "\"\"" : "( " + out + " )";
    }

    std::string atom() {
        const char c = p_[i_];
        if (c == '(') {
            if (++depth_ > max_depth_) error(fmt::format("groups nest deeper than {} levels", max_depth_));
            ++i_;
            if (peek('?')) {
                const std::string_view rest = p_.substr(i_);
                if (rest.substr(0, 2) == "?:") {
                    i_ += 2;
                } else if (rest.substr(0, 2) == "?<" && rest.substr(0, 3) != "?<=" && rest.substr(0, 3) != "?<!") {
                    i_ = p_.find('>', i_);
                    if (i_ == std::string_view::npos) i_ = p_.size(), error("unterminated group name");
                    ++i_;
                } else if (rest.substr(0, 3) == "?P<") {
                    i_ = p_.find('>', i_);
                    if (i_ == std::string_view::npos) i_ = p_.size(), error("unterminated group name");
                    ++i_;
                } else {
                    error("lookaround, inline flags and other (? groups are not supported");
                }
            }
            std::string e = alternation();
            if (!peek(')')) error("missing ')'");
            ++i_;
            --depth_;
            return e;
        }
        if (c == '[') return chars(char_class());
        if (c == '.') {
            ++i_;
            return chars({{0, 0x09}, {0x0B, 0x0C}, {0x0E, 0x2027}, {0x202A, kMaxCodePoint}});
        }
        if (c == '\\') {
            ++i_;
            Ranges r;
            if (shorthand(r)) return chars(r);
            const uint32_t cp = escaped_literal();
            return chars({{cp, cp}});
        }
        if (c == '^') error("'^' after the start of the pattern");
        if (c == '*' || c == '+' || c == '?' || c == '{') error(fmt::format("'{}' with nothing to repeat", c));
        size_t len = 0;
        const uint32_t cp = utf8_decode(p_.substr(i_), len);
        i_ += len;
        return chars({{cp, cp}});
    }

    std::string chars(const Ranges& r) {
        const std::string e = json_string_char(r);
        if (e.empty()) error("a character set with no character a JSON string can hold");
        return ticks_ ? "( " + e + " @tick )" : e;
    }

    // \d \w \s and negations (after the backslash); false for anything else.
    bool shorthand(Ranges& r) {
        if (i_ >= p_.size()) error("pattern ends with '\\'");
        const Ranges digit{{'0', '9'}}, word{{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}},
            space{{'\t', '\r'}, {' ', ' '}};
        switch (p_[i_]) {
            case 'd': r = digit; break;
            case 'w': r = word; break;
            case 's': r = space; break;
            case 'D': r = ascii_complement(digit); break;
            case 'W': r = ascii_complement(word); break;
            case 'S': r = ascii_complement(space); break;
            default: return false;
        }
        ++i_;
        return true;
    }

    uint32_t hex(int n) {
        uint32_t v = 0;
        for (int k = 0; k < n; ++k, ++i_) {
            if (i_ >= p_.size() || !std::isxdigit(uint8_t(p_[i_]))) error(fmt::format("escape needs {} hex digits", n));
            const char h = char(std::tolower(p_[i_]));
            v = v * 16 + uint32_t(h <= '9' ? h - '0' : h - 'a' + 10);
        }
        return v;
    }

    // The character of an escape (after the backslash), not a shorthand class.
    uint32_t escaped_literal() {
        const char e = p_[i_++];
        switch (e) {
            case 'n': return '\n';
            case 'r': return '\r';
            case 't': return '\t';
            case 'f': return '\f';
            case 'v': return '\v';
            case 'x': return hex(2);
            case 'u': {
                const uint32_t cp = hex(4);
                if (cp >= 0xD800 && cp <= 0xDFFF) error("a surrogate \\u escape");
                return cp;
            }
            default:
                if (std::isalnum(uint8_t(e))) --i_, error(fmt::format("escape '\\{}' is not supported", e));
                return uint8_t(e);  // escaped punctuation is itself
        }
    }

    Ranges char_class() {
        ++i_;  // '['
        const bool negate = peek('^');
        if (negate) ++i_;
        Ranges r;
        bool has_shorthand = false;
        bool first = true;
        while (i_ < p_.size() && (p_[i_] != ']' || first)) {
            first = false;
            uint32_t lo;
            if (p_[i_] == '\\') {
                ++i_;
                Ranges sh;
                if (shorthand(sh)) {
                    r.insert(r.end(), sh.begin(), sh.end());
                    has_shorthand = true;
                    continue;
                }
                lo = escaped_literal();
            } else {
                size_t len = 0;
                lo = utf8_decode(p_.substr(i_), len);
                i_ += len;
            }
            uint32_t hi = lo;
            if (i_ + 1 < p_.size() && p_[i_] == '-' && p_[i_ + 1] != ']') {
                ++i_;
                if (p_[i_] == '\\') {
                    ++i_;
                    hi = escaped_literal();
                } else {
                    size_t len = 0;
                    hi = utf8_decode(p_.substr(i_), len);
                    i_ += len;
                }
                if (hi < lo) error("a reversed character range");
            }
            r.push_back({lo, hi});
        }
        if (!peek(']')) error("missing ']'");
        ++i_;
        if (!negate) return r;
        // a negated shorthand is Unicode-aware in the validators: stay within printable ASCII
        return has_shorthand ? ascii_complement(r) : complement(r);
    }

    int count() {
        const size_t b = i_;
        while (i_ < p_.size() && std::isdigit(uint8_t(p_[i_])) && i_ - b < 8) ++i_;
        if (b == i_) error("expected a number in {m,n}");
        const int v = std::stoi(std::string(p_.substr(b, i_ - b)));
        if (v > kMaxCount) error(fmt::format("repeat count {} is too large (allowed: up to {})", v, kMaxCount));
        return v;
    }

    std::string quantified(std::string a) {
        if (i_ >= p_.size()) return a;
        const char c = p_[i_];
        std::string q;
        if (c == '*' || c == '+' || c == '?') {
            q = std::string(1, c);
            ++i_;
        } else if (c == '{') {
            ++i_;
            const int lo = count();
            int hi = lo;
            if (peek(',')) {
                ++i_;
                hi = peek('}') ? -1 : count();
            }
            if (!peek('}')) error("missing '}' in {m,n}");
            ++i_;
            if (hi >= 0 && hi < lo) error(fmt::format("repeat {{{},{}}} has max below min", lo, hi));
            q = hi < 0 ? fmt::format("{{{},}}", lo) : lo == hi ? fmt::format("{{{}}}", lo) : fmt::format("{{{},{}}}", lo, hi);
        } else {
            return a;
        }
        if (peek('?')) ++i_;  // lazy: the same set of matches
        if (i_ < p_.size() && (p_[i_] == '*' || p_[i_] == '+' || p_[i_] == '?' || p_[i_] == '{'))
            error("a repeated repetition");
        return "( " + a + " )" + q;
    }
};

}  // namespace

std::string regex_to_grammar(std::string_view pattern, const std::string& where, int max_depth, bool ticks) {
    return RegexCompiler(pattern, where, max_depth, ticks).run();
}

}  // namespace duet::model::grammar
