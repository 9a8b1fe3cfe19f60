#pragma once
// The results file of `duet tune`: JSON Lines, one object per line. Line 1 is the header
// {"schema": "duet.tune/2", "run": {...}} describing the search (model, lengths, thresholds,
// objective, dimensions and their values, fixed keys); every further line is one evaluated
// point (tune::point_to_json plus "i", its evaluation order). The file is appended to as points
// finish (so an interrupted search keeps its work; a torn last line is dropped on resume) —
// unlike duet's other outputs it is not written to a temp name and renamed.
// --resume reads the points of a file whose header equals this run's and skips them.
// Thread safety: one writer.
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tune/evaluator.h"

namespace duet::tune {

// The results file's schema: /2 writes the verdicts as docs/report-schema.md's VERDICT array.
inline constexpr const char* kResultsSchema = "duet.tune/2";

class ResultsFile {
public:
    // Opens `path` for appending. With `resume` and an existing file, its header must equal
    // `header` (else duet::Error naming the file and the first differing key) and its points
    // are returned by previous(); without `resume` the file is replaced.
    ResultsFile(const std::string& path, const nlohmann::json& header, bool resume);
    ~ResultsFile();
    ResultsFile(const ResultsFile&) = delete;
    ResultsFile& operator=(const ResultsFile&) = delete;

    const std::vector<PointResult>& previous() const { return previous_; }
    void append(const PointResult& r, int64_t index);  // buffered; flush() after each batch
    void flush();

private:
    std::string path_;
    FILE* f_ = nullptr;
    std::vector<PointResult> previous_;
};

}  // namespace duet::tune
