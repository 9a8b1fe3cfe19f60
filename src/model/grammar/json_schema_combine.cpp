// JsonSchemaCompiler's combinators: allOf merged into one schema, and the disjointness proof
// oneOf needs (json_schema.h; docs/grammar.md lists what merges and what is refused).
#include <fmt/format.h>

#include <algorithm>
#include <unordered_set>

#include "model/grammar/json_schema_detail.h"

namespace duet::model::grammar {

using namespace detail;

// Follows $ref (up to max_depth hops) to the schema that constrains.
const ojson& JsonSchemaCompiler::deref(const ojson& s, const std::string& path, const Ctx& ctx) const {
    const ojson* x = &s;
    for (int hops = 0; x->is_object() && x->contains("$ref") && (*x)["$ref"].is_string() && hops < limits_.max_depth; ++hops)
        x = &resolve((*x)["$ref"].get<std::string>(), path, ctx);
    return *x;
}

// The JSON types a schema can match as the validator sees it (kAll when unsure).
unsigned JsonSchemaCompiler::type_bits(const ojson& schema, const std::string& path, const Ctx& ctx, int depth) const {
    const ojson& s = deref(schema, path, ctx);
    if (s.is_boolean()) return s.get<bool>() ? unsigned(kAll) : 0u;
    if (!s.is_object() || depth > limits_.max_depth) return kAll;
    unsigned bits = kAll;
    if (auto t = s.find("type"); t != s.end()) {
        unsigned tb = 0;
        for (const auto& name : type_list(*t)) tb |= type_bit(name);
        bits &= tb;
    }
    if (auto c = s.find("const"); c != s.end()) bits &= value_bit(*c);
    if (auto e = s.find("enum"); e != s.end() && e->is_array()) {
        unsigned eb = 0;
        for (const auto& v : *e) eb |= value_bit(v);
        bits &= eb;
    }
    for (const char* key : {"anyOf", "oneOf"})
        if (auto a = s.find(key); a != s.end() && a->is_array()) {
            unsigned ab = 0;
            for (const auto& b : *a) ab |= type_bits(b, path, ctx, depth + 1);
            bits &= ab;
        }
    if (auto a = s.find("allOf"); a != s.end() && a->is_array())
        for (const auto& b : *a) bits &= type_bits(b, path, ctx, depth + 1);
    if (auto n = s.find("nullable"); n != s.end() && n->is_boolean() && n->get<bool>()) bits |= kNull;
    return bits;
}

// True when no value can match both schemas: their types are disjoint, or both are objects
// that require a property whose const/enum values differ (a discriminated union).
bool JsonSchemaCompiler::disjoint(const ojson& a, const ojson& b, const std::string& path, const Ctx& ctx) const {
    const unsigned common = type_bits(a, path, ctx, 0) & type_bits(b, path, ctx, 0);
    if (common == 0) return true;
    if (common != kObj) return false;
    const ojson& x = deref(a, path, ctx);
    const ojson& y = deref(b, path, ctx);
    auto values = [&](const ojson& o, const std::string& key, std::vector<ojson>& out) {
        auto req = o.find("required");
        auto props = o.find("properties");
        if (req == o.end() || !req->is_array() || props == o.end() || !props->is_object()) return false;
        if (std::find(req->begin(), req->end(), ojson(key)) == req->end() || !props->contains(key)) return false;
        const ojson& p = deref((*props)[key], path, ctx);
        if (!p.is_object()) return false;
        if (auto c = p.find("const"); c != p.end()) return out.push_back(*c), true;
        if (auto e = p.find("enum"); e != p.end() && e->is_array()) return out.assign(e->begin(), e->end()), true;
        return false;
    };
    if (!x.is_object() || !x.contains("properties") || !x["properties"].is_object()) return false;
    for (const auto& item : x["properties"].items()) {
        std::vector<ojson> vx, vy;
        if (!values(x, item.key(), vx) || !values(y, item.key(), vy)) continue;
        if (std::none_of(vx.begin(), vx.end(), [&](const ojson& v) { return std::find(vy.begin(), vy.end(), v) != vy.end(); }))
            return true;
    }
    return false;
}

ojson JsonSchemaCompiler::merge_all_of(const ojson& s, const std::string& path, Ctx& ctx) {
    DepthGuard guard(ctx.depth, limits_.max_depth, where(path));
    const std::string w = into(where(path)) + "allOf";
    const ojson& members = s["allOf"];
    if (!members.is_array() || members.empty()) fail("{}: must be a non-empty array", w);
    charge_copy(s, path, ctx);
    ojson merged = without(s, {"allOf"});
    std::vector<std::unordered_set<std::string>> closed;  // property sets of members with additionalProperties false
    auto note_closed = [&](const ojson& x) {
        auto a = x.find("additionalProperties");
        if (a != x.end() && a->is_boolean() && !a->get<bool>()) {
            std::unordered_set<std::string> keys;
            for (const auto& [k, _] : x.value("properties", ojson::object()).items()) keys.insert(k);
            closed.push_back(std::move(keys));
        }
    };
    note_closed(merged);
    for (size_t i = 0; i < members.size(); ++i) {
        charge_copy(members[i], path, ctx);
        ojson x = members[i];
        for (int hops = 0; x.is_object() && x.contains("$ref"); ++hops) {
            if (hops >= limits_.max_depth) fail("{}{}: $ref chain longer than {} (a reference cycle?)", into(w), i, limits_.max_depth);
            if (!x["$ref"].is_string()) fail("{}{}/$ref: must be a string", into(w), i);
            const ojson& target = resolve(x["$ref"].get<std::string>(), path, ctx);
            charge_copy(target, path, ctx);
            const ojson rest = without(x, {"$ref"});
            x = only_annotations(rest) ? target : ojson{{"allOf", ojson::array({target, rest})}};
        }
        if (x.is_boolean() && x.get<bool>()) continue;
        if (!x.is_object()) fail("{}{}: a schema must be an object", into(w), i);
        if (x.contains("allOf")) x = merge_all_of(x, fmt::format("{}/allOf/{}", path, i), ctx);
        if (x.contains("anyOf") || x.contains("oneOf") || x.contains("nullable"))
            fail("{}{}: anyOf/oneOf/nullable inside allOf cannot be merged", into(w), i);
        note_closed(x);
        for (const auto& [k, v] : x.items()) {
            if (is_annotation(k) && merged.contains(k)) continue;
            if (!merged.contains(k) || merged[k] == v) {
                merged[k] = v;
                continue;
            }
            ojson& m = merged[k];
            if (k == "properties" && m.is_object() && v.is_object()) {
                for (const auto& [p, ps] : v.items())
                    if (!m.contains(p) || m[p] == ps) m[p] = ps;
                    else {
                        charge_copy(m[p], path, ctx);
                        charge_copy(ps, path, ctx);
                        m[p] = ojson{{"allOf", ojson::array({m[p], ps})}};
                    }
            } else if (k == "required" && m.is_array() && v.is_array()) {
                for (const auto& r : v)
                    if (std::find(m.begin(), m.end(), r) == m.end()) m.push_back(r);
            } else if (k == "type") {
                std::vector<std::string> a = type_list(m), b = type_list(v), both;
                for (const auto& t : a)
                    for (const auto& u : b)
                        if (t == u || (t == "integer" && u == "number")) both.push_back(t);
                        else if (t == "number" && u == "integer") both.push_back(u);
                if (both.empty()) fail("{}{}: the types {} and {} exclude each other", into(w), i, m.dump(), v.dump());
                m = both.size() == 1 ? ojson(both[0]) : ojson(both);
            } else if ((k == "minimum" || k == "minLength" || k == "minItems" || k == "exclusiveMinimum") &&
                       m.is_number() && v.is_number()) {
                if (v > m) m = v;
            } else if ((k == "maximum" || k == "maxLength" || k == "maxItems" || k == "exclusiveMaximum") &&
                       m.is_number() && v.is_number()) {
                if (v < m) m = v;
            } else if ((k == "additionalProperties" || k == "unevaluatedProperties") &&
                       ((m.is_boolean() && !m.get<bool>()) || (v.is_boolean() && !v.get<bool>()))) {
                m = false;
            } else if (k == "enum" && m.is_array() && v.is_array()) {
                ojson both = ojson::array();
                for (const auto& e : m)
                    if (std::find(v.begin(), v.end(), e) != v.end()) both.push_back(e);
                if (both.empty()) fail("{}{}: the enums have no value in common", into(w), i);
                m = both;
            } else {
                fail("{}{}: '{}' differs between the schemas and cannot be merged", into(w), i, k);
            }
        }
    }
    // A member closed to other properties forbids the ones only the others declare.
    if (!closed.empty() && merged.contains("properties")) {
        ojson kept = ojson::object();
        for (const auto& item : merged["properties"].items()) {
            const std::string& k = item.key();
            if (std::all_of(closed.begin(), closed.end(), [&](const auto& c) { return c.count(k) > 0; }))
                kept[k] = item.value();
            else if (merged.contains("required") &&
                     std::find(merged["required"].begin(), merged["required"].end(), k) != merged["required"].end())
                fail("{}: '{}' is required but a member with additionalProperties false does not allow it", w, k);
        }
        merged["properties"] = kept;
        merged["additionalProperties"] = false;
    }
    return merged;
}

}  // namespace duet::model::grammar
