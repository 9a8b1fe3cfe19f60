// libFuzzer target for the GGUF reader: any byte string must either parse or end in one
// duet::Error; never a crash, a sanitizer report, a hang or a huge allocation. A parsed file
// is then walked through every typed getter and hparams_from_gguf, which must hold the same
// promise. Built only with -DDUET_FUZZ=ON and clang (scripts/fuzz.sh).
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/error.h"
#include "format/gguf.h"
#include "model/hparams.h"

namespace {

template <typename F>
void ignore_errors(F&& f) {
    try {
        f();
    } catch (const duet::Error&) {
    }
}

void walk(const duet::format::GgufFile& f) {
    for (const auto& kv : f.metadata()) {
        const std::string& key = kv.first;  // (clang 14 cannot capture structured bindings)
        ignore_errors([&] { (void)f.get_string(key); });
        ignore_errors([&] { (void)f.get_int(key); });
        ignore_errors([&] { (void)f.get_float(key); });
        ignore_errors([&] { (void)f.get_bool(key); });
        ignore_errors([&] { (void)f.get_string_array(key); });
        ignore_errors([&] { (void)f.get_float_array(key); });
        ignore_errors([&] { (void)f.get_int_array(key); });
    }
    // Touch the first and last byte of every tensor: they must lie inside the mapping.
    volatile uint8_t sink = 0;
    for (const auto& t : f.tensors()) {
        sink = sink ^ t.data[0] ^ t.data[t.n_bytes - 1];
        (void)f.tensor(t.name);
    }
    ignore_errors([&] { (void)duet::model::hparams_from_gguf(f); });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    try {
        duet::format::GgufFile f = duet::format::GgufFile::open_memory(data, size, "fuzz.gguf");
        walk(f);
    } catch (const duet::Error&) {
    }
    return 0;
}
