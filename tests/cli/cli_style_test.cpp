// One CLI style for every `duet` subcommand, on the real binary. The commands and their
// options are discovered from --help, so a subcommand or numeric flag added later is walked
// too: every usage error exits 2 with "duet: error:", every numeric flag declares its allowed
// range (cli/flags.h) and refuses absurd values naming the flag and that range.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

struct Result {
    int rc = -1;
    std::string out, err;
};

// Runs build/<binary> with args (shell words).
Result run(const std::string& binary, const std::string& args) {
    const std::string base = std::string(DUET_BINARY_DIR) + "/cli_style." + std::to_string(::getpid());
    const std::string cmd =
        std::string(DUET_BINARY_DIR) + "/" + binary + " " + args + " > " + base + ".out 2> " + base + ".err";
    const int status = std::system(cmd.c_str());
    auto slurp = [](const std::string& p) {
        std::ifstream f(p, std::ios::binary);
        return std::string(std::istreambuf_iterator<char>(f), {});
    };
    Result r{WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(base + ".out"), slurp(base + ".err")};
    std::remove((base + ".out").c_str());
    std::remove((base + ".err").c_str());
    return r;
}

Result duet(const std::string& args) { return run("duet", args); }

// The lines of one section ("Options:", "Subcommands:") of a --help text.
std::vector<std::string> section(const std::string& help, const std::string& title) {
    std::vector<std::string> lines;
    std::istringstream in(help);
    std::string line;
    bool inside = false;
    while (std::getline(in, line)) {
        if (!line.empty() && line[0] != ' ') inside = line.rfind(title, 0) == 0;
        else if (inside && line.size() > 2 && line[2] != ' ') lines.push_back(line);
    }
    return lines;
}

// Every command path ("run", "pim-sim mem", "task submit", ...) that runs something.
std::vector<std::string> command_paths(const std::string& prefix = "") {
    std::vector<std::string> paths;
    const std::string help = duet(prefix + " --help").out;
    const auto subs = section(help, "Subcommands:");
    if (subs.empty() && !prefix.empty()) paths.push_back(prefix.substr(1));
    for (const auto& l : subs) {
        std::istringstream w(l);
        std::string name;
        w >> name;
        for (const auto& p : command_paths(prefix + " " + name)) paths.push_back(p);
    }
    return paths;
}

struct OptionLine {
    std::string name, type, line;
};

std::vector<OptionLine> options_of(const std::string& path) {
    std::vector<OptionLine> opts;
    for (const auto& l : section(duet(path + " --help").out, "Options:")) {
        std::istringstream w(l);
        std::string names, type;
        w >> names >> type;
        std::string longest;  // the long name CLI11 reports in errors
        std::istringstream n(names);
        for (std::string part; std::getline(n, part, ',');)
            if (part.rfind("--", 0) == 0 && longest.empty()) longest = part;
        if (!longest.empty()) opts.push_back({longest, type, l});
    }
    return opts;
}

bool numeric(const std::string& type) {
    return type.rfind("INT", 0) == 0 || type.rfind("UINT", 0) == 0 || type.rfind("FLOAT", 0) == 0;
}

TEST(CliStyle, EveryCommandIsFound) {
    const auto paths = command_paths();
    const std::set<std::string> have(paths.begin(), paths.end());
    for (const char* p : {"run", "serve", "bench", "pim-sim mem", "pim-sim gemv", "pim-sim npu", "gen-model",
                          "logits", "doctor", "task submit"})
        EXPECT_TRUE(have.count(p)) << p;
}

// Parser errors exited 105/106/109 without the prefix.
TEST(CliStyle, UsageErrorsExit2WithThePrefixInEveryCommand) {
    for (const auto& path : command_paths()) {
        const Result r = duet(path + " --no-such-flag 1");
        EXPECT_EQ(r.rc, 2) << path << ": " << r.err;
        EXPECT_EQ(r.err.rfind("duet: error: ", 0), 0u) << path << ": " << r.err;
    }
    Result r = duet("");  // `duet` alone: the usage, exit 2
    EXPECT_EQ(r.rc, 2);
    EXPECT_NE(r.err.find("Usage:"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("duet: error: a subcommand is required"), std::string::npos) << r.err;
    r = duet("no-such-command");  // said "A subcommand is required"
    EXPECT_EQ(r.rc, 2);
    EXPECT_EQ(r.err.rfind("duet: error: unknown command 'no-such-command' (allowed: version, gen-model, run, ", 0), 0u)
        << r.err;
    EXPECT_NE(r.err.find(", serve, "), std::string::npos) << r.err;
    r = duet("--log-level error no-such-command");
    EXPECT_EQ(r.err.rfind("duet: error: unknown command 'no-such-command' (allowed: ", 0), 0u) << r.err;
    r = duet("task no-such-command");
    EXPECT_EQ(r.rc, 2);
    EXPECT_EQ(r.err, "duet: error: unknown command 'no-such-command' (allowed: submit, status, wait, list)\n");
    r = duet("task");
    EXPECT_EQ(r.rc, 2);
    EXPECT_EQ(r.err, "duet: error: a subcommand is required (allowed: submit, status, wait, list)\n");
    r = duet("run -m x.gguf");  // a required option missing
    EXPECT_EQ(r.rc, 2);
    EXPECT_EQ(r.err.rfind("duet: error: ", 0), 0u) << r.err;
    EXPECT_NE(r.err.find("--prompt"), std::string::npos) << r.err;
    EXPECT_EQ(duet("--help").rc, 0);
    EXPECT_EQ(duet("run --help").rc, 0);
    EXPECT_EQ(duet("--version").rc, 0);
}

// Every numeric flag of every command refuses absurd values with exit 2, naming the flag and
// its allowed range. A numeric flag declared without a range fails here ("allowed" missing).
TEST(CliStyle, EveryNumericFlagIsRangeChecked) {
    int checked = 0;
    for (const auto& path : command_paths())
        for (const auto& o : options_of(path)) {
            if (!numeric(o.type)) continue;
            EXPECT_NE(o.type.find(":in"), std::string::npos) << path << " " << o.name << " has no range: " << o.line;
            for (const char* v : {"-99999999999999999999", "99999999999999999999", "1e300", "nan", "abc"}) {
                const Result r = duet(path + " " + o.name + "=" + v);
                EXPECT_EQ(r.rc, 2) << path << " " << o.name << "=" << v << ": " << r.err;
                EXPECT_EQ(r.err.rfind("duet: error: " + o.name + ": ", 0), 0u)
                    << path << " " << o.name << "=" << v << ": " << r.err;
                EXPECT_NE(r.err.find("allowed: "), std::string::npos) << path << " " << o.name << "=" << v;
            }
            ++checked;
        }
    EXPECT_GT(checked, 40);  // run, serve, bench, pim-sim ... together declare dozens
}

// The findings of issue 12, each with its exact message.
TEST(CliStyle, AbsurdValuesFromTheIssueAreErrorsWithTheRange) {
    struct Case {
        const char* args;
        const char* err;
    };
    const Case cases[] = {
        {"pim-sim mem --memory lpddr5 --bytes -5", "duet: error: --bytes: -5 is out of range (allowed: 1 to 2^40)"},
        {"pim-sim mem --memory lpddr5 --bytes 18446744073709551615",
         "duet: error: --bytes: 18446744073709551615 is out of range (allowed: 1 to 2^40)"},
        {"run -m x -p y --threads -1", "duet: error: --threads: -1 is out of range (allowed: 0 to 256)"},
        {"run -m x -p y --threads 1000", "duet: error: --threads: 1000 is out of range (allowed: 0 to 256)"},
        {"run -m x -p y -n -2", "duet: error: --n-predict: -2 is out of range (allowed: -1 to 2^24)"},
        {"run -m x -p y --seed -2", "duet: error: --seed: -2 is out of range (allowed: -1 to 2^63-1)"},
        {"gen-model --arch tiny-llama -o x.gguf --layers 0",
         "duet: error: --layers: 0 is out of range (allowed: 1 to 4096)"},
        {"bench --tbt-reduction-min -1", "duet: error: --tbt-reduction-min: -1 is out of range (allowed: 0 to 1)"},
        {"bench --memory-increase-max 50", "duet: error: --memory-increase-max: 50 is out of range (allowed: 0 to 10)"},
    };
    for (const auto& c : cases) {
        const Result r = duet(c.args);
        EXPECT_EQ(r.rc, 2) << c.args;
        EXPECT_EQ(r.err.substr(0, r.err.find('\n')), c.err) << c.args;
    }
}

TEST(CliStyle, LogLevelWorksBeforeAndAfterTheSubcommand) {
    for (const char* args : {"--log-level nonsense version", "version --log-level nonsense",
                             "pim-sim mem --log-level nonsense --memory lpddr5"}) {
        const Result r = duet(args);
        EXPECT_EQ(r.rc, 2) << args;
        EXPECT_EQ(r.err.rfind("duet: error: ", 0), 0u) << args << ": " << r.err;
        EXPECT_NE(r.err.find("--log-level"), std::string::npos) << args << ": " << r.err;
    }
    EXPECT_EQ(duet("version --log-level error").rc, 0);
}

// Defaults were shown three ways ("(default X)", "(default: X)", "=X"); now only as CLI11's =X.
TEST(CliStyle, DefaultsAreShownOneWayInEveryHelp) {
    for (const auto& path : command_paths())
        for (const auto& o : options_of(path)) {
            EXPECT_EQ(o.line.find("(default"), std::string::npos) << path << ": " << o.line;
            EXPECT_EQ(o.line.find("default:"), std::string::npos) << path << ": " << o.line;
        }
}

// Each flag's help description ("--flag -> text") in one command's --help: the text starts at
// column 30, on the option's line or, when the names are wider, on the next one (CLI11's layout).
// A deprecated alias's note at the end is not part of the meaning.
std::map<std::string, std::string> descriptions_of(const std::string& path) {
    std::map<std::string, std::string> out;
    std::istringstream in(duet(path + " --help").out);
    std::vector<std::string> lines;
    for (std::string l; std::getline(in, l);) lines.push_back(l);
    bool inside = false;
    for (size_t i = 0; i < lines.size(); ++i) {
        const std::string& l = lines[i];
        if (!l.empty() && l[0] != ' ') inside = l.rfind("Options:", 0) == 0;
        if (!inside || l.rfind("  -", 0) != 0) continue;
        std::string names;
        std::istringstream(l) >> names;
        std::string flag;
        std::istringstream n(names);
        for (std::string part; std::getline(n, part, ',') && flag.empty();)
            if (part.rfind("--", 0) == 0) flag = part;
        const bool next = i + 1 < lines.size() && lines[i + 1].size() > 30 &&
                          lines[i + 1].find_first_not_of(' ') == 30;
        std::string text = next ? lines[i + 1].substr(30) : l.size() > 30 ? l.substr(30) : "";
        const size_t note = text.find(": deprecated alias)");
        if (note != std::string::npos) text = text.substr(0, text.rfind(" (", note));
        if (!flag.empty()) out[flag] = text;
    }
    return out;
}

// One flag, one text: a flag that two commands share says the same in both --help texts
// (cli/flags.h `help::`). Listed here are the flags whose meaning is the command's own.
TEST(CliStyle, ASharedFlagHasOneHelpText) {
    const std::set<std::string> own_meaning = {
        "--help",
        "--model",       // run, logits, serve load a GGUF; bench, tune, doctor also take presets and config.json
        "--threads",     // engine threads; gen-model's weight writers; tune's evaluators
        "--seed",        // what is random: weights, sampling, memory traffic, arrivals, restarts
        "--batch",       // bench: concurrent sequences; pim-sim gemv: vectors per weight read
        "--m", "--k",    // pim-sim gemv: the matrix; pim-sim npu: the operator's shape
        "--dtype",       // gen-model: every weight type; pim-sim: the device's operand types
        "--output",      // a model file, logits, a task result
        "--ctx",         // run, serve: the allocated context; bench: a modelled sequence's
        "--kv-blocks",   // serve: the real pool; bench: the modelled machine's
        "--tp", "--pp",  // run, serve: MPI ranks of the engine; bench: modelled devices
    };
    std::map<std::string, std::map<std::string, std::string>> texts;  // flag -> text -> first command
    int shared = 0;
    for (const auto& path : command_paths())
        for (const auto& [flag, text] : descriptions_of(path)) texts[flag].emplace(text, path);
    for (const auto& [flag, by_text] : texts) {
        if (own_meaning.count(flag)) continue;
        ++shared;
        if (by_text.size() > 1) {
            std::string all;
            for (const auto& [text, path] : by_text) all += "\n  " + path + ": " + text;
            ADD_FAILURE() << flag << " has " << by_text.size() << " help texts:" << all;
        }
    }
    EXPECT_GT(shared, 40);  // the walk found the flags (a parser that found none would pass)
    EXPECT_EQ(texts["--settings"].size(), 1u);
    EXPECT_EQ(texts["--settings"].begin()->first, "settings.json (runtime settings; docs/configuration.md)");
}

TEST(CliStyle, RequiredOptionsAreMarked) {
    for (const char* path : {"run", "logits", "serve"}) {
        for (const auto& o : options_of(path))
            if (o.name == "--model") {
                EXPECT_NE(o.line.find("REQUIRED"), std::string::npos) << path << ": " << o.line;
            }
    }
}

// One name for one thing: --npu-dispatch and f16 everywhere; the old spellings still work,
// with a warning.
TEST(CliStyle, DeprecatedSpellingsStillWorkWithAWarning) {
    Result r = duet("pim-sim npu --op gemv --n 64 --k 64 --dispatch graph");
    EXPECT_EQ(r.rc, 0) << r.err;
    EXPECT_NE(r.err.find("--dispatch is deprecated; use --npu-dispatch"), std::string::npos) << r.err;
    EXPECT_NE(r.out.find("dispatch graph"), std::string::npos) << r.out;
    r = duet("pim-sim npu --op gemv --n 64 --k 64 --dtype fp16");
    EXPECT_EQ(r.rc, 0) << r.err;
    EXPECT_NE(r.err.find("'fp16' is a deprecated spelling; use 'f16'"), std::string::npos) << r.err;
    r = duet("pim-sim gemv --pim pim_hbm2_fimdram --m 64 --k 64 --dtype f16 --fidelity analytical");
    EXPECT_EQ(r.rc, 0) << r.err;
    EXPECT_EQ(duet("pim-sim npu --op gemv --n 64 --k 64 --npu-dispatch graph").rc, 0);
    EXPECT_NE(duet("bench --help").out.find("--npu-dispatch"), std::string::npos);
}

// The benchmark programs (bench/): --help prints their usage and exits 0; a bad value exits 2
// naming the flag and what it accepts, instead of a crash (std::stoi threw) or a silent default.
// Skipped when the build has no benchmarks (DUET_BUILD_BENCH=OFF).
TEST(BenchTools, HelpPrintsTheUsageAndBadValuesExit2NamingTheFlag) {
    for (const char* b : {"bench_engine", "bench_server", "bench_norm_fusion", "bench_pim_gemv"})
        if (access((std::string(DUET_BINARY_DIR) + "/" + b).c_str(), X_OK) != 0) GTEST_SKIP() << b << " not built";
    for (const char* b : {"bench_engine", "bench_server", "bench_norm_fusion", "bench_pim_gemv"}) {
        const Result r = run(b, "--help");
        EXPECT_EQ(r.rc, 0) << b;
        EXPECT_EQ(r.out.rfind(std::string("usage: ") + b + " ", 0), 0u) << b << ": " << r.out;
    }
    struct Case {
        const char *binary, *args, *err;
    };
    const Case cases[] = {
        {"bench_server", "--requests abc", "bench_server: error: --requests needs an integer from 1 to 16777216, got 'abc'\n"},
        {"bench_server", "--rounds 0", "bench_server: error: --rounds needs an integer from 1 to 16777216, got '0'\n"},
        {"bench_server", "--clients 1,x", "bench_server: error: --clients needs an integer from 1 to 16777216, got 'x'\n"},
        {"bench_server", "--rounds", "bench_server: error: --rounds needs a value\n"},
        {"bench_engine", "--threads abc m.gguf", "bench_engine: error: --threads needs an integer from 1 to 16777216, got 'abc'\n"},
        {"bench_engine", "--threads 2x m.gguf", "bench_engine: error: --threads needs an integer from 1 to 16777216, got '2x'\n"},
        {"bench_engine", "m.gguf --gen", "bench_engine: error: --gen needs a value\n"},
        {"bench_engine", "--bogus m.gguf",
         "bench_engine: error: unknown option --bogus (allowed: --threads, --prompt, --gen, --op-times, --fuse, --mmap, --help)\n"},
        {"bench_norm_fusion", "--rounds x m.gguf",
         "bench_norm_fusion: error: --rounds needs an integer from 1 to 16777216, got 'x'\n"},
        {"bench_norm_fusion", "--bogus m.gguf",
         "bench_norm_fusion: error: unknown option --bogus (allowed: --threads, --rounds, --prompt, --gen, --help)\n"},
        {"bench_pim_gemv", "x", "bench_pim_gemv: error: rounds needs an integer from 1 to 1048576, got 'x'\n"},
        {"bench_pim_gemv", "3 1 1 q9",
         "bench_pim_gemv: error: dtype 'q9' (allowed: f32, f16, bf16, q8_0, q8_0/i8, q4_0, q5_0, q4_k, q6_k)\n"},
    };
    for (const Case& c : cases) {
        const Result r = run(c.binary, c.args);
        EXPECT_EQ(r.rc, 2) << c.binary << " " << c.args;
        EXPECT_EQ(r.err, c.err) << c.binary << " " << c.args;
        EXPECT_EQ(r.out, "") << c.binary << " " << c.args;
    }
}

}  // namespace
