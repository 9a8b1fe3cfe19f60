// `mpirun -np N duet run --tp N` and `--pp N` against one process: the same greedy tokens (the
// reference is the single-process run of the same binary), and the errors of a split that
// cannot run.
#include <gtest/gtest.h>

#include <fstream>
#include <sys/wait.h>
#include <unistd.h>

#include "../runtime/test_models.h"
#include "mpirun.h"

namespace duet::test {
namespace {

struct Result {
    int rc;
    std::string out, err;
};

std::string quoted(const std::vector<std::string>& v) {
    std::string s;
    for (const auto& a : v) s += "'" + a + "' ";
    return s;
}

// Runs `[env] [prefix] duet args`; stdout and stderr apart. env: "NAME=value " or "".
Result run(const std::vector<std::string>& prefix, const std::string& args, const std::string& env = "") {
    const std::string o = std::string(DUET_BINARY_DIR) + "/test-models/tp_mpi_test." + std::to_string(::getpid());
    const std::string e = o + ".err";
    const int st = std::system(fmt::format("{}{}'{}' {} > '{}' 2> '{}'", env, quoted(prefix), duet_binary(), args, o, e).c_str());
    auto slurp = [](const std::string& p) {
        std::ifstream f(p, std::ios::binary);
        return std::string(std::istreambuf_iterator<char>(f), {});
    };
    Result r{WIFEXITED(st) ? WEXITSTATUS(st) : -1, slurp(o), slurp(e)};
    std::remove(o.c_str());
    std::remove(e.c_str());
    return r;
}

#define REQUIRE_MPIRUN()                                                        \
    do {                                                                        \
        if (mpirun_path().empty()) GTEST_SKIP() << "mpirun is not installed"; \
    } while (0)

// Greedy text of `model` from one process and from `np` ranks under --tp np, or --pp np when
// `how` is "pp" (env: as run()).
void expect_same_tokens(const std::string& model, int np, int n_predict = 24, const std::string& env = "",
                        const std::string& how = "tp") {
    ASSERT_FALSE(model.empty());
    const std::string args =
        fmt::format("run -m '{}' -p 'Once upon a time' -n {} --temp 0 --threads 1", model, n_predict);
    const Result one = run({}, args, env);
    ASSERT_EQ(one.rc, 0) << one.err;
    const Result tp = run(mpirun_prefix(np), args + fmt::format(" --{} {}", how, np), env);
    ASSERT_EQ(tp.rc, 0) << tp.err;
    EXPECT_NE(tp.err.find(fmt::format("{} {} over MPI", how, np)), std::string::npos) << tp.err;
    EXPECT_GT(one.out.size(), 1u);  // some text besides the final newline
    EXPECT_EQ(tp.out, one.out) << model;
}

TEST(TpMpi, GeneratedModelsGiveTheSameTokensOnTwoRanks) {
    REQUIRE_MPIRUN();
    expect_same_tokens(generated_model("tiny-mistral", "f32"), 2);  // GQA 4:1, KV heads split 1 + 1
    expect_same_tokens(generated_model("tiny-llama", "f16"), 2);    // MHA
    expect_same_tokens(generated_model("small-llama", "f32"), 2);   // GQA 2:1, head_dim 64
    expect_same_tokens(generated_model("tiny-qwen2", "f32"), 2);    // QKV bias sliced with the rows, NEOX RoPE
}

// Quantised files: the slices sit on block boundaries, so every rank quantises the same
// activation blocks as one process and the partial sums differ from the whole sum in f32
// order only. The SIMD q8_0 paths then quantise the next layer's activations to int8, where
// an f32 ulp can flip a rounding; so token identity is asserted on the dequantising kernels
// (DUET_ISA=scalar), where it is exact like f32 (docs/scale-out.md shows the SIMD case).
TEST(TpMpi, QuantisedModelGivesTheSameTokensOnTheDequantisingKernels) {
    REQUIRE_MPIRUN();
    expect_same_tokens(generated_model("small-llama", "q8_0"), 2, 24, "DUET_ISA=scalar ");
    expect_same_tokens(generated_model("tiny-mistral", "q8_0"), 2, 24, "DUET_ISA=scalar ");
}

TEST(TpMpi, MoreRanksThanKvHeadsReplicateThem) {
    REQUIRE_MPIRUN();
    // tiny-mistral: 8 query heads, 2 KV heads; on 4 ranks each KV head lives on 2 ranks.
    expect_same_tokens(generated_model("tiny-mistral", "f32"), 4, 12);
}

TEST(TpMpi, Stories260KGivesTheSameTokensOnTwoRanks) {
    REQUIRE_MPIRUN();
    const std::string model = shared_model("stories260K.gguf");
    if (model.empty()) GTEST_SKIP() << "the shared models folder has no stories260K.gguf";
    expect_same_tokens(model, 2, 32);
}

TEST(PpMpi, GeneratedModelsGiveTheSameTokensOnTwoStages) {
    REQUIRE_MPIRUN();
    expect_same_tokens(generated_model("tiny-mistral", "f32"), 2, 24, "", "pp");
    expect_same_tokens(generated_model("tiny-llama", "f16"), 2, 24, "", "pp");
    expect_same_tokens(generated_model("tiny-qwen2", "f32"), 2, 24, "", "pp");  // tied embeddings: both ends
}

// Mixture-of-Experts: pipeline stages split the layers as for a dense model.
TEST(PpMpi, MoeModelsGiveTheSameTokensOnTwoStages) {
    REQUIRE_MPIRUN();
    expect_same_tokens(generated_model("tiny-mixtral", "f32"), 2, 24, "", "pp");
    expect_same_tokens(generated_model("tiny-qwen3moe", "q8_0"), 2, 24, "", "pp");
}

// deepseek2: each stage keeps the latent KV rows of its own layers.
TEST(PpMpi, LatentAttentionModelGivesTheSameTokensOnTwoStages) {
    REQUIRE_MPIRUN();
    expect_same_tokens(generated_model("tiny-deepseek2", "f32"), 2, 24, "", "pp");
}

// Mixture-of-Experts under --tp: each rank holds its range of every expert's features (and of
// the shared expert's), routes every token as one process does, and the layer's partial sums
// meet in one all-reduce after the experts are combined.
TEST(TpMpi, MoeModelsGiveTheSameTokensOnTwoRanks) {
    REQUIRE_MPIRUN();
    expect_same_tokens(generated_model("tiny-mixtral", "f32"), 2);   // arch llama with experts
    expect_same_tokens(generated_model("tiny-qwen2moe", "f32"), 2);  // gated shared expert, QKV bias
    expect_same_tokens(generated_model("tiny-qwen3moe", "f32"), 2);  // q/k norms per local head
}

// Quantised experts: the expert FFN splits on 32-element blocks (tiny-mixtral: 96 = 32 + 64).
TEST(TpMpi, QuantisedMoeModelsGiveTheSameTokensOnTheDequantisingKernels) {
    REQUIRE_MPIRUN();
    expect_same_tokens(generated_model("tiny-mixtral", "q8_0"), 2, 24, "DUET_ISA=scalar ");
    expect_same_tokens(generated_model("tiny-qwen2moe", "q8_0"), 2, 24, "DUET_ISA=scalar ");
}

// Latent attention under --tp: split by heads; every rank caches the whole latent row.
TEST(TpMpi, LatentAttentionModelsGiveTheSameTokensOnTwoAndFourRanks) {
    REQUIRE_MPIRUN();
    expect_same_tokens(generated_model("tiny-deepseek2", "f32"), 2);
    expect_same_tokens(generated_model("tiny-deepseek3", "f32"), 2);  // group-limited routing, a nextn block
    expect_same_tokens(generated_model("tiny-deepseek2", "f32"), 4, 12);  // one head per rank
}

TEST(TpMpi, ExpertFfnThatDoesNotSplitIsAClearError) {
    REQUIRE_MPIRUN();
    // tiny-qwen3moe: experts of 32 features, one q8_0 block along their down projection.
    const std::string model = generated_model("tiny-qwen3moe", "q8_0");
    const Result r = run(mpirun_prefix(2), fmt::format("run -m '{}' -p Hi -n 2 --tp 2", model));
    EXPECT_EQ(r.rc, 2) << r.err;
    EXPECT_NE(r.err.find(fmt::format("duet: error: --tp = 2 is more than the 1 blocks of 32 expert FFN features of "
                                     "'{}' (allowed: 1 to 1)\n",
                                     model)),
              std::string::npos)
        << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
}

TEST(TpMpi, LatentAttentionHeadsThatDoNotDivideAreAClearError) {
    REQUIRE_MPIRUN();
    const std::string model = generated_model("tiny-deepseek2", "f32");  // 4 heads
    const Result r = run(mpirun_prefix(3), fmt::format("run -m '{}' -p Hi -n 2 --tp 3", model));
    EXPECT_EQ(r.rc, 2) << r.err;
    EXPECT_NE(r.err.find(fmt::format("duet: error: --tp = 3 does not divide the 4 attention heads of '{}' (allowed: "
                                     "a divisor of 4)\n",
                                     model)),
              std::string::npos)
        << r.err;
}

TEST(PpMpi, Stories260KGivesTheSameTokensOnTwoStages) {
    REQUIRE_MPIRUN();
    const std::string model = shared_model("stories260K.gguf");
    if (model.empty()) GTEST_SKIP() << "the shared models folder has no stories260K.gguf";
    expect_same_tokens(model, 2, 32, "", "pp");
}

TEST(PpMpi, PpWithoutMpirunIsAClearError) {
    const std::string model = generated_model("tiny-llama", "f32");
    const Result r = run({}, fmt::format("run -m '{}' -p Hi -n 2 --pp 2", model));
    EXPECT_EQ(r.rc, 2);
    EXPECT_EQ(r.err,
              "duet: error: --pp 2 needs 2 MPI ranks, and this process was not started by mpirun (allowed: --pp 1, or "
              "mpirun -np 2 duet ... --pp 2)\n");
}

TEST(PpMpi, TpWithPpIsAClearError) {
    const std::string model = generated_model("tiny-llama", "f32");
    const Result r = run({}, fmt::format("run -m '{}' -p Hi -n 2 --tp 2 --pp 2", model));
    EXPECT_EQ(r.rc, 2);
    EXPECT_EQ(r.err,
              "duet: error: --tp 2 with --pp 2: the real engine runs tensor or pipeline parallelism, not both "
              "(allowed: --tp 1 or --pp 1; duet bench models both)\n");
}

TEST(PpMpi, PpDifferentFromTheWorldSizeIsAClearError) {
    REQUIRE_MPIRUN();
    const std::string model = generated_model("tiny-llama", "f32");
    const Result r = run(mpirun_prefix(2), fmt::format("run -m '{}' -p Hi -n 2 --pp 3", model));
    EXPECT_EQ(r.rc, 2) << r.err;
    EXPECT_NE(r.err.find("duet: error: --pp 3 does not match the 2 ranks of this MPI job (allowed: --pp 2, the "
                         "mpirun -np value)\n"),
              std::string::npos)
        << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
}

TEST(PpMpi, MoreStagesThanLayersIsAClearError) {
    REQUIRE_MPIRUN();
    const std::string model = std::string(DUET_BINARY_DIR) + "/test-models/pp_one_layer." + std::to_string(::getpid()) +
                              ".gguf";
    ASSERT_EQ(run({}, fmt::format("gen-model --arch tiny-llama --layers 1 --seed 3 -o '{}'", model)).rc, 0);
    const Result r = run(mpirun_prefix(2), fmt::format("run -m '{}' -p Hi -n 2 --pp 2", model));
    std::remove(model.c_str());
    EXPECT_EQ(r.rc, 2) << r.err;
    EXPECT_NE(r.err.find(fmt::format("duet: error: --pp = 2 is not allowed for the 1 layers of '{}' (allowed: 1 to 1)\n",
                                     model)),
              std::string::npos)
        << r.err;
}

TEST(TpMpi, TpWithoutMpirunIsAClearError) {
    const std::string model = generated_model("tiny-llama", "f32");
    const Result r = run({}, fmt::format("run -m '{}' -p Hi -n 2 --tp 2", model));
    EXPECT_EQ(r.rc, 2);
    EXPECT_EQ(r.err,
              "duet: error: --tp 2 needs 2 MPI ranks, and this process was not started by mpirun (allowed: --tp 1, or "
              "mpirun -np 2 duet ... --tp 2)\n");
}

TEST(TpMpi, TpDifferentFromTheWorldSizeIsAClearError) {
    REQUIRE_MPIRUN();
    const std::string model = generated_model("tiny-llama", "f32");
    const Result r = run(mpirun_prefix(2), fmt::format("run -m '{}' -p Hi -n 2 --tp 4", model));
    EXPECT_EQ(r.rc, 2) << r.err;
    EXPECT_NE(r.err.find("duet: error: --tp 4 does not match the 2 ranks of this MPI job (allowed: --tp 2, the "
                         "mpirun -np value)\n"),
              std::string::npos)
        << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
}

TEST(TpMpi, HeadsThatDoNotDivideAreAClearError) {
    REQUIRE_MPIRUN();
    const std::string model = generated_model("tiny-qwen2", "f32");  // 6 heads
    const Result r = run(mpirun_prefix(4), fmt::format("run -m '{}' -p Hi -n 2 --tp 4", model));
    EXPECT_EQ(r.rc, 2) << r.err;
    EXPECT_NE(r.err.find(fmt::format("duet: error: --tp = 4 does not divide the 6 attention heads of '{}' (allowed: "
                                     "a divisor of 6)\n",
                                     model)),
              std::string::npos)
        << r.err;
}

TEST(TpMpi, SlicesThatCutAQuantisedBlockAreAClearError) {
    REQUIRE_MPIRUN();
    // tiny-qwen2: 3 heads of 16 per rank = 48 attention-output columns, not whole 32-element blocks.
    const std::string model = generated_model("tiny-qwen2", "q8_0");
    const Result r = run(mpirun_prefix(2), fmt::format("run -m '{}' -p Hi -n 2 --tp 2", model));
    EXPECT_EQ(r.rc, 2) << r.err;
    EXPECT_NE(r.err.find("duet: error: --tp = 2: the attention-output columns [0, 48) of blk.0.attn_output.weight cut "
                         "its 32-element q8_0 blocks (allowed: a --tp whose slices are whole blocks, or an unquantised "
                         "file)\n"),
              std::string::npos)
        << r.err;
}

}  // namespace
}  // namespace duet::test
