#include "tune/results_file.h"

#include <filesystem>
#include <fstream>

#include "core/error.h"

namespace duet::tune {

ResultsFile::ResultsFile(const std::string& path, const nlohmann::json& header, bool resume) : path_(path) {
    std::ifstream in(path);
    bool keep = false;
    size_t good_bytes = 0;
    if (resume && in) {
        std::string line;
        int64_t n = 0;
        while (std::getline(in, line)) {
            const bool complete = !in.eof();
            nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
            // Line 1 must be the header: a file that is not a results file is never overwritten.
            if (n == 0 && (j.is_discarded() || !j.is_object()))
                fail("{}: --resume: line 1 is not a {} header (the file is not a duet tune results file; "
                     "allowed: a file written by --results, or a path that does not exist yet)",
                     path, kResultsSchema);
            if (j.is_discarded() || !complete) break;  // a torn last line: redo that point
            if (n++ == 0) {
                if (j.value("schema", "") != kResultsSchema)
                    fail("{}: --resume: line 1 is not a {} header (it says schema {}; allowed: a file written by "
                         "this duet's --results)",
                         path, kResultsSchema, j.contains("schema") ? j["schema"].dump() : "missing");
                for (const auto& [k, v] : header["run"].items())
                    if (!j["run"].contains(k) || j["run"][k] != v)
                        fail("{}: --resume: the file was written by a different search ('{}' = {} there, {} now); "
                             "allowed: the same flags, or a new results file", path, k,
                             j["run"].contains(k) ? j["run"][k].dump() : "missing", v.dump());
                keep = true;
            } else {
                PointResult r = point_from_json(j);
                previous_.push_back(std::move(r));
            }
            good_bytes += line.size() + 1;
        }
    }
    if (keep) {
        std::error_code ec;
        std::filesystem::resize_file(path, good_bytes, ec);
        f_ = std::fopen(path.c_str(), "ab");
    } else {
        f_ = std::fopen(path.c_str(), "wb");
        if (f_) std::fprintf(f_, "%s\n", header.dump().c_str());
    }
    if (!f_) fail("{}: cannot write the results file", path);
    std::fflush(f_);
}

ResultsFile::~ResultsFile() {
    if (f_) std::fclose(f_);
}

void ResultsFile::append(const PointResult& r, int64_t index) {
    nlohmann::json j = {{"i", index}};
    j.update(point_to_json(r));
    const std::string line = j.dump() + "\n";
    if (std::fwrite(line.data(), 1, line.size(), f_) != line.size()) fail("{}: write failed", path_);
}

void ResultsFile::flush() {
    if (std::fflush(f_) != 0) fail("{}: write failed", path_);
}

}  // namespace duet::tune
