// `duet gen-model` end to end through the real binary (skipped when build/duet is not built).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>

#include "format/gguf.h"
#include "format/gguf_writer.h"
#include "model/arch_presets.h"
#include "model/hparams.h"

namespace duet::model {
namespace {

namespace fs = std::filesystem;

struct Result {
    int exit_code;
    std::string out;  // stdout and stderr
};

Result run(const std::string& args) {
    const std::string cmd = std::string(DUET_BINARY_DIR) + "/duet " + args + " 2>&1";
    Result r{-1, ""};
    FILE* p = ::popen(cmd.c_str(), "r");
    if (!p) return r;
    std::array<char, 4096> buf;
    size_t n;
    while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
    const int status = ::pclose(p);
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return r;
}

class GenModelCli : public ::testing::Test {
  protected:
    void SetUp() override {
        if (!fs::exists(std::string(DUET_BINARY_DIR) + "/duet")) GTEST_SKIP() << "duet binary not built";
        dir_ = fs::temp_directory_path() / ("duet_genmodel_cli_" + std::to_string(::getpid()));
        fs::create_directories(dir_);
    }
    void TearDown() override {
        if (!dir_.empty()) fs::remove_all(dir_);
    }
    fs::path dir_;
};

TEST_F(GenModelCli, WritesAReadableModel) {
    const std::string out = (dir_ / "m.gguf").string();
    Result r = run("gen-model --arch tiny-qwen2 --dtype q8_0 --seed 7 --layers 3 -o " + out);
    ASSERT_EQ(r.exit_code, 0) << r.out;
    EXPECT_NE(r.out.find("wrote " + out + ": preset tiny-qwen2 (arch qwen2), 3 layers"), std::string::npos) << r.out;
    format::GgufFile f = format::GgufFile::open(out);
    EXPECT_EQ(hparams_from_gguf(f).n_layer, 3);
    EXPECT_EQ(f.tensor("blk.0.attn_q.weight").dtype, DType::Q8_0);
    EXPECT_FALSE(fs::exists(out + ".tmp"));
}

TEST_F(GenModelCli, BadArgumentsExitWith2AndAClearLine) {
    Result r = run("gen-model --arch llama9 -o " + (dir_ / "x.gguf").string());
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.out,
              "duet: error: unknown --arch 'llama9' (known: tiny-llama, tiny-llama3, tiny-mistral, tiny-qwen2, "
              "small-llama, tiny-mixtral, tiny-qwen2moe, tiny-qwen3moe, tiny-deepseek2, tiny-deepseek3, tiny-deepseek2-yarn, "
              "llama2-7b, llama2-13b, llama2-70b, llama3-8b, llama3-70b, mistral-7b, qwen2.5-0.5b, qwen2.5-7b, "
              "qwen2.5-72b, bench-1b, mixtral-8x7b, qwen3-30b-a3b, qwen3-235b-a22b, deepseek-v3)\n");
    r = run("gen-model --arch tiny-llama --dtype q5_k -o " + (dir_ / "x.gguf").string());
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.out, "duet: error: unknown --dtype 'q5_k' (allowed: f32, f16, bf16, q8_0, q4_0, q5_0, q4_k, q6_k)\n");
    r = run("gen-model --arch tiny-llama");
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.out, "duet: error: -o FILE.gguf is required\n");
    r = run("gen-model --arch tiny-llama --layers 0 -o " + (dir_ / "x.gguf").string());
    EXPECT_EQ(r.exit_code, 2);  // leave --layers out for the preset's count
    EXPECT_EQ(r.out, "duet: error: --layers: 0 is out of range (allowed: 1 to 4096)\n");
    r = run("gen-model --arch tiny-llama --layers -3 -o " + (dir_ / "y.gguf").string());
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.out, "duet: error: --layers: -3 is out of range (allowed: 1 to 4096)\n");
    EXPECT_FALSE(fs::exists(dir_ / "y.gguf"));
}

TEST_F(GenModelCli, HelpShowsAnExampleThatWorks) {
    Result r = run("gen-model --help");
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_NE(r.out.find("duet gen-model --arch tiny-llama --dtype f16 --seed 1 -o tiny.gguf"), std::string::npos);
    r = run("gen-model --arch tiny-llama --dtype f16 --seed 1 -o " + (dir_ / "tiny.gguf").string());
    EXPECT_EQ(r.exit_code, 0) << r.out;
    r = run("gen-model --list");
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_NE(r.out.find("bench-1b"), std::string::npos);
}

// deepseek2 end to end: gen-model writes it, `duet run` generates from it, and a RoPE scaling the
// engine does not run for it stops `duet run` with exit status 2 naming the key.
TEST_F(GenModelCli, Deepseek2RunsAndUnknownRopeScalingIsRefusedWithStatus2) {
    const std::string out = (dir_ / "ds.gguf").string();
    Result r = run("gen-model --arch tiny-deepseek2 --dtype q8_0 --seed 12 -o " + out);
    ASSERT_EQ(r.exit_code, 0) << r.out;
    r = run("run -m " + out + " -p Hello -n 4 --temp 0 --threads 2");
    EXPECT_EQ(r.exit_code, 0) << r.out;
    EXPECT_NE(r.out.find("generated 4 tokens"), std::string::npos) << r.out;
    const std::string bad = (dir_ / "longrope.gguf").string();
    format::GgufWriter w(bad);
    write_hparams(w, *find_arch_preset("tiny-deepseek2"));
    w.set_string("deepseek2.rope.scaling.type", "longrope");
    w.add_tensor_f32("token_embd.weight", DType::F32, {4}, std::vector<float>(4));
    w.write();
    r = run("run -m " + bad + " -p Hello -n 4");
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.out, "duet: error: " + bad + ": metadata key 'deepseek2.rope.scaling.type' = 'longrope' is not "
                     "supported for deepseek2 (supported: none, yarn)\n");
}

}  // namespace
}  // namespace duet::model
