// GGUF writer: byte-exact against a hand-built file, round trips of every metadata type and
// tensor type through the reader, atomic replace, and its errors.
#include "format/gguf_writer.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "core/error.h"
#include "format/gguf.h"
#include "gguf_bytes.h"

namespace duet::format {
namespace {

namespace fs = std::filesystem;

class GgufWriterTest : public ::testing::Test {
  protected:
    void SetUp() override {
        dir_ = fs::temp_directory_path() / ("duet_gguf_writer_" + std::to_string(::getpid()) + "_" +
                                            ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::create_directories(dir_);
    }
    void TearDown() override { fs::remove_all(dir_); }
    std::string path(const char* name) const { return (dir_ / name).string(); }
    static std::vector<uint8_t> slurp(const std::string& p) {
        std::ifstream in(p, std::ios::binary);
        return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    }
    fs::path dir_;
};

TEST_F(GgufWriterTest, BytesMatchHandBuiltFile) {
    GgufWriter w(path("a.gguf"));
    w.set_string("general.architecture", "llama");
    w.set_u32("n", 5);
    w.add_tensor_f32("w", DType::F32, {2, 2}, {1, 2, 3, 4});
    w.add_tensor_f32("v", DType::F32, {3}, {5, 6, 7});
    w.write();

    test::GgufBytes g;
    g.header(2, 2).kv_str("general.architecture", "llama").kv_u32("n", 5);
    g.tensor("w", {2, 2}, 0, 0).tensor("v", {3}, 0, 32).pad(32);
    for (float x : {1, 2, 3, 4}) g.put<float>(x);
    g.pad(32);
    for (float x : {5, 6, 7}) g.put<float>(x);
    g.pad(32);
    EXPECT_EQ(slurp(path("a.gguf")), g.b);
    EXPECT_FALSE(fs::exists(path("a.gguf.tmp")));
}

TEST_F(GgufWriterTest, EveryMetadataTypeRoundTrips) {
    GgufWriter w(path("m.gguf"));
    w.set_u8("u8", 250);
    w.set_i8("i8", -7);
    w.set_u16("u16", 65535);
    w.set_i16("i16", -32768);
    w.set_u32("u32", 4294967295u);
    w.set_i32("i32", -5);
    w.set_u64("u64", ~uint64_t(0));
    w.set_i64("i64", INT64_MIN);
    w.set_f32("f32", 0.25f);
    w.set_f64("f64", 1e300);
    w.set_bool("b", false);
    w.set_string("s", std::string("with\0nul", 8));
    w.set_string_array("sa", {"x", "", "\xe2\x96\x81the"});
    w.set_f32_array("fa", {1.5f, -0.0f});
    w.set_i32_array("ia", {-1, 2147483647});
    w.set_array("nested", GgufType::ARRAY,
                {GgufWriter::array(GgufType::UINT32, {GgufWriter::u32(1), GgufWriter::u32(2)}),
                 GgufWriter::array(GgufType::STRING, {GgufWriter::str("deep")})});
    w.set_array("empty", GgufType::FLOAT32, {});
    w.set_u32("replaced", 1);
    w.set_u32("replaced", 2);
    w.write();

    GgufFile f = GgufFile::open(path("m.gguf"));
    EXPECT_EQ(f.metadata().size(), 18u);
    EXPECT_EQ(f.get_int("u8"), 250);
    EXPECT_EQ(f.find("u8")->type, GgufType::UINT8);
    EXPECT_EQ(f.get_int("i8"), -7);
    EXPECT_EQ(f.get_int("u16"), 65535);
    EXPECT_EQ(f.get_int("i16"), -32768);
    EXPECT_EQ(f.get_int("u32"), 4294967295LL);
    EXPECT_EQ(f.get_int("i32"), -5);
    EXPECT_EQ(std::get<uint64_t>(f.find("u64")->v), ~uint64_t(0));
    EXPECT_EQ(f.get_int("i64"), INT64_MIN);
    EXPECT_EQ(f.get_float("f32"), 0.25);
    EXPECT_EQ(f.find("f32")->type, GgufType::FLOAT32);
    EXPECT_EQ(f.get_float("f64"), 1e300);
    EXPECT_FALSE(f.get_bool("b"));
    EXPECT_EQ(f.get_string("s"), std::string("with\0nul", 8));
    EXPECT_EQ(f.get_string_array("sa"), (std::vector<std::string>{"x", "", "\xe2\x96\x81the"}));
    EXPECT_EQ(f.get_float_array("fa"), (std::vector<double>{1.5, -0.0}));
    EXPECT_TRUE(std::signbit(f.get_float_array("fa")[1]));
    EXPECT_EQ(f.get_int_array("ia"), (std::vector<int64_t>{-1, 2147483647}));
    const auto& outer = *std::get<std::shared_ptr<GgufArray>>(f.find("nested")->v);
    ASSERT_EQ(outer.items.size(), 2u);
    EXPECT_EQ(std::get<uint64_t>(std::get<std::shared_ptr<GgufArray>>(outer.items[0].v)->items[1].v), 2u);
    EXPECT_EQ(std::get<std::string>(std::get<std::shared_ptr<GgufArray>>(outer.items[1].v)->items[0].v), "deep");
    EXPECT_TRUE(f.get_float_array("empty").empty());
    EXPECT_EQ(f.get_int("replaced"), 2);
}

TEST_F(GgufWriterTest, EveryTensorTypeRoundTripsWithAlignmentAndVersion2) {
    std::mt19937 rng(7);
    struct Case {
        const char* name;
        DType dtype;
        std::vector<int64_t> shape;
    };
    const std::vector<Case> cases = {
        {"f32", DType::F32, {3, 5}},          {"f16", DType::F16, {7}},
        {"bf16", DType::BF16, {4, 2, 3}},     {"q8_0", DType::Q8_0, {64, 3}},
        {"q4_0", DType::Q4_0, {32, 1, 2, 2}}, {"q4_k", DType::Q4_K, {256, 2}},
        {"q6_k", DType::Q6_K, {512}},         {"q5_0", DType::Q5_0, {896, 2}},  // 22-byte blocks
    };
    std::vector<std::vector<uint8_t>> data;
    GgufWriter w(path("t.gguf"), 2);
    w.set_alignment(128);
    for (const auto& c : cases) {
        int64_t n = 1;
        for (int64_t d : c.shape) n *= d;
        std::vector<uint8_t> bytes(size_t(n / dtype_info(c.dtype).block_elems) * dtype_info(c.dtype).block_bytes);
        for (auto& b : bytes) b = uint8_t(rng());
        data.push_back(bytes);
        w.add_tensor_bytes(c.name, c.dtype, c.shape, bytes);
    }
    w.write();
    GgufFile f = GgufFile::open(path("t.gguf"));
    EXPECT_EQ(f.version(), 2u);
    EXPECT_EQ(f.alignment(), 128u);
    ASSERT_EQ(f.tensors().size(), cases.size());
    for (size_t i = 0; i < cases.size(); ++i) {
        const GgufTensorInfo& t = f.tensors()[i];
        EXPECT_EQ(t.name, cases[i].name);
        EXPECT_EQ(t.dtype, cases[i].dtype);
        EXPECT_EQ(t.shape, cases[i].shape);
        EXPECT_EQ(t.offset % 128, 0u);
        EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data) % 128, 0u);
        ASSERT_EQ(t.n_bytes, data[i].size());
        EXPECT_EQ(std::memcmp(t.data, data[i].data(), data[i].size()), 0) << cases[i].name;
    }
}

TEST_F(GgufWriterTest, ProducerIsAskedForRowsInOrder) {
    GgufWriter w(path("p.gguf"));
    std::vector<std::pair<int64_t, int64_t>> calls;
    w.add_tensor("t", DType::F16, {4, 3, 2}, [&](int64_t r0, int64_t nr, uint8_t* dst) {
        calls.emplace_back(r0, nr);
        for (int64_t r = 0; r < nr; ++r)
            for (int c = 0; c < 4; ++c) {
                const uint16_t h = fp32_to_fp16(float((r0 + r) * 10 + c));
                std::memcpy(dst + (r * 4 + c) * 2, &h, 2);
            }
    });
    uint64_t last_done = 0, last_total = 0;
    w.write([&](uint64_t done, uint64_t total) {
        last_done = done;
        last_total = total;
    });
    EXPECT_EQ(calls, (std::vector<std::pair<int64_t, int64_t>>{{0, 6}}));
    EXPECT_EQ(last_done, 48u);
    EXPECT_EQ(last_total, 48u);
    GgufFile f = GgufFile::open(path("p.gguf"));
    const uint16_t* h = reinterpret_cast<const uint16_t*>(f.tensor("t").data);
    EXPECT_EQ(fp16_to_fp32(h[5 * 4 + 3]), 53.0f);
}

TEST_F(GgufWriterTest, FailedWriteLeavesNoFile) {
    GgufWriter w(path("x.gguf"));
    w.add_tensor("t", DType::F32, {4}, [](int64_t, int64_t, uint8_t*) { throw Error("producer failed"); });
    EXPECT_THROW(w.write(), Error);
    EXPECT_FALSE(fs::exists(path("x.gguf")));
    EXPECT_FALSE(fs::exists(path("x.gguf.tmp")));

    GgufWriter bad(path("no/such/dir/y.gguf"));
    try {
        bad.write();
        FAIL();
    } catch (const Error& e) {
        EXPECT_EQ(std::string(e.what()), path("no/such/dir/y.gguf.tmp") + ": cannot write: No such file or directory");
    }
}

TEST_F(GgufWriterTest, ExistingFileIsReplacedWhole) {
    {
        std::ofstream old(path("r.gguf"));
        old << "old contents that are longer than the new file will be.................................";
    }
    GgufWriter w(path("r.gguf"));
    w.set_u32("k", 1);
    w.write();
    EXPECT_EQ(GgufFile::open(path("r.gguf")).get_int("k"), 1);
    EXPECT_EQ(fs::file_size(path("r.gguf")), 64u);  // 41 header bytes padded to the alignment
}

TEST_F(GgufWriterTest, DeclarationErrors) {
    GgufWriter w(path("e.gguf"));
    w.add_tensor_f32("a", DType::F32, {2}, {1, 2});
    auto msg = [](auto fn) {
        try {
            fn();
        } catch (const Error& e) {
            return std::string(e.what());
        }
        return std::string("(no error)");
    };
    const std::string p = path("e.gguf");
    EXPECT_EQ(msg([&] { w.add_tensor_f32("a", DType::F32, {2}, {1, 2}); }), p + ": duplicate tensor name 'a'");
    EXPECT_EQ(msg([&] { w.add_tensor_bytes("q", DType::Q8_0, {16}, std::vector<uint8_t>(34)); }),
              p + ": tensor 'q' of type q8_0 has shape[0] = 16, which is not a multiple of its block size 32");
    EXPECT_EQ(msg([&] { w.add_tensor_bytes("z", DType::F32, {0}, {}); }),
              p + ": tensor 'z' has a dimension of 0 (allowed: >= 1)");
    EXPECT_EQ(msg([&] { w.add_tensor_bytes("s", DType::F32, {3}, std::vector<uint8_t>(8)); }),
              p + ": tensor 's' is given 8 bytes but its shape and type need 12");
}

}  // namespace
}  // namespace duet::format
