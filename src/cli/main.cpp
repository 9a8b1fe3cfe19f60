// The single `duet` binary: parses the command line and dispatches to a subcommand.
//
// One CLI style for every subcommand: a usage error (unknown flag, bad or out-of-range value,
// missing required option, no subcommand) prints "duet: error: ..." and exits 2, like a
// duet::Error from a command; --help and --version exit 0; --log-level works before or after
// the subcommand. Numeric flags and defaults are declared through cli/flags.h.
#include <cstdio>
#include <exception>
#include <string>

#include "cli/commands.h"
#include "core/error.h"
#include "core/log.h"

int main(int argc, char** argv) {
    CLI::App app{"duet: LLM inference engine and NPU + PIM co-inference simulator", "duet"};
    app.require_subcommand(1);
    // Subcommands (registered below, which inherit this) hand options they do not know to
    // their parent: `duet run --log-level debug ...` reaches the root's --log-level.
    app.fallthrough();
    duet::set_log_level("warn");
    app.add_option_function<std::string>(
           "--log-level", [](const std::string& level) { duet::set_log_level(level, "--log-level"); },
           "Log verbosity on stderr: trace, debug, info, warn, error, off (before or after the subcommand)")
        ->default_str("warn")
        ->trigger_on_parse();

    duet::cli::register_version(app);
    // models
    duet::cli::register_gen_model(app);

    // generation
    duet::cli::register_run(app);
    duet::cli::register_logits(app);

    // device models: pim-sim mem|gemv, calibrate
    duet::cli::register_pim_sim(app);
    duet::cli::register_calibrate(app);

    // pim-sim npu
    duet::cli::register_pim_sim_npu(app);
    duet::cli::register_pim_sim_version(app);

    // the co-inference comparison; checks
    duet::cli::register_bench(app);
    duet::cli::register_doctor(app);
    // server
    duet::cli::register_serve(app);
    duet::cli::register_client_commands(app);
    // tune
    duet::cli::register_tune(app);

    if (argc <= 1) {  // `duet` alone: the usage, as a usage error
        std::fputs(app.help().c_str(), stderr);
        std::fprintf(stderr, "duet: error: a subcommand is required (see the list above)\n");
        return 2;
    }
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForAllHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForVersion& e) {
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        // `duet nonsense`, `duet task nonsense`: CLI11 reports "A subcommand is required"; name the
        // word and the commands allowed where it stands.
        const CLI::App* at = &app;
        while (!at->get_subcommands().empty()) at = at->get_subcommands().front();
        const auto commands = at->get_subcommands([](const CLI::App* s) { return !s->get_group().empty(); });
        const auto extra = app.remaining(true);
        if (dynamic_cast<const CLI::RequiredError*>(&e) && !commands.empty()) {
            std::string names;
            for (const CLI::App* s : commands) names += (names.empty() ? "" : ", ") + s->get_name();
            if (!extra.empty() && extra.front().rfind('-', 0) != 0)
                std::fprintf(stderr, "duet: error: unknown command '%s' (allowed: %s)\n", extra.front().c_str(),
                             names.c_str());
            else
                std::fprintf(stderr, "duet: error: a subcommand is required (allowed: %s)\n", names.c_str());
            return 2;
        }
        std::fprintf(stderr, "duet: error: %s\n", e.what());
        return 2;
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
