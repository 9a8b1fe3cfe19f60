#pragma once
// A JSON value (a task payload, a tune --fix) as a config field Value of the field's kind,
// before range validation (config::validate_value). Shared by the tasks API and tune so both
// accept exactly what the config loader accepts.
#include <nlohmann/json.hpp>

#include "config/field.h"

namespace duet::config {

// False when v does not have the JSON type the kind needs (integer, number, boolean, string).
bool value_from_json(FieldKind kind, const nlohmann::json& v, Value& out);

}  // namespace duet::config
