// The single `duet` binary: parses the command line and dispatches to a subcommand.
#include <cstdio>
#include <exception>

#include "cli/commands.h"
#include "core/error.h"
#include "core/log.h"

int main(int argc, char** argv) {
    CLI::App app{"duet: LLM inference engine and NPU + PIM co-inference simulator", "duet"};
    app.require_subcommand(1);
    duet::set_log_level("warn");
    app.add_option_function<std::string>(
           "--log-level", [](const std::string& level) { duet::set_log_level(level, "--log-level"); },
           "Log verbosity on stderr: trace, debug, info, warn (default), error, off")
        ->trigger_on_parse();

    duet::cli::register_version(app);
    // format branch
    duet::cli::register_gen_model(app);

    // runtime branch
    duet::cli::register_run(app);
    duet::cli::register_logits(app);

    // dram branch
    duet::cli::register_pim_sim(app);

    // npu branch
    duet::cli::register_pim_sim_npu(app);
    duet::cli::register_pim_sim_version(app);

    // sim branch
    duet::cli::register_bench(app);
    duet::cli::register_doctor(app);
    // server
    duet::cli::register_serve(app);
    duet::cli::register_client_commands(app);
    // tune
    duet::cli::register_tune(app);


    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return app.exit(e);
    } catch (const duet::cli::ExitStatus& e) {
        std::fflush(stdout);
        return e.code;
    } catch (const duet::Error& e) {
        std::fprintf(stderr, "duet: error: %s\n", e.what());
        return 2;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "duet: error: %s\n", e.what());
        return 1;
    }
    return 0;
}
