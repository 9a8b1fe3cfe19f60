// Pre-tokenizer splits of random strings (letters, digits, CJK, emoji, combining marks, Unicode
// spaces, apostrophes, \r\n) compared with splits computed independently by Python's `regex`
// module (regex.findall with the same three patterns), which tiktoken/Hugging Face semantics
// follow. The cases below were generated once by that script and pasted here.
#include <gtest/gtest.h>

#include "model/tokenizer/bpe_pretokenizer.h"

namespace duet::model {
namespace {

struct Golden {
    const char* pre;
    std::string text;
    std::vector<std::string> pieces;
};

const std::vector<Golden> kGolden = {
    {"llama-bpe", "L{sT\xE2" "\x80" "\xA8" "e(\xD8" "\xB9", {"L", "{sT", "\xE2" "\x80" "\xA8" "e", "(\xD8" "\xB9"}},
    {"llama-bpe", "\xD9" "\xA3" "5\xC3" "\x9F", {"\xD9" "\xA3" "5", "\xC3" "\x9F"}},
    {"llama-bpe", "~'t8", {"~'", "t", "8"}},
    {"llama-bpe", "\x0C" "`S\xD0" "\x96", {"\x0C", "`S\xD0" "\x96"}},
    {"llama-bpe", "6\xD8" "\xB9" "S\xD8" "\xA7", {"6", "\xD8" "\xB9" "S\xD8" "\xA7"}},
    {"llama-bpe", "{s6'\xC3" "\xB1" "M 'l\x0B" "V\xD8" "\xA7", {"{s", "6", "'\xC3" "\xB1" "M", " '", "l", "\x0B" "V\xD8" "\xA7"}},
    {"llama-bpe", "\xC3" "\xB1" "1E\xD8" "\xB9" "\xD8" "\xA7" "2)", {"\xC3" "\xB1", "1", "E\xD8" "\xB9" "\xD8" "\xA7", "2", ")"}},
    {"llama-bpe", "\x0C" "t\xD0" "\x96" "S", {"\x0C" "t\xD0" "\x96" "S"}},
    {"llama-bpe", "4\xCC" "\x81" "\xE2" "\x80" "\xA8" "`.\xE6" "\x96" "\x87" "\xD8" "\xB9" "\xE4" "\xB8" "\xAD" "(!91", {"4", "\xCC" "\x81", "\xE2" "\x80" "\xA8", "`.", "\xE6" "\x96" "\x87" "\xD8" "\xB9" "\xE4" "\xB8" "\xAD", "(!", "91"}},
    {"llama-bpe", "9r\xD8" "\xA7" "!\xC2" "\xBD" "\xCC" "\x81" ":\xE3" "\x80" "\x80" " TV\xD9" "\xA4" "'D", {"9", "r\xD8" "\xA7", "!", "\xC2" "\xBD", "\xCC" "\x81" ":", "\xE3" "\x80" "\x80", " TV", "\xD9" "\xA4", "'D"}},
    {"llama-bpe", ":L\xF0" "\x9F" "\x91" "\x8D" "\xF0" "\x9F" "\x8F" "\xBD" "''T\xC3" "\xB1" "\xD8" "\xA7" ".:-\xC2" "\x85" "\xCC" "\x81" "\xD8" "\xB9" "\xE4" "\xB8" "\xAD", {":L", "\xF0" "\x9F" "\x91" "\x8D" "\xF0" "\x9F" "\x8F" "\xBD" "''", "T\xC3" "\xB1" "\xD8" "\xA7", ".:-", "\xC2" "\x85", "\xCC" "\x81" "\xD8" "\xB9" "\xE4" "\xB8" "\xAD"}},
    {"llama-bpe", "R\x0A" "\xE6" "\x97" "\xA5" "t", {"R", "\x0A", "\xE6" "\x97" "\xA5" "t"}},
    {"llama-bpe", "?\xD8" "\xA7" "\xE3" "\x80" "\x80", {"?\xD8" "\xA7", "\xE3" "\x80" "\x80"}},
    {"llama-bpe", "]-\xC3" "\xA9" "\xE6" "\x96" "\x87" "_Dv", {"]-", "\xC3" "\xA9" "\xE6" "\x96" "\x87", "_Dv"}},
    {"llama-bpe", "S5 m9{{\xCC" "\x81" "rD", {"S", "5", " m", "9", "{{\xCC" "\x81", "rD"}},
    {"llama-bpe", "}\x0C" "\x0D" "M~\x0C" "\x0D" "'_[", {"}", "\x0C" "\x0D", "M", "~", "\x0C" "\x0D", "'_["}},
    {"llama-bpe", "Lr0L77", {"Lr", "0", "L", "77"}},
    {"llama-bpe", "\xF0" "\x9F" "\x91" "\x8D" "\xF0" "\x9F" "\x8F" "\xBD" "\xE2" "\x80" "\x8B" "1", {"\xF0" "\x9F" "\x91" "\x8D" "\xF0" "\x9F" "\x8F" "\xBD" "\xE2" "\x80" "\x8B", "1"}},
    {"llama-bpe", " al'\xE2" "\x80" "\xA8" ")\xD0" "\x96", {" al", "'", "\xE2" "\x80" "\xA8", ")\xD0" "\x96"}},
    {"llama-bpe", "m\xD9" "\xA4" "s\xE4" "\xB8" "\xAD" "\xC3" "\xB1" "{{}", {"m", "\xD9" "\xA4", "s\xE4" "\xB8" "\xAD" "\xC3" "\xB1", "{{}"}},
    {"llama-bpe", "E\xF0" "\x9F" "\x98" "\x80" "}S2t4\xC2" "\xA0" "d", {"E", "\xF0" "\x9F" "\x98" "\x80" "}", "S", "2", "t", "4", "\xC2" "\xA0" "d"}},
    {"llama-bpe", ":\xC2" "\x85" "sE", {":", "\xC2" "\x85" "sE"}},
    {"llama-bpe", "\xD0" "\x96" "L\xE2" "\x80" "\xA8", {"\xD0" "\x96" "L", "\xE2" "\x80" "\xA8"}},
    {"llama-bpe", "( T4", {"(", " T", "4"}},
    {"llama-bpe", "[L -(\xE6" "\x97" "\xA5" "Vv\xF0" "\x9F" "\x91" "\x8D" "\xF0" "\x9F" "\x8F" "\xBD" "\xE6" "\x96" "\x87" "\xF0" "\x9F" "\x98" "\x80" "\xF0" "\x9F" "\x98" "\x80", {"[L", " -(", "\xE6" "\x97" "\xA5" "Vv", "\xF0" "\x9F" "\x91" "\x8D" "\xF0" "\x9F" "\x8F" "\xBD", "\xE6" "\x96" "\x87", "\xF0" "\x9F" "\x98" "\x80" "\xF0" "\x9F" "\x98" "\x80"}},
    {"llama-bpe", "rlE:\x09" "\xF0" "\x9F" "\x98" "\x80" "d", {"rlE", ":", "\x09", "\xF0" "\x9F" "\x98" "\x80" "d"}},
    {"llama-bpe", "\xC3" "\xA9" "4\xC2" "\xBD" "(l\x0B" " \xC2" "\xBD" "!R\x09", {"\xC3" "\xA9", "4\xC2" "\xBD", "(l", "\x0B", " ", "\xC2" "\xBD", "!R", "\x09"}},
    {"llama-bpe", "(D_6\xE2" "\x80" "\xA8" "\x0B" "\xD9" "\xA3" ";628", {"(D", "_", "6", "\xE2" "\x80" "\xA8", "\x0B", "\xD9" "\xA3", ";", "628"}},
    {"llama-bpe", "}73\xE2" "\x85" "\xAB" "\xCC" "\x81" "_  \x0D" "\xE6" "\x97" "\xA5" "\x09" "2-\xE3" "\x80" "\x80" "-(", {"}", "73\xE2" "\x85" "\xAB", "\xCC" "\x81" "_", "  \x0D", "\xE6" "\x97" "\xA5", "\x09", "2", "-", "\xE3" "\x80" "\x80", "-("}},
    {"llama-bpe", "6E7\xE6" "\x97" "\xA5", {"6", "E", "7", "\xE6" "\x97" "\xA5"}},
    {"llama-bpe", ":4\xF0" "\x9F" "\x98" "\x80" "a\xF0" "\x9F" "\x98" "\x80" "-", {":", "4", "\xF0" "\x9F" "\x98" "\x80" "a", "\xF0" "\x9F" "\x98" "\x80" "-"}},
    {"llama-bpe", "rV]3\xF0" "\x9F" "\x98" "\x80" "0~;R{\xE6" "\x96" "\x87" "}rdD", {"rV", "]", "3", "\xF0" "\x9F" "\x98" "\x80", "0", "~;", "R", "{\xE6" "\x96" "\x87", "}rdD"}},
    {"llama-bpe", " L\xE2" "\x80" "\x8B" "\xE6" "\x96" "\x87" "l", {" L", "\xE2" "\x80" "\x8B" "\xE6" "\x96" "\x87" "l"}},
    {"llama-bpe", "\xC2" "\x85" "\xE6" "\x97" "\xA5" "-L\x0C" "\x0C" "m\xC3" "\xA9" "ZE\xC2" "\xBD" "M", {"\xC2" "\x85" "\xE6" "\x97" "\xA5", "-L", "\x0C", "\x0C" "m\xC3" "\xA9" "ZE", "\xC2" "\xBD", "M"}},
    {"llama-bpe", "25  5 \xD9" "\xA3" "8\xE2" "\x80" "\x8B", {"25", " ", " ", "5", " ", "\xD9" "\xA3" "8", "\xE2" "\x80" "\x8B"}},
    {"llama-bpe", "\x09" "\x0B" "'mS_\xE4" "\xB8" "\xAD" "\xD8" "\xB9", {"\x09", "\x0B", "'m", "S", "_\xE4" "\xB8" "\xAD" "\xD8" "\xB9"}},
    {"llama-bpe", "\xE2" "\x85" "\xAB" "'\xD9" "\xA3" "m\xE2" "\x80" "\xA8" "L\xC2" "\xBD" "\xD9" "\xA4" "\xC3" "\xA9" "\xC2" "\xA0" "1aL0l\xE6" "\x97" "\xA5", {"\xE2" "\x85" "\xAB", "'", "\xD9" "\xA3", "m", "\xE2" "\x80" "\xA8" "L", "\xC2" "\xBD" "\xD9" "\xA4", "\xC3" "\xA9", "\xC2" "\xA0", "1", "aL", "0", "l\xE6" "\x97" "\xA5"}},
    {"llama-bpe", "V\xC3" "\xB1" "S,\xE2" "\x85" "\xAB" "\xC2" "\xBD" "\xC3" "\xB1" "\xF0" "\x9F" "\x98" "\x80" "E\xC3" "\xB1" "S9", {"V\xC3" "\xB1" "S", ",", "\xE2" "\x85" "\xAB" "\xC2" "\xBD", "\xC3" "\xB1", "\xF0" "\x9F" "\x98" "\x80" "E\xC3" "\xB1" "S", "9"}},
    {"llama-bpe", "\x0D" "'e\xD9" "\xA3" "\xE3" "\x80" "\x80" "\xC3" "\xB1", {"\x0D", "'e", "\xD9" "\xA3", "\xE3" "\x80" "\x80" "\xC3" "\xB1"}},
    {"llama-bpe", "t\xC2" "\xA0" ",", {"t", "\xC2" "\xA0", ","}},
    {"qwen2", "\xD9" "\xA3" "\xD9" "\xA4" "3\x0D" "\xE3" "\x80" "\x80" "\xD9" "\xA4" "\xE2" "\x80" "\xA8" "\xF0" "\x9F" "\x98" "\x80" "\xD9" "\xA3" "9\xE2" "\x85" "\xAB" "\x09", {"\xD9" "\xA3", "\xD9" "\xA4", "3", "\x0D", "\xE3" "\x80" "\x80", "\xD9" "\xA4", "\xE2" "\x80" "\xA8", "\xF0" "\x9F" "\x98" "\x80", "\xD9" "\xA3", "9", "\xE2" "\x85" "\xAB", "\x09"}},
    {"qwen2", "3\xE3" "\x80" "\x80" "M'V{\xC2" "\xA0" ".T8`", {"3", "\xE3" "\x80" "\x80" "M", "'V", "{", "\xC2" "\xA0", ".T", "8", "`"}},
    {"qwen2", "5!VL", {"5", "!VL"}},
    {"qwen2", "(l M\xE6" "\x96" "\x87" "6e{\xF0" "\x9F" "\x91" "\x8D" "\xF0" "\x9F" "\x8F" "\xBD" "d6d~\xD9" "\xA4", {"(l", " M\xE6" "\x96" "\x87", "6", "e", "{\xF0" "\x9F" "\x91" "\x8D" "\xF0" "\x9F" "\x8F" "\xBD", "d", "6", "d", "~", "\xD9" "\xA4"}},
    {"qwen2", ":'3_.R(\xC3" "\xA9" ":", {":'", "3", "_.", "R", "(\xC3" "\xA9", ":"}},
    {"qwen2", "\xE4" "\xB8" "\xAD" "\xC2" "\xA0" "\xC3" "\xA9" "];\xE2" "\x85" "\xAB" " \xD9" "\xA4" "tv7", {"\xE4" "\xB8" "\xAD", "\xC2" "\xA0" "\xC3" "\xA9", "];", "\xE2" "\x85" "\xAB", " ", "\xD9" "\xA4", "tv", "7"}},
    {"qwen2", "r\x09" "\x0A" "'", {"r", "\x09" "\x0A", "'"}},
    {"qwen2", "1\x0A" "m`\x09" "}L\xE2" "\x80" "\xA8" "\xD9" "\xA4" "\xD8" "\xA7" "\xCC" "\x81" ",R\x0D" "S", {"1", "\x0A", "m", "`", "\x09", "}L", "\xE2" "\x80" "\xA8", "\xD9" "\xA4", "\xD8" "\xA7", "\xCC" "\x81" ",", "R", "\x0D", "S"}},
    {"qwen2", "1`T\x0A" "\xC3" "\xA9" "R\x09" "r6t\x09" "V\xE4" "\xB8" "\xAD" "Z:", {"1", "`T", "\x0A", "\xC3" "\xA9" "R", "\x09" "r", "6", "t", "\x09" "V\xE4" "\xB8" "\xAD" "Z", ":"}},
    {"qwen2", "'\x0A" "m'\xC2" "\xBD" "8vd\x09" "s1", {"'\x0A", "m", "'", "\xC2" "\xBD", "8", "vd", "\x09" "s", "1"}},
    {"qwen2", "??\xC2" "\xBD" "4 \xE3" "\x80" "\x80", {"??", "\xC2" "\xBD", "4", " \xE3" "\x80" "\x80"}},
    {"qwen2", "0\x0A" "-\xC3" "\xA9" " \xC3" "\x9F" "Z\xC3" "\xA9" "\xD9" "\xA3" "\x0C" "2", {"0", "\x0A", "-\xC3" "\xA9", " \xC3" "\x9F" "Z\xC3" "\xA9", "\xD9" "\xA3", "\x0C", "2"}},
    {"qwen2", "\xE6" "\x97" "\xA5" "9\xE3" "\x80" "\x80" "E~\xCC" "\x81" "\x0B" "{\xD9" "\xA3" "?5", {"\xE6" "\x97" "\xA5", "9", "\xE3" "\x80" "\x80" "E", "~\xCC" "\x81", "\x0B", "{", "\xD9" "\xA3", "?", "5"}},
    {"qwen2", ":3M}-s", {":", "3", "M", "}-", "s"}},
    {"qwen2", "mZT ~dSr[\xD9" "\xA3" " \xC2" "\x85" "9 '\xE4" "\xB8" "\xAD", {"mZT", " ~", "dSr", "[", "\xD9" "\xA3", " ", "\xC2" "\x85", "9", " '", "\xE4" "\xB8" "\xAD"}},
    {"qwen2", "d\x0A" "\xE3" "\x80" "\x80" "a\x09", {"d", "\x0A", "\xE3" "\x80" "\x80" "a", "\x09"}},
    {"qwen2", ";\x0C" ",9\xC3" "\x9F" "?5_", {";", "\x0C", ",", "9", "\xC3" "\x9F", "?", "5", "_"}},
    {"qwen2", "a;[r\xE6" "\x97" "\xA5", {"a", ";[", "r\xE6" "\x97" "\xA5"}},
    {"qwen2", "\xD9" "\xA3" "39\xD9" "\xA3" "aR\x09", {"\xD9" "\xA3", "3", "9", "\xD9" "\xA3", "aR", "\x09"}},
    {"qwen2", "Rl}\xE2" "\x80" "\x8B" "'{\xC3" "\xA9" "!!7r\xD8" "\xB9" "\xC2" "\xBD" "L\xC2" "\x85" "]", {"Rl", "}\xE2" "\x80" "\x8B" "'{", "\xC3" "\xA9", "!!", "7", "r\xD8" "\xB9", "\xC2" "\xBD", "L", "\xC2" "\x85", "]"}},
    {"qwen2", ",\xCC" "\x81" "L l'\xD9" "\xA4" "`\xD9" "\xA3" "M\xC2" "\xBD" "\xD9" "\xA3" "\xD0" "\x96" "\xC3" "\xA9" "\xD8" "\xB9", {",\xCC" "\x81", "L", " l", "'", "\xD9" "\xA4", "`", "\xD9" "\xA3", "M", "\xC2" "\xBD", "\xD9" "\xA3", "\xD0" "\x96" "\xC3" "\xA9" "\xD8" "\xB9"}},
    {"qwen2", "7r 'M(E[\xE3" "\x80" "\x80" "\xC3" "\xB1" "s\xC3" "\xA9" "\xE2" "\x80" "\xA8" "9\xF0" "\x9F" "\x91" "\x8D" "\xF0" "\x9F" "\x8F" "\xBD", {"7", "r", " '", "M", "(E", "[", "\xE3" "\x80" "\x80" "\xC3" "\xB1" "s\xC3" "\xA9", "\xE2" "\x80" "\xA8", "9", "\xF0" "\x9F" "\x91" "\x8D" "\xF0" "\x9F" "\x8F" "\xBD"}},
    {"qwen2", "a\xE4" "\xB8" "\xAD" "t\xD9" "\xA3" "\xE2" "\x80" "\xA8" "R\xC2" "\xBD", {"a\xE4" "\xB8" "\xAD" "t", "\xD9" "\xA3", "\xE2" "\x80" "\xA8" "R", "\xC2" "\xBD"}},
    {"qwen2", "\xE6" "\x97" "\xA5" " T\x09", {"\xE6" "\x97" "\xA5", " T", "\x09"}},
    {"qwen2", "47\xE4" "\xB8" "\xAD" "\xCC" "\x81" "[T", {"4", "7", "\xE4" "\xB8" "\xAD", "\xCC" "\x81" "[", "T"}},
    {"qwen2", " '3T\xC2" "\x85" "l; !\xD0" "\x96", {" '", "3", "T", "\xC2" "\x85" "l", ";", " !", "\xD0" "\x96"}},
    {"qwen2", "Z\xF0" "\x9F" "\x98" "\x80" "S\xF0" "\x9F" "\x91" "\x8D" "\xF0" "\x9F" "\x8F" "\xBD" "\x0A", {"Z", "\xF0" "\x9F" "\x98" "\x80" "S", "\xF0" "\x9F" "\x91" "\x8D" "\xF0" "\x9F" "\x8F" "\xBD" "\x0A"}},
    {"qwen2", "e5\xF0" "\x9F" "\x91" "\x8D" "\xF0" "\x9F" "\x8F" "\xBD" " \xE2" "\x85" "\xAB" " \xE6" "\x96" "\x87" "\xE6" "\x96" "\x87" "\xE6" "\x96" "\x87" "V\x0C" "3?", {"e", "5", "\xF0" "\x9F" "\x91" "\x8D" "\xF0" "\x9F" "\x8F" "\xBD", " ", "\xE2" "\x85" "\xAB", " \xE6" "\x96" "\x87" "\xE6" "\x96" "\x87" "\xE6" "\x96" "\x87" "V", "\x0C", "3", "?"}},
    {"qwen2", "\xE6" "\x97" "\xA5" "\xC3" "\xA9" " \xE4" "\xB8" "\xAD", {"\xE6" "\x97" "\xA5" "\xC3" "\xA9", " \xE4" "\xB8" "\xAD"}},
    {"qwen2", "\xD9" "\xA3" "\xE3" "\x80" "\x80" "\x0A" "]", {"\xD9" "\xA3", "\xE3" "\x80" "\x80" "\x0A", "]"}},
    {"qwen2", "4T\xD8" "\xB9" "Rl\xC2" "\xBD", {"4", "T\xD8" "\xB9" "Rl", "\xC2" "\xBD"}},
    {"qwen2", "(m\xD9" "\xA4" "\x0D" "v(7", {"(m", "\xD9" "\xA4", "\x0D", "v", "(", "7"}},
    {"qwen2", "\xF0" "\x9F" "\x91" "\x8D" "\xF0" "\x9F" "\x8F" "\xBD" "{ da\xF0" "\x9F" "\x91" "\x8D" "\xF0" "\x9F" "\x8F" "\xBD" "\xE3" "\x80" "\x80" "}!l", {"\xF0" "\x9F" "\x91" "\x8D" "\xF0" "\x9F" "\x8F" "\xBD" "{", " da", "\xF0" "\x9F" "\x91" "\x8D" "\xF0" "\x9F" "\x8F" "\xBD", "\xE3" "\x80" "\x80", "}!", "l"}},
    {"qwen2", "-[.V;a,:{", {"-[.", "V", ";a", ",:{"}},
    {"qwen2", "3Z  ", {"3", "Z", "  "}},
    {"qwen2", "t{]\xE2" "\x80" "\x8B" "T(`\x0D", {"t", "{]\xE2" "\x80" "\x8B", "T", "(`\x0D"}},
    {"qwen2", "s\x0D" "Es L9\x0A" "~\xD9" "\xA4" ".2)` }", {"s", "\x0D", "Es", " L", "9", "\x0A", "~", "\xD9" "\xA4", ".", "2", ")`", " }"}},
    {"qwen2", "\x0C" "4rs\"\xE3" "\x80" "\x80" "M \xF0" "\x9F" "\x91" "\x8D" "\xF0" "\x9F" "\x8F" "\xBD" "s\x0C", {"\x0C", "4", "rs", "\"", "\xE3" "\x80" "\x80" "M", " \xF0" "\x9F" "\x91" "\x8D" "\xF0" "\x9F" "\x8F" "\xBD", "s", "\x0C"}},
    {"qwen2", "D\xE6" "\x97" "\xA5" "': ", {"D\xE6" "\x97" "\xA5", "':", " "}},
    {"qwen2", " \x09" "}8!\xF0" "\x9F" "\x98" "\x80" "\xC3" "\xB1", {" ", "\x09", "}", "8", "!\xF0" "\x9F" "\x98" "\x80", "\xC3" "\xB1"}},
    {"gpt2", "{VDdT4\xD9" "\xA3" "\xCC" "\x81" "\x0C" "6\xE3" "\x80" "\x80" ";\xE3" "\x80" "\x80", {"{", "VDdT", "4\xD9" "\xA3", "\xCC" "\x81", "\x0C", "6", "\xE3" "\x80" "\x80", ";", "\xE3" "\x80" "\x80"}},
    {"gpt2", "M\x0C" "29R0:\xC3" "\xB1" "R", {"M", "\x0C", "29", "R", "0", ":", "\xC3" "\xB1" "R"}},
    {"gpt2", "8)\x09" "\xD0" "\x96" "3\xC3" "\xA9" "\"]", {"8", ")", "\x09", "\xD0" "\x96", "3", "\xC3" "\xA9", "\"]"}},
    {"gpt2", "\xC2" "\xBD" "4[\x0A" ":S\xCC" "\x81" "\x0D" "\xD8" "\xA7", {"\xC2" "\xBD" "4", "[", "\x0A", ":", "S", "\xCC" "\x81", "\x0D", "\xD8" "\xA7"}},
    {"gpt2", "m\xD9" "\xA3" "\xC2" "\xBD" "5R\x0A" "9]", {"m", "\xD9" "\xA3" "\xC2" "\xBD" "5", "R", "\x0A", "9", "]"}},
    {"gpt2", "\xE3" "\x80" "\x80" "~?\xC3" "\xA9" "m\xC3" "\x9F" "`\xE6" "\x97" "\xA5" "\xE2" "\x80" "\x8B", {"\xE3" "\x80" "\x80", "~?", "\xC3" "\xA9" "m\xC3" "\x9F", "`", "\xE6" "\x97" "\xA5", "\xE2" "\x80" "\x8B"}},
    {"gpt2", "aT{\xC2" "\xBD" "\xE6" "\x96" "\x87" "\xE3" "\x80" "\x80" "9E6L", {"aT", "{", "\xC2" "\xBD", "\xE6" "\x96" "\x87", "\xE3" "\x80" "\x80", "9", "E", "6", "L"}},
    {"gpt2", "\xE2" "\x85" "\xAB" "E\xE4" "\xB8" "\xAD" "r\x0C", {"\xE2" "\x85" "\xAB", "E\xE4" "\xB8" "\xAD" "r", "\x0C"}},
    {"gpt2", "'am7\xD0" "\x96" "\xC3" "\x9F" "!m \xC2" "\xBD" "~veT!", {"'", "am", "7", "\xD0" "\x96" "\xC3" "\x9F", "!", "m", " \xC2" "\xBD", "~", "veT", "!"}},
    {"gpt2", "\xD8" "\xB9" "2]\x09" "6\xC2" "\x85" "aZ\xE2" "\x80" "\xA8" "!\xE4" "\xB8" "\xAD", {"\xD8" "\xB9", "2", "]", "\x09", "6", "\xC2" "\x85", "aZ", "\xE2" "\x80" "\xA8", "!", "\xE4" "\xB8" "\xAD"}},
    {"gpt2", ".9\xE6" "\x97" "\xA5" "\xC2" "\xBD" "8\x0C" "9", {".", "9", "\xE6" "\x97" "\xA5", "\xC2" "\xBD" "8", "\x0C", "9"}},
    {"gpt2", "\"?S", {"\"?", "S"}},
    {"gpt2", "2\xCC" "\x81" "'", {"2", "\xCC" "\x81" "'"}},
    {"gpt2", " 7`)", {" 7", "`)"}},
    {"gpt2", "\xCC" "\x81" "\xC3" "\x9F" ":'({", {"\xCC" "\x81", "\xC3" "\x9F", ":'({"}},
    {"gpt2", "a \xD9" "\xA3" "t4\xCC" "\x81", {"a", " \xD9" "\xA3", "t", "4", "\xCC" "\x81"}},
    {"gpt2", "?27\xE6" "\x96" "\x87" "6\x09", {"?", "27", "\xE6" "\x96" "\x87", "6", "\x09"}},
    {"gpt2", " E\xCC" "\x81" "16\xF0" "\x9F" "\x91" "\x8D" "\xF0" "\x9F" "\x8F" "\xBD" "'S\xC2" "\x85" "l{s5 \xC2" "\x85", {" E", "\xCC" "\x81", "16", "\xF0" "\x9F" "\x91" "\x8D" "\xF0" "\x9F" "\x8F" "\xBD" "'", "S", "\xC2" "\x85", "l", "{", "s", "5", " \xC2" "\x85"}},
    {"gpt2", "'sS1{", {"'s", "S", "1", "{"}},
    {"gpt2", ".vrD;21\xC2" "\xBD" "\xE6" "\x96" "\x87" "\xC3" "\x9F", {".", "vrD", ";", "21\xC2" "\xBD", "\xE6" "\x96" "\x87" "\xC3" "\x9F"}},
    {"gpt2", "[);\xC2" "\xA0" "DEa", {"[);", "\xC2" "\xA0", "DEa"}},
    {"gpt2", "\x0D" "r-'", {"\x0D", "r", "-'"}},
    {"gpt2", "\xC3" "\xB1" "4[_", {"\xC3" "\xB1", "4", "[_"}},
    {"gpt2", "?~Rs\xE6" "\x97" "\xA5" "3)\x0B" "\xE3" "\x80" "\x80" "2,(\xE6" "\x97" "\xA5" " \"", {"?~", "Rs\xE6" "\x97" "\xA5", "3", ")", "\x0B", "\xE3" "\x80" "\x80", "2", ",(", "\xE6" "\x97" "\xA5", " \""}},
    {"gpt2", "}'[\xC3" "\x9F" "\xE6" "\x96" "\x87" "t", {"}'[", "\xC3" "\x9F" "\xE6" "\x96" "\x87" "t"}},
    {"gpt2", "S 2t:(\x0A" ";'\x09" ".\x0D" "!a\xC2" "\x85", {"S", " 2", "t", ":(", "\x0A", ";'", "\x09", ".", "\x0D", "!", "a", "\xC2" "\x85"}},
    {"gpt2", "t 7E\xE6" "\x97" "\xA5" "\xE6" "\x96" "\x87" "] ~\xCC" "\x81" "m\xCC" "\x81" "1Z!", {"t", " 7", "E\xE6" "\x97" "\xA5" "\xE6" "\x96" "\x87", "]", " ~\xCC" "\x81", "m", "\xCC" "\x81", "1", "Z", "!"}},
    {"gpt2", "L8,.\xE4" "\xB8" "\xAD" "(\xC2" "\x85" "r\xD9" "\xA4" "3{d9\"t\xC3" "\x9F", {"L", "8", ",.", "\xE4" "\xB8" "\xAD", "(", "\xC2" "\x85", "r", "\xD9" "\xA4" "3", "{", "d", "9", "\"", "t\xC3" "\x9F"}},
    {"gpt2", "\x0C" "\x0B" ",d`ET\x09" "r4", {"\x0C", "\x0B", ",", "d", "`", "ET", "\x09", "r", "4"}},
    {"gpt2", "'\xCC" "\x81" "\xE3" "\x80" "\x80" "0", {"'\xCC" "\x81", "\xE3" "\x80" "\x80", "0"}},
    {"gpt2", "M'\xE4" "\xB8" "\xAD" "8\xE2" "\x80" "\xA8" "V", {"M", "'", "\xE4" "\xB8" "\xAD", "8", "\xE2" "\x80" "\xA8", "V"}},
    {"gpt2", "  \x0D" "\xD0" "\x96" "\x0A" ") \x09" "3\xC2" "\xA0" "9198L", {"  ", "\x0D", "\xD0" "\x96", "\x0A", ")", " ", "\x09", "3", "\xC2" "\xA0", "9198", "L"}},
    {"gpt2", "\xD8" "\xB9" "2,t{ 9", {"\xD8" "\xB9", "2", ",", "t", "{", " 9"}},
    {"gpt2", "\xC2" "\xBD" "7e\xE6" "\x96" "\x87" "\xC3" "\x9F" "Ea\xE6" "\x97" "\xA5" "7\xE3" "\x80" "\x80" ")", {"\xC2" "\xBD" "7", "e\xE6" "\x96" "\x87" "\xC3" "\x9F" "Ea\xE6" "\x97" "\xA5", "7", "\xE3" "\x80" "\x80", ")"}},
    {"gpt2", " 7V", {" 7", "V"}},
    {"gpt2", "2\xC2" "\x85" "\xD8" "\xB9", {"2", "\xC2" "\x85", "\xD8" "\xB9"}},
    {"gpt2", "T)\xD9" "\xA4" "0\xE3" "\x80" "\x80" "\x09", {"T", ")", "\xD9" "\xA4" "0", "\xE3" "\x80" "\x80" "\x09"}},
    {"gpt2", "aE\xC2" "\x85" "-5\xC3" "\x9F" "):l'4 \xC3" "\x9F" "\xC2" "\x85" "4", {"aE", "\xC2" "\x85", "-", "5", "\xC3" "\x9F", "):", "l", "'", "4", " \xC3" "\x9F", "\xC2" "\x85", "4"}},
    {"gpt2", "Z,\")1?T4\xC3" "\x9F" "\xCC" "\x81" "\x0C" "\xF0" "\x9F" "\x98" "\x80" "t\"e{", {"Z", ",\")", "1", "?", "T", "4", "\xC3" "\x9F", "\xCC" "\x81", "\x0C", "\xF0" "\x9F" "\x98" "\x80", "t", "\"", "e", "{"}},
    {"gpt2", "\x0C" "L\xE2" "\x80" "\xA8" "Rd{\x0A" "\" ?'s?", {"\x0C", "L", "\xE2" "\x80" "\xA8", "Rd", "{", "\x0A", "\"", " ?'", "s", "?"}},
};

TEST(BpePreTokenizer, MatchesPythonRegexOnRandomStrings) {
    for (const Golden& g : kGolden) {
        BpePreTokenizer p(g.pre);
        std::vector<std::string> got;
        for (auto v : p.split(g.text)) got.emplace_back(v);
        EXPECT_EQ(got, g.pieces) << g.pre << " on \"" << g.text << "\"";
    }
}

}  // namespace
}  // namespace duet::model
