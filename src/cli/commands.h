#pragma once
// Every `duet` subcommand registers itself here, from one explicit list in main.cpp.
// A register function adds its CLI11 subcommand and a callback; the callback throws
// duet::Error for bad input (main prints it and exits 2).
#include <CLI/CLI.hpp>

#define DUET_VERSION_STRING "0.1.0"

namespace duet::cli {

// Thrown by a command to end with this exit status after printing its output (e.g. `duet
// bench` exits 3 when a verdict is NOT MET); main returns `code`.
struct ExitStatus {
    int code = 0;
};

void register_version(CLI::App& app);  // also `duet --version`
// `duet pim-sim --version`; call after pim-sim is registered.
void register_pim_sim_version(CLI::App& app);

// models
void register_gen_model(CLI::App& app);

// generation
void register_run(CLI::App& app);
void register_logits(CLI::App& app);

// device models: pim-sim mem|gemv, calibrate
// `pim-sim` with `mem` and `gemv`; registered before `pim-sim npu` (which adds itself to it).
void register_pim_sim(CLI::App& app);
void register_calibrate(CLI::App& app);  // fidelity: models vs public references

// pim-sim npu
// `pim-sim npu`; creates the `pim-sim` parent when register_pim_sim has not (either order works).
void register_pim_sim_npu(CLI::App& app);

// the co-inference comparison; checks
void register_bench(CLI::App& app);
void register_doctor(CLI::App& app);

// server
void register_serve(CLI::App& app);
void register_client_commands(CLI::App& app);  // ping, task

// tune
void register_tune(CLI::App& app);

}  // namespace duet::cli
