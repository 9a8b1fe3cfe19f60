#include "config/json_value.h"

namespace duet::config {

bool value_from_json(FieldKind kind, const nlohmann::json& v, Value& out) {
    out = Value{};
    out.kind = kind;
    switch (kind) {
        case FieldKind::INT:
            if (!v.is_number_integer()) return false;
            out.i = v.get<int64_t>();
            return true;
        case FieldKind::DOUBLE:
            if (!v.is_number()) return false;
            out.d = v.get<double>();
            return true;
        case FieldKind::BOOL:
            if (!v.is_boolean()) return false;
            out.b = v.get<bool>();
            return true;
        case FieldKind::STRING:
        case FieldKind::ENUM:
            if (!v.is_string()) return false;
            out.s = v.get<std::string>();
            return true;
    }
    return false;
}

}  // namespace duet::config
