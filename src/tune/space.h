#pragma once
// The design space `duet tune` searches: one Dimension per knob with a modelled effect on
// the bench report, each with the discrete values tried. A Point is one value index per
// dimension; applying it to a base (settings, config, bench inputs) yields a configuration
// that goes through the same validation as the config loader (config::check_coop_config).
//
// Dimension names are the config keys' dotted names ("reorder.block_size_kb",
// "runtime.batch_size") plus two that are not config keys: "npu.dispatch" (the NPU's host
// launch mode, `duet bench --npu-dispatch`) and "hw.pair" (NPU soc_version + PIM preset,
// "Ascend910B+pim_hbm2_fimdram"). Values are written as in the files: 128, "NZ", true.
// Thread safety: plain values; immutable once built.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "config/coop_config.h"
#include "config/settings.h"
#include "workload/bench_inputs.h"

namespace duet::tune {

struct Dimension {
    std::string name;                 // dotted key, "npu.dispatch" or "hw.pair"
    std::vector<std::string> values;  // JSON literals: 128, "NZ", true
};

using Point = std::vector<int>;  // value index per dimension

// The configuration one point describes.
struct Candidate {
    config::Settings st;
    config::CoopConfig cfg;
    workload::TraceBenchInputs in;
};

struct SpaceOptions {
    bool hw_pairs = false;                          // add hw.pair: every NPU preset x PIM preset
    std::map<std::string, std::string> fixed;       // dotted key -> JSON literal: never swept
    std::map<std::string, std::vector<std::string>> values;  // replace a dimension's values
    std::vector<std::string> only;                  // non-empty: sweep just these dimensions
};

class Space {
public:
    // The default dimensions for a model of `n_layer` layers, minus the fixed keys, with the
    // overrides of `opt`. Throws duet::Error naming an unknown key or a bad value.
    Space(const SpaceOptions& opt, int64_t n_layer);

    const std::vector<Dimension>& dims() const { return dims_; }
    double size() const;  // number of points (a double: large spaces overflow int64)
    // The point whose values equal the base configuration where the base's value is one of
    // the dimension's values (else index 0).
    Point base_point(const Candidate& base) const;
    // base with the point's values applied, then fixed keys; layout follows alignment (and an
    // explicit fp16/bf16 pim.precision the runtime dtype; "auto" stays) unless fixed. Throws duet::Error for a combination the
    // config loader refuses (its message, with `where` as the source).
    Candidate apply(const Candidate& base, const Point& p, const std::string& where = "tune point") const;
    // "pim.alignment=128 reorder.block_size_kb=16 ..." (stable; used as the results-file key).
    std::string key(const Point& p) const;
    // {"pim.alignment": 128, ...}
    nlohmann::json values_json(const Point& p) const;
    // The point a values_json() object describes; false when a value is not in the space.
    bool point_from_json(const nlohmann::json& values, Point& out) const;
    const std::map<std::string, std::string>& fixed() const { return fixed_; }

private:
    std::vector<Dimension> dims_;
    std::map<std::string, std::string> fixed_;
};

// Applies one dotted key = JSON literal to a candidate through the loaders' field tables (same
// type/range checks and wording as the files; `where` names the source in errors).
void set_knob(Candidate& c, const std::string& dotted, const std::string& json_literal, const std::string& where);

}  // namespace duet::tune
