#pragma once
// Files `duet bench` writes. All are written to "<path>.tmp.<pid>" and renamed, so a reader
// never sees a half-written file; errors name the path.
//  - JSON report (docs/report-schema.md)
//  - Chrome/Perfetto trace: one process per run (baseline, target), one thread (track) per
//    unit: NPU, PIM, NPU conversion, host launch; "X" complete events in microseconds
//  - SVG chart: TBT per token for both runs and the peak-memory breakdown as stacked bars
#include <string>

#include "sim/report.h"

namespace duet::sim {

void write_file_atomic(const std::string& path, const std::string& text);
std::string chrome_trace_json(const BenchReport& r);  // needs timelines recorded with events
std::string svg_chart(const BenchReport& r);

}  // namespace duet::sim
