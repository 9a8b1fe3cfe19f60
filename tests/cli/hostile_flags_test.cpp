// Careless and hostile command lines on the real binary (issue: unbounded allocations and flag
// maxima): each is refused before any large allocation or long run, exit 2, with a message that
// names the flag or file and what is allowed.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

namespace {

namespace fs = std::filesystem;

struct Result {
    int rc = -1;
    std::string err;
};

// Runs build/duet with args (shell words) under a 60 s timeout; stderr captured.
Result duet(const std::string& args) {
    const std::string err = std::string(DUET_BINARY_DIR) + "/hostile_flags." + std::to_string(::getpid()) + ".err";
    const std::string cmd = "timeout 60 " + std::string(DUET_BINARY_DIR) + "/duet " + args + " > /dev/null 2> " + err;
    const int status = std::system(cmd.c_str());
    std::ifstream f(err, std::ios::binary);
    Result r{WIFEXITED(status) ? WEXITSTATUS(status) : -1, std::string(std::istreambuf_iterator<char>(f), {})};
    std::remove(err.c_str());
    return r;
}

class HostileFlags : public ::testing::Test {
  protected:
    static void SetUpTestSuite() {
        dir_ = fs::temp_directory_path() / ("duet_hostile_flags_" + std::to_string(::getpid()));
        fs::create_directories(dir_);
        model_ = (dir_ / "tiny.gguf").string();
        ASSERT_EQ(duet("gen-model --arch tiny-llama --dtype f32 --seed 1 -o " + model_).rc, 0);
    }
    static void TearDownTestSuite() { fs::remove_all(dir_); }
    static void expect_error(const std::string& args, const std::string& message) {
        const Result r = duet(args);
        EXPECT_EQ(r.rc, 2) << args << "\n" << r.err;
        EXPECT_EQ(r.err, "duet: error: " + message + "\n") << args;
    }
    static inline fs::path dir_;
    static inline std::string model_;
};

TEST_F(HostileFlags, SamplingAndTemplateErrorsNameTheFlag) {
    expect_error("run -m " + model_ + " -p hi --top-p 0",
                 "--top-p = 0 is not allowed (allowed: above 0 and at most 1; 1 = off)");
    expect_error("run -m " + model_ + " -p hi --chat --chat-template x",
                 "--chat-template = \"x\" is not known (allowed: llama2, llama3, chatml, mistral)");
    expect_error("serve -m " + model_ + " --no-auth --port 0 --chat-template x",
                 "--chat-template = \"x\" is not known (allowed: llama2, llama3, chatml, mistral)");
}

TEST_F(HostileFlags, BenchModelAndSeqLen) {
    expect_error("bench --model ''",
                 "--model is empty (allowed: an architecture preset or a GGUF file; leave the flag out to use settings "
                 "api.model)");
    expect_error("bench -m " + model_ + " --seq-len 100000 --gen-len 4",
                 "--seq-len = 100000 with --gen-len = 4 needs 100004 tokens, more than " + model_ +
                     "'s context of 512 tokens (allowed: --seq-len at most 508)");
}

TEST_F(HostileFlags, PimSimRefusesLayoutsAndWorkItCannotFinish) {
    expect_error("pim-sim gemv --pim pim_hbm2_fimdram --m 64 --k 64 --layout x",
                 "--layout 'x' is not allowed (allowed: row_major_128bit, row_per_unit)");
    expect_error(
        "pim-sim mem --memory lpddr5 --bytes 1099511627776",
        "--bytes = 1099511627776 at --fidelity command simulates about 17179869184 bursts of 64 B: about 21475 "
        "s at the ~0.8 M bursts/s measured on a 2-core machine (allowed: --bytes at most 1073741824 with "
        "--fidelity command, or --fidelity analytical for any size)");
    const Result g = duet("pim-sim gemv --pim pim_hbm2_fimdram --m 16777216 --k 16777216");
    EXPECT_EQ(g.rc, 2) << g.err;
    EXPECT_EQ(g.err.rfind("duet: error: --m 16777216 x --k 16777216 = 2.81e+14 weights at --fidelity command: about "
                          "5989 s",
                          0),
              0u)
        << g.err;
}

TEST_F(HostileFlags, TuneRefusesBadVaryValuesAndForeignResultsFiles) {
    expect_error("tune --vary pim.alignment=7 --budget 2",
                 "--vary: key 'pim.alignment' = 7 is out of range (allowed: 128 to 256)");
    const std::string notes = (dir_ / "notes.txt").string();
    std::ofstream(notes) << "my notes, not a results file\n";
    expect_error("tune --budget 2 --resume --results " + notes,
                 notes +
                     ": --resume: line 1 is not a duet.tune/2 header (the file is not a duet tune results file; "
                     "allowed: a file written by --results, or a path that does not exist yet)");
    std::ifstream f(notes);
    EXPECT_EQ(std::string(std::istreambuf_iterator<char>(f), {}), "my notes, not a results file\n");  // untouched
}

TEST_F(HostileFlags, ServeKvBlocksBeyondMemoryIsRefusedWithTheArithmetic) {
    const Result r = duet("serve -m " + model_ + " --no-auth --port 0 --kv-blocks 1073741824");
    EXPECT_EQ(r.rc, 2) << r.err;
    EXPECT_NE(r.err.find("duet: error: --kv-blocks 1073741824 needs a KV cache of 8192.0 GiB (1073741824 blocks x 8192 "
                         "bytes: 16 positions x 2 layers x K and V) but "),
              std::string::npos)
        << r.err;
}

TEST_F(HostileFlags, SettingsFromDevicesAndFifosAreRefusedAtOnce) {
    expect_error("bench --settings /dev/zero",
                 "/dev/zero: not a regular file (a device or socket; allowed: a regular file)");
    const std::string fifo = (dir_ / "fifo").string();
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    expect_error("bench --settings " + fifo, fifo + ": not a regular file (a FIFO; allowed: a regular file)");
    expect_error("run -m " + fifo + " -p hi", fifo + ": cannot open: not a regular file");  // no wait for a writer
}

TEST_F(HostileFlags, LayerRangesAreBoundedBeforeExpansion) {
    const std::string cfg = (dir_ / "c.toml").string();
    std::ofstream(cfg) << "[scheduling]\nnpu_only_layers = \"0-2000000000\"\n";
    expect_error("bench --config " + cfg,
                 cfg +
                     ": key 'scheduling.npu_only_layers' = \"0-2000000000\" is not allowed (allowed: a list of layers "
                     "and ranges like \"0-1,31\" or \"\", layers 0 to 4095)");
}

// gen-model left its .tmp file behind on SIGTERM; now the handler removes it.
TEST_F(HostileFlags, GenModelRemovesItsTempFileOnSigterm) {
    const std::string out = (dir_ / "big.gguf").string();
    const std::string cmd =
        std::string(DUET_BINARY_DIR) + "/duet gen-model --arch llama2-7b --dtype q4_0 --layers 2 --threads 1 -o " + out;
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        ::execl("/bin/sh", "sh", "-c", ("exec " + cmd + " > /dev/null 2>&1").c_str(), nullptr);
        ::_exit(127);
    }
    bool seen = false;
    for (int i = 0; i < 600 && !seen; ++i) {
        seen = fs::exists(out + ".tmp");
        if (!seen) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ASSERT_TRUE(seen) << "no " << out << ".tmp appeared";
    ::kill(pid, SIGTERM);
    int status = 0;
    ::waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM) << status;
    EXPECT_FALSE(fs::exists(out + ".tmp"));
    EXPECT_FALSE(fs::exists(out));
}

// A model larger than the free space was written until the disk was full.
TEST_F(HostileFlags, GenModelChecksFreeSpace) {
    if (!fs::exists("/dev/shm")) GTEST_SKIP() << "no /dev/shm";
    const std::string out = "/dev/shm/duet_hostile_" + std::to_string(::getpid()) + ".gguf";
    const Result r = duet("gen-model --arch llama2-70b --dtype f32 --threads 1 -o " + out);  // 276 GB
    EXPECT_EQ(r.rc, 2) << r.err;
    EXPECT_EQ(r.err.rfind("duet: error: -o " + out + ": the model needs ", 0), 0u) << r.err;
    EXPECT_NE(r.err.find(" GB free (allowed: a smaller --dtype or --layers, or another -o)"), std::string::npos)
        << r.err;
    EXPECT_FALSE(fs::exists(out + ".tmp"));
}

}  // namespace
