#pragma once
// Names of all ggml tensor types by their numeric id (ggml.h `enum ggml_type`), including the
// ones duet cannot read, so that an error can say "q5_k (ggml type 13)" instead of a number.
#include <cstdint>
#include <string>

namespace duet::format {

// "q5_k", "iq2_xxs", ...; "unknown" for ids ggml never assigned or has retired.
std::string ggml_type_name(uint32_t id);

}  // namespace duet::format
