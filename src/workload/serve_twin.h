#pragma once
// The modelled twin of `duet serve` (serving/batch_twin.h) built from what the server loaded:
// the served model's architecture (its GGUF hparams), settings.json and config.toml, timed
// under the same baseline (npu_only) and target (npu_pim_coop) as the `duet` object's by-size
// figures, so the two can be compared request by request.
// Thread safety: the result is a serving::BatchTwin (its own rules).
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "config/coop_config.h"
#include "config/settings.h"
#include "serving/batch_twin.h"

namespace duet::workload {

struct ServeTwin {
    std::shared_ptr<serving::BatchTwin> twin;  // null when the machine cannot be modelled
    std::string unavailable;                   // then why (the loader's or the bench's error)
};

// `model`: the served GGUF file; `dispatch`: the modelled NPU's dispatch mode.
ServeTwin make_serve_twin(const config::Settings& st, const config::CoopConfig& cfg, const std::string& model,
                          const std::string& dispatch);

// The `in_batch` member of a response's `duet` object for sequence `id`: {"steps": steps
// observed so far, "baseline"/"target": {"policy", "ttft_ms", "tpot_ms", "tokens"}}, or
// {"error": why} when the twin is missing or no longer holds the sequence.
nlohmann::json in_batch_json(const ServeTwin& t, int64_t id);

}  // namespace duet::workload
