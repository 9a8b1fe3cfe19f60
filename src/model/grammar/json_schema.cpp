#include "model/grammar/json_schema.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <unordered_set>

#include "core/error.h"
#include "model/grammar/grammar.h"
#include "model/grammar/json_schema_detail.h"
#include "model/grammar/json_schema_values.h"

namespace duet::model::grammar {
namespace detail {

// Accepted and ignored: they describe, they do not constrain (plus any "x-..." extension).
const std::set<std::string> kAnnotations = {
    "title",     "description", "default",    "examples",        "example",          "$schema",
    "$id",       "$comment",    "$defs",      "definitions",     "deprecated",       "readOnly",
    "writeOnly", "discriminator", "contentEncoding", "contentMediaType", "$anchor", "externalDocs",
    "propertyOrdering"};
const std::set<std::string> kHandled = {
    "type",      "properties", "required",  "additionalProperties", "unevaluatedProperties", "minProperties",
    "maxProperties", "items",  "prefixItems", "additionalItems",    "minItems",              "maxItems",
    "uniqueItems", "minLength", "maxLength", "pattern",             "format",                "minimum",
    "maximum",   "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "enum",                "const",
    "anyOf",     "oneOf",      "allOf",     "$ref",                 "nullable"};
constexpr const char* kSupported =
    "supported: type, properties, required, additionalProperties, unevaluatedProperties: false, "
    "minProperties, maxProperties, items, prefixItems, additionalItems, minItems, maxItems, uniqueItems (false or "
    "with maxItems <= 1), minLength, maxLength, pattern, format, minimum, maximum, exclusiveMinimum, "
    "exclusiveMaximum, multipleOf 1, enum, const, anyOf, oneOf, allOf, $ref, nullable; annotations are ignored";

bool is_annotation(const std::string& k) { return kAnnotations.count(k) || k.rfind("x-", 0) == 0; }

std::string sanitize(std::string_view s) {
    std::string out;
    for (char c : s.substr(0, 40)) out += std::isalnum(uint8_t(c)) ? c : '-';
    return out.empty() ? "x" : out;
}

// "<where>/" to prefix a keyword: the root's "/" is not doubled.
std::string into(const std::string& where) { return where.back() == '/' ? where : where + "/"; }

int count_in(const ojson& s, const char* key, int fallback, const std::string& where) {
    auto it = s.find(key);
    if (it == s.end()) return fallback;
    if (!it->is_number_integer() || it->get<int64_t>() < 0 || it->get<int64_t>() > int64_t(Grammar::kMaxCount))
        fail("{}{}: must be an integer from 0 to {} (got {})", into(where), key, Grammar::kMaxCount, it->dump());
    return int(it->get<int64_t>());
}

// {m,n} suffix; hi < 0: unbounded.
std::string repeat(int lo, int hi) {
    if (hi < 0) return fmt::format("{{{},}}", lo);
    return fmt::format("{{{},{}}}", lo, hi);
}

std::string join_alts(const std::vector<std::string>& alts) {
    std::string out;
    for (const auto& a : alts) out += (out.empty() ? "" : " | ") + a;
    return out;
}

bool matches_type(const ojson& v, const std::string& t) {
    if (t == "integer") return v.is_number_integer() || (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>());
    if (t == "number") return v.is_number();
    if (t == "string") return v.is_string();
    if (t == "object") return v.is_object();
    if (t == "array") return v.is_array();
    if (t == "boolean") return v.is_boolean();
    if (t == "null") return v.is_null();
    return false;
}

std::vector<std::string> type_list(const ojson& t) {
    if (t.is_string()) return {t.get<std::string>()};
    std::vector<std::string> out;
    if (t.is_array())
        for (const auto& x : t) out.push_back(x.is_string() ? x.get<std::string>() : x.dump());
    return out;
}

ojson without(const ojson& s, std::initializer_list<const char*> keys) {
    ojson out = ojson::object();
    for (const auto& item : s.items()) {
        const std::string& k = item.key();
        if (std::none_of(keys.begin(), keys.end(), [&](const char* x) { return k == x; })) out[k] = item.value();
    }
    return out;
}

bool only_annotations(const ojson& s) {
    for (const auto& [k, _] : s.items())
        if (!is_annotation(k)) return false;
    return true;
}

unsigned type_bit(const std::string& t) {
    if (t == "null") return kNull;
    if (t == "boolean") return kBool;
    if (t == "integer" || t == "number") return kNum;
    if (t == "string") return kStr;
    if (t == "array") return kArr;
    if (t == "object") return kObj;
    return kAll;
}

unsigned value_bit(const ojson& v) {
    return v.is_null() ? kNull : v.is_boolean() ? kBool : v.is_number() ? kNum : v.is_string() ? kStr
           : v.is_array() ? kArr : kObj;
}

}  // namespace detail

using namespace detail;

std::string grammar_literal(std::string_view text) {
    std::string out = "\"";
    for (char c : text) {
        const uint8_t b = uint8_t(c);
        if (c == '"') out += "\\\"";
        else if (c == '\\') out += "\\\\";
        else if (c == '\n') out += "\\n";
        else if (c == '\r') out += "\\r";
        else if (c == '\t') out += "\\t";
        else if (b < 0x20 || b == 0x7F) out += fmt::format("\\x{:02x}", b);
        else out += c;
    }
    return out + "\"";
}

std::string json_value_rules() {
    return R"(value ::= object | array | string | number | boolean | null
object ::= "{" ws ( string ws ":" ws value ws ( "," ws string ws ":" ws value ws )* )? "}"
array ::= "[" ws ( value ws ( "," ws value ws )* )? "]"
string ::= "\"" char* "\""
char ::= [^"\\\x00-\x1f] | "\\" ( ["\\/bfnrt] | "u" ( [0-9a-cA-Ce-fE-F] hex hex hex | [dD] [0-7] hex hex ) )
hex ::= [0-9a-fA-F]
integer ::= "-"? ( "0" | [1-9] [0-9]{0,15} )
number ::= integer ( "." [0-9]{1,16} )? ( [eE] [-+]? [0-9]{1,2} )?
boolean ::= "true" | "false"
null ::= "null"
ws ::= " "?
)";
}

std::string json_object_grammar() { return "root ::= object\n" + json_value_rules(); }

std::string JsonSchemaCompiler::where(const std::string& path) const {
    return source_ + ": " + (path.empty() ? "/" : path);
}

std::string JsonSchemaCompiler::fresh(const std::string& base) {
    if (++n_rules_ > limits_.max_rules)
        fail("{}: the schema needs more than {} grammar rules (the limit on grammar size)", source_, limits_.max_rules);
    if (limits_.cancelled && limits_.cancelled()) throw GrammarCancelled(source_ + ": schema compilation cancelled");
    // base, else base-N for the first N free (a generated name may equal another base's)
    const std::string b = sanitize(base);
    std::string name = b;
    for (int& n = name_count_[b]; !used_.insert(name).second;) name = b + "-" + std::to_string(++n);
    return name;
}

void JsonSchemaCompiler::emit(const std::string& rule, const std::string& body) {
    out_ += rule + " ::= " + body + "\n";
    if (out_.size() > limits_.max_grammar_bytes)
        fail("{}: the schema's grammar exceeds {} bytes (the limit on grammar size)", source_, limits_.max_grammar_bytes);
}

std::string JsonSchemaCompiler::add(const ojson& schema, std::string_view name) {
    Ctx ctx{&schema, {}};
    return visit(schema, "s-" + std::string(name), "", ctx);
}

std::string JsonSchemaCompiler::rules() const { return out_ + json_value_rules(); }

const ojson& JsonSchemaCompiler::resolve(const std::string& r, const std::string& path, const Ctx& ctx) const {
    if (r.empty() || r[0] != '#')
        fail("{}$ref: '{}' is not a local reference (allowed: #, #/$defs/NAME, #/definitions/NAME or another "
             "JSON pointer into this schema)", into(where(path)), r);
    try {
        const ojson::json_pointer ptr(r.substr(1));
        if (ctx.root->contains(ptr)) return ctx.root->at(ptr);
    } catch (const nlohmann::json::exception&) {
    }
    fail("{}$ref: '{}' does not name an entry of this schema (e.g. #/$defs or #/definitions)", into(where(path)), r);
}

std::string JsonSchemaCompiler::visit_ref(const ojson& s, const std::string& /*name*/, const std::string& path, Ctx& ctx) {
    if (!s["$ref"].is_string()) fail("{}$ref: must be a string", into(where(path)));
    const std::string r = s["$ref"].get<std::string>();
    auto known = ctx.refs.find(r);
    if (known != ctx.refs.end()) return known->second;
    const ojson& target = resolve(r, path, ctx);
    const size_t slash = r.rfind('/');
    const std::string rule = fresh("s-" + (slash == std::string::npos ? std::string("root") : r.substr(slash + 1)));
    ctx.refs.emplace(r, rule);
    // the target's own rule, named by the reference so recursion finds it
    const std::string body = visit(target, rule + "-d", r.substr(1), ctx);
    emit(rule, body);
    return rule;
}

void JsonSchemaCompiler::charge_copy(const ojson& copied, const std::string& path, Ctx& ctx) {
    std::vector<const ojson*> todo = {&copied};
    while (!todo.empty()) {
        const ojson* x = todo.back();
        todo.pop_back();
        if (++ctx.copied_values > limits_.max_copied_values)
            fail("{}: resolving $ref, nullable and allOf copies more than {} JSON values (the limit on schema "
                 "compilation work; a definition referenced many times with sibling keywords multiplies it)",
                 where(path), limits_.max_copied_values);
        if (x->is_structured())
            for (const auto& v : *x) todo.push_back(&v);
    }
}

std::string JsonSchemaCompiler::visit(const ojson& s, const std::string& name, const std::string& path, Ctx& ctx) {
    DepthGuard guard(ctx.depth, limits_.max_depth, where(path));
    if (s.is_boolean()) {
        if (s.get<bool>()) return "value";
        fail("{}: the schema 'false' matches nothing", where(path));
    }
    if (!s.is_object()) fail("{}: a schema must be an object, got {}", where(path), s.dump().substr(0, 80));
    for (const auto& [k, _] : s.items())
        if (!is_annotation(k) && !kHandled.count(k))
            fail("{}: keyword '{}' is not supported ({})", where(path), k, kSupported);

    if (auto n = s.find("nullable"); n != s.end()) {
        if (!n->is_boolean()) fail("{}nullable: must be true or false", into(where(path)));
        charge_copy(s, path, ctx);
        const std::string inner = visit(without(s, {"nullable"}), name, path, ctx);
        if (!n->get<bool>()) return inner;
        const std::string rule = fresh(name + "-or-null");
        emit(rule, inner + " | null");
        return rule;
    }
    if (s.contains("$ref")) {
        if (only_annotations(without(s, {"$ref"}))) return visit_ref(s, name, path, ctx);
        // siblings constrain the referenced schema too: the same as allOf [ref, siblings]
        charge_copy(s, path, ctx);
        ojson all = {{"allOf", ojson::array({ojson{{"$ref", s["$ref"]}}, without(s, {"$ref"})})}};
        return visit(all, name, path, ctx);
    }
    if (s.contains("allOf")) return visit(merge_all_of(s, path, ctx), name, path, ctx);

    const std::string rule = fresh(name);
    std::string body;
    if (auto c = s.find("const"); c != s.end()) {
        body = grammar_literal(c->dump());
    } else if (auto en = s.find("enum"); en != s.end()) {
        if (!en->is_array() || en->empty()) fail("{}enum: must be a non-empty array", into(where(path)));
        const std::vector<std::string> types = s.contains("type") ? type_list(s["type"]) : std::vector<std::string>{};
        std::vector<std::string> alts;
        for (const auto& v : *en)
            if (types.empty() || std::any_of(types.begin(), types.end(), [&](const auto& t) { return matches_type(v, t); }))
                alts.push_back(grammar_literal(v.dump()));
        if (alts.empty()) fail("{}enum: no value has the schema's type {}", into(where(path)), s["type"].dump());
        body = join_alts(alts);
    } else if (s.contains("anyOf") || s.contains("oneOf")) {
        if (s.contains("anyOf") && s.contains("oneOf")) fail("{}: anyOf and oneOf together are not supported", where(path));
        const std::string key = s.contains("anyOf") ? "anyOf" : "oneOf";
        const ojson& any = s[key];
        if (!any.is_array() || any.empty()) fail("{}{}: must be a non-empty array", into(where(path)), key);
        const ojson rest = without(s, {"anyOf", "oneOf"});
        // oneOf: exactly one branch may match; a grammar writes some branch's value, so the
        // branches must be provably disjoint (else refused rather than risk matching two)
        if (key == "oneOf")
            for (size_t i = 0; i < any.size(); ++i)
                for (size_t j = i + 1; j < any.size(); ++j)
                    if (!disjoint(any[i], any[j], path, ctx))
                        fail("{}oneOf: branches {} and {} may both match one value, so 'exactly one' cannot be "
                             "guaranteed (use anyOf, or give the branches different types or a required property "
                             "with different const values)", into(where(path)), i, j);
        std::vector<std::string> alts;
        for (size_t i = 0; i < any.size(); ++i) {
            const std::string sub = fmt::format("{}/{}/{}", path, key, i);
            alts.push_back(only_annotations(rest)
                               ? visit(any[i], rule + "-" + std::to_string(i), sub, ctx)
                               : visit(ojson{{"allOf", ojson::array({rest, any[i]})}}, rule + "-" + std::to_string(i),
                                       sub, ctx));
        }
        body = join_alts(alts);
    } else {
        std::vector<std::string> types;
        if (auto t = s.find("type"); t == s.end()) {
            // no type: the kind its keywords describe (a subset of what the schema allows)
            if (s.contains("properties") || s.contains("required") || s.contains("additionalProperties")) types = {"object"};
            else if (s.contains("items") || s.contains("prefixItems")) types = {"array"};
            else if (s.contains("pattern") || s.contains("format") || s.contains("minLength") || s.contains("maxLength"))
                types = {"string"};
            else if (s.contains("minimum") || s.contains("maximum") || s.contains("exclusiveMinimum") ||
                     s.contains("exclusiveMaximum"))
                types = {"number"};
            else types = {""};
        } else {
            types = type_list(*t);
            if (types.empty()) fail("{}type: must be a type name or a non-empty array of them", into(where(path)));
        }
        std::vector<std::string> alts;
        for (const std::string& t : types) alts.push_back(visit_type(s, t, rule, path, ctx));
        body = join_alts(alts);
    }
    emit(rule, body);
    return rule;
}

std::string JsonSchemaCompiler::visit_type(const ojson& s, const std::string& t, const std::string& name,
                                           const std::string& path, Ctx& ctx) {
    if (t.empty()) return "value";
    if (t == "object") return object_rule(s, name, path, ctx);
    if (t == "array") return array_rule(s, name, path, ctx);
    if (t == "string") return string_rule(s, path);
    if (t == "boolean" || t == "null") return t;
    if (t != "number" && t != "integer")
        fail("{}type: '{}' is not a JSON Schema type (allowed: object, array, string, number, integer, boolean, null)",
             into(where(path)), t);
    bool integer = t == "integer";
    if (auto m = s.find("multipleOf"); m != s.end()) {
        if (!m->is_number() || m->get<double>() != 1.0)
            fail("{}multipleOf: {} cannot be enforced by a grammar (allowed: 1, i.e. an integer)", into(where(path)), m->dump());
        integer = true;
    }
    NumberBounds b;
    auto bound = [&](const char* key, bool& has, double& v) {
        auto it = s.find(key);
        if (it == s.end()) return;
        if (!it->is_number()) fail("{}{}: must be a number (got {})", into(where(path)), key, it->dump());
        v = it->get<double>();
        has = true;
    };
    bound("minimum", b.has_lo, b.lo);
    bound("maximum", b.has_hi, b.hi);
    // exclusiveMinimum: a number (draft 6+) is its own bound; true (draft 4) makes minimum exclusive
    for (const auto& [key, is_lo] : {std::pair{"exclusiveMinimum", true}, std::pair{"exclusiveMaximum", false}}) {
        auto it = s.find(key);
        if (it == s.end()) continue;
        bool& has = is_lo ? b.has_lo : b.has_hi;
        double& v = is_lo ? b.lo : b.hi;
        bool& excl = is_lo ? b.exclusive_lo : b.exclusive_hi;
        if (it->is_boolean()) {
            excl = excl || (it->get<bool>() && has);
            continue;
        }
        if (!it->is_number()) fail("{}{}: must be a number (got {})", into(where(path)), key, it->dump());
        const double x = it->get<double>();
        if (!has || (is_lo ? x >= v : x <= v)) v = x, excl = true;
        has = true;
    }
    if (!b.has_lo && !b.has_hi) return integer ? "integer" : "number";
    const std::string e = number_range(b, integer);
    if (e.empty())
        fail("{}: no {} of at most 16 digits lies within the bounds (minimum/maximum/exclusiveMinimum/"
             "exclusiveMaximum)", where(path), integer ? "integer" : "number");
    return e;
}

// Properties in schema order, required ones first; an optional property may be left out.
std::string JsonSchemaCompiler::object_rule(const ojson& s, const std::string& name, const std::string& path, Ctx& ctx) {
    const std::string w = where(path);
    // the schema's properties, plus required names it does not declare (no copy otherwise)
    static const ojson kNone = ojson::object();
    auto declared_it = s.find("properties");
    const ojson& declared_props = declared_it == s.end() ? kNone : *declared_it;
    if (!declared_props.is_object()) fail("{}properties: must be an object", into(w));
    ojson added = ojson::object();
    std::vector<std::string> required;
    std::unordered_set<std::string> is_required;
    if (auto r = s.find("required"); r != s.end()) {
        if (!r->is_array()) fail("{}required: must be an array of property names", into(w));
        for (const auto& k : *r) {
            if (!k.is_string()) fail("{}required: must be an array of property names", into(w));
            if (is_required.insert(k.get<std::string>()).second) required.push_back(k.get<std::string>());
        }
    }
    auto extra = s.find("additionalProperties");
    const bool closed = (extra != s.end() && extra->is_boolean() && !extra->get<bool>());
    if (auto u = s.find("unevaluatedProperties"); u != s.end() && !(u->is_boolean()))
        fail("{}unevaluatedProperties: only true or false can be enforced", into(w));
    std::unordered_set<std::string> declared;
    for (const auto& item : declared_props.items()) declared.insert(item.key());
    for (const auto& k : required)
        if (!declared.count(k)) {
            if (closed) fail("{}required: '{}' is not in properties and additionalProperties is false", into(w), k);
            // any value the object allows
            added.get_ref<ojson::object_t&>().emplace_back(k, extra != s.end() && !extra->is_boolean() ? *extra : ojson(true));
            declared.insert(k);
        }
    const size_t n_props = declared_props.size() + added.size();
    if (auto m = s.find("minProperties"); m != s.end())
        if (!m->is_number_integer() || m->get<int64_t>() > int64_t(required.size()))
            fail("{}minProperties: {} can be enforced only when the required properties ({}) reach it", into(w), m->dump(),
                 required.size());
    if (auto m = s.find("maxProperties"); m != s.end())
        if (!m->is_number_integer() || (n_props == 0 && !closed) || m->get<int64_t>() < int64_t(n_props))
            fail("{}maxProperties: {} can be enforced only when the declared properties ({}) stay within it", into(w),
                 m->dump(), n_props);
    if (n_props == 0) {
        if (extra == s.end() || extra->is_boolean()) return closed ? "\"{\" ws \"}\"" : "object";
        const std::string v = visit(*extra, name + "-value", path + "/additionalProperties", ctx);
        return fmt::format("\"{{\" ws ( string ws \":\" ws {} ws ( \",\" ws string ws \":\" ws {} ws )* )? \"}}\"", v, v);
    }
    std::vector<std::string> req, opt;  // "key" ws ":" ws value, per property
    for (const ojson* props : std::initializer_list<const ojson*>{&declared_props, &added})
        for (const auto& [k, sub] : props->items()) {
            const std::string v = visit(sub, name + "-" + k, path + "/properties/" + k, ctx);
            const std::string kv = fmt::format("{} ws \":\" ws {}", grammar_literal(ojson(k).dump()), v);
            (is_required.count(k) ? req : opt).push_back(kv);
        }
    std::string body = "\"{\" ws";
    for (size_t i = 0; i < req.size(); ++i) body += (i ? " \",\" ws " : " ") + req[i] + " ws";
    if (!req.empty()) {
        for (const auto& kv : opt) body += " ( \",\" ws " + kv + " ws )?";
        return body + " \"}\"";
    }
    // Only optional properties, linear in their number:
    //   tail_i  ::= ( "," ws kv_i ws )? tail_i+1      (any in-order subset of opt[i..], each after a comma)
    //   first_i ::= kv_i ws tail_i+1 | first_i+1      (the same without the leading comma)
    std::string tail = "\"\"", first = "\"\"";
    for (size_t i = opt.size(); i-- > 0;) {
        const std::string f = fresh(name + "-first"), t = fresh(name + "-tail");
        emit(f, opt[i] + " ws " + tail + " | " + first);
        emit(t, "( \",\" ws " + opt[i] + " ws )? " + tail);
        tail = t, first = f;
    }
    return body + " " + first + " \"}\"";
}

std::string JsonSchemaCompiler::array_rule(const ojson& s, const std::string& name, const std::string& path, Ctx& ctx) {
    const std::string w = where(path);
    const int lo = count_in(s, "minItems", 0, w), hi = count_in(s, "maxItems", -1, w);
    if (hi >= 0 && hi < lo) fail("{}: maxItems {} is below minItems {}", w, hi, lo);
    if (auto u = s.find("uniqueItems"); u != s.end()) {
        if (!u->is_boolean()) fail("{}uniqueItems: must be true or false", into(w));
        if (u->get<bool>() && (hi < 0 || hi > 1))
            fail("{}uniqueItems: true cannot be enforced by a grammar when maxItems is above 1 (allowed: false, or "
                 "maxItems 0 or 1)", into(w));
    }
    // the tuple part and the schema of the items after it (draft 2020-12 and draft 7 spellings)
    ojson prefix = ojson::array();
    const ojson* extra = nullptr;
    std::string extra_path;
    if (s.contains("items") && s["items"].is_array()) {
        prefix = s["items"];
        if (s.contains("additionalItems")) extra = &s["additionalItems"], extra_path = path + "/additionalItems";
    } else {
        if (s.contains("prefixItems")) {
            prefix = s["prefixItems"];
            if (!prefix.is_array()) fail("{}prefixItems: must be an array of schemas", into(w));
        }
        if (s.contains("items")) extra = &s["items"], extra_path = path + "/items";
    }
    const bool no_extra = extra && extra->is_boolean() && !extra->get<bool>();
    const size_t n = prefix.size();
    if (no_extra && size_t(lo) > n) fail("{}: minItems {} needs more items than the {} the schema allows", w, lo, n);
    const std::string item = no_extra ? "" : extra ? visit(*extra, name + "-item", extra_path, ctx) : "value";
    // Extra items after k items already written (k = n, or 0 without a tuple).
    auto extras = [&](size_t k, bool first_item) -> std::string {
        const int need = std::max(0, lo - int(k));
        const int room = hi < 0 ? -1 : std::max(0, hi - int(k));
        if (no_extra || room == 0) return "";
        const std::string sep = first_item ? "" : "\",\" ws ";
        if (first_item) {
            if (need == 0)
                return fmt::format("( {} ws ( \",\" ws {} ws ){} )?", item, item, repeat(0, room < 0 ? -1 : room - 1));
            return fmt::format("{} ws ( \",\" ws {} ws ){}", item, item, repeat(need - 1, room < 0 ? -1 : room - 1));
        }
        return fmt::format("( {}{} ws ){}", sep, item, repeat(need, room));
    };
    if (n == 0) {
        if (hi == 0 || no_extra) return "\"[\" ws \"]\"";
        return "\"[\" ws " + extras(0, true) + " \"]\"";
    }
    // tuple_k: the items from k on, given k written (helper rules, so nesting stays flat)
    std::string next = extras(n, false);
    if (next.empty()) next = "\"\"";
    for (size_t k = n; k-- > 0;) {
        if (hi >= 0 && int(k) >= hi) continue;  // no room for item k
        const std::string v = visit(prefix[k], name + "-" + std::to_string(k), fmt::format("{}/prefixItems/{}", path, k), ctx);
        const std::string rule = fresh(name + "-tuple");
        const std::string seq = (k ? "\",\" ws " : "") + v + " ws " + next;
        emit(rule, int(k) < lo ? seq : "( " + seq + " )?");
        next = rule;
    }
    return "\"[\" ws " + next + " \"]\"";
}

std::string json_schema_to_grammar(const ojson& schema, std::string_view source) {
    return json_schema_to_grammar(schema, source, SchemaLimits{});
}

std::string json_schema_to_grammar(const ojson& schema, std::string_view source, const SchemaLimits& limits) {
    JsonSchemaCompiler c(source, limits);
    const std::string root = c.add(schema, "root");
    return "root ::= " + root + "\n" + c.rules();
}

}  // namespace duet::model::grammar
