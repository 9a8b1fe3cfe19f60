#include "format/ggml_types.h"

namespace duet::format {

std::string ggml_type_name(uint32_t id) {
    // Index = ggml_type id; empty entries were removed from ggml (Q4_2, Q4_3, Q4_0_4_4, ...).
    static const char* const kNames[] = {
        "f32",    "f16",   "q4_0",  "q4_1",   "",      "",      "q5_0",    "q5_1",   "q8_0",    "q8_1",
        "q2_k",   "q3_k",  "q4_k",  "q5_k",   "q6_k",  "q8_k",  "iq2_xxs", "iq2_xs", "iq3_xxs", "iq1_s",
        "iq4_nl", "iq3_s", "iq2_s", "iq4_xs", "i8",    "i16",   "i32",     "i64",    "f64",     "iq1_m",
        "bf16",   "",      "",      "",       "tq1_0", "tq2_0", "",        "",       "",        "mxfp4",
    };
    if (id < sizeof(kNames) / sizeof(kNames[0]) && kNames[id][0] != '\0') return kNames[id];
    return "unknown";
}

}  // namespace duet::format
