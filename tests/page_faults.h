#pragma once
// Page faults taken by reading a mapping: what a first request pays for weights not yet
// mapped in (the warm-up tests of format/ and runtime/).
#include <sys/resource.h>
#include <unistd.h>

#include <cstdint>

#include "format/mapped_file.h"

namespace duet::test {

inline int64_t page_faults() {
    rusage ru{};
    ::getrusage(RUSAGE_SELF, &ru);
    return int64_t(ru.ru_minflt) + int64_t(ru.ru_majflt);
}

// Reads one byte of every page of `m`; returns the page faults it took. Not instrumented by
// ASan: its check of each read would fault in the shadow pages (one per 8 pages read), which
// are not the file's.
__attribute__((no_sanitize("address"))) inline int64_t faults_reading(const format::MappedFile& m) {
    const size_t page = size_t(::sysconf(_SC_PAGESIZE));
    const int64_t f0 = page_faults();
    volatile uint8_t sink = 0;
    for (size_t i = 0; i < m.size_bytes(); i += page) sink = sink + m.data()[i];
    (void)sink;
    return page_faults() - f0;
}

}  // namespace duet::test
