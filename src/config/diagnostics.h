#pragma once
// Where configuration errors go. Normally the first error throws duet::Error (the CLI prints
// it and exits 2); in collect-all mode (`duet doctor`) every error is recorded and loading
// continues with the default for the bad key, so the user sees all problems at once.
// Not thread-safe; one per load.
#include <string>
#include <vector>

namespace duet::config {

class Diagnostics {
public:
    explicit Diagnostics(bool collect_all = false) : collect_all_(collect_all) {}
    // Throws duet::Error(msg) unless collecting.
    void error(std::string msg);
    // Recorded, and logged as a warning unless collecting (doctor prints them itself).
    void warn(std::string msg);
    bool collecting() const { return collect_all_; }
    const std::vector<std::string>& errors() const { return errors_; }
    const std::vector<std::string>& warnings() const { return warnings_; }

private:
    bool collect_all_;
    std::vector<std::string> errors_, warnings_;
};

}  // namespace duet::config
