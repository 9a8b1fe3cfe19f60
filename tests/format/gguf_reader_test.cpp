// GGUF reader: valid hand-built files parse to the right values; every hostile header ends in
// one duet::Error with an exact message.
#include <gtest/gtest.h>

#include <random>

#include "core/error.h"
#include "format/gguf.h"
#include "gguf_bytes.h"

namespace duet::format {
namespace {

using test::GgufBytes;

GgufFile open_bytes(const GgufBytes& g) { return GgufFile::open_memory(g.b.data(), g.b.size(), "mem.gguf"); }

std::string error_of(const GgufBytes& g) {
    try {
        open_bytes(g);
    } catch (const Error& e) {
        return e.what();
    }
    return "(no error)";
}

// A valid file with one key and one 8-element F32 tensor whose values are 0..7.
GgufBytes one_tensor_file() {
    GgufBytes g;
    g.header(1, 1).kv_str("general.architecture", "llama");
    g.tensor("w", {4, 2}, 0, 0).pad(32);
    for (int i = 0; i < 8; ++i) g.put<float>(float(i));
    return g;
}

TEST(GgufReader, EmptyHeaderParses) {
    GgufBytes g;
    g.header(0, 0);
    GgufFile f = open_bytes(g);
    EXPECT_EQ(f.version(), 3u);
    EXPECT_EQ(f.alignment(), 32u);
    EXPECT_TRUE(f.metadata().empty());
    EXPECT_TRUE(f.tensors().empty());
}

TEST(GgufReader, Version2Parses) {
    GgufBytes g;
    g.header(0, 1, 2).kv_u32("a.b", 7);
    GgufFile f = open_bytes(g);
    EXPECT_EQ(f.version(), 2u);
    EXPECT_EQ(f.get_int("a.b"), 7);
}

TEST(GgufReader, EveryScalarType) {
    GgufBytes g;
    g.header(0, 13);
    g.key("u8", 0).put<uint8_t>(200);
    g.key("i8", 1).put<int8_t>(-100);
    g.key("u16", 2).put<uint16_t>(60000);
    g.key("i16", 3).put<int16_t>(-30000);
    g.key("u32", 4).put<uint32_t>(4000000000u);
    g.key("i32", 5).put<int32_t>(-2000000000);
    g.key("f32", 6).put<float>(1.5f);
    g.key("bool", 7).put<uint8_t>(1);
    g.key("str", 8).str("h\xc3\xa9llo");
    g.key("u64", 10).put<uint64_t>(uint64_t(1) << 40);
    g.key("i64", 11).put<int64_t>(-(int64_t(1) << 40));
    g.key("f64", 12).put<double>(0.1);
    g.key("big", 10).put<uint64_t>(~uint64_t(0));
    GgufFile f = open_bytes(g);
    EXPECT_EQ(f.get_int("u8"), 200);
    EXPECT_EQ(f.get_int("i8"), -100);
    EXPECT_EQ(f.get_int("u16"), 60000);
    EXPECT_EQ(f.get_int("i16"), -30000);
    EXPECT_EQ(f.get_int("u32"), 4000000000LL);
    EXPECT_EQ(f.get_int("i32"), -2000000000);
    EXPECT_EQ(f.get_float("f32"), 1.5);
    EXPECT_EQ(f.get_float("u8"), 200.0);  // integers are numbers too
    EXPECT_TRUE(f.get_bool("bool"));
    EXPECT_EQ(f.get_string("str"), "h\xc3\xa9llo");
    EXPECT_EQ(f.get_int("u64"), int64_t(1) << 40);
    EXPECT_EQ(f.get_int("i64"), -(int64_t(1) << 40));
    EXPECT_EQ(f.get_float("f64"), 0.1);
    EXPECT_EQ(f.find("u16")->type, GgufType::UINT16);
    EXPECT_EQ(std::get<uint64_t>(f.find("big")->v), ~uint64_t(0));
    EXPECT_THROW(
        {
            try {
                f.get_int("big");
            } catch (const Error& e) {
                EXPECT_STREQ(e.what(), "mem.gguf: metadata key 'big' = 18446744073709551615 does not fit in int64");
                throw;
            }
        },
        Error);
}

TEST(GgufReader, ArraysIncludingNested) {
    GgufBytes g;
    g.header(0, 3);
    g.key("strs", 9).put<uint32_t>(8).put<uint64_t>(3).str("a").str("").str("ccc");
    g.key("f32s", 9).put<uint32_t>(6).put<uint64_t>(2).put<float>(0.5f).put<float>(-2.0f);
    // [[1, 2], [3]] as arrays of int32
    g.key("nested", 9).put<uint32_t>(9).put<uint64_t>(2);
    g.put<uint32_t>(5).put<uint64_t>(2).put<int32_t>(1).put<int32_t>(2);
    g.put<uint32_t>(5).put<uint64_t>(1).put<int32_t>(3);
    GgufFile f = open_bytes(g);
    EXPECT_EQ(f.get_string_array("strs"), (std::vector<std::string>{"a", "", "ccc"}));
    EXPECT_EQ(f.get_float_array("f32s"), (std::vector<double>{0.5, -2.0}));
    const auto& outer = *std::get<std::shared_ptr<GgufArray>>(f.find("nested")->v);
    ASSERT_EQ(outer.elem_type, GgufType::ARRAY);
    ASSERT_EQ(outer.items.size(), 2u);
    const auto& inner0 = *std::get<std::shared_ptr<GgufArray>>(outer.items[0].v);
    const auto& inner1 = *std::get<std::shared_ptr<GgufArray>>(outer.items[1].v);
    EXPECT_EQ(std::get<int64_t>(inner0.items[1].v), 2);
    EXPECT_EQ(std::get<int64_t>(inner1.items[0].v), 3);
}

TEST(GgufReader, TensorInfoAndData) {
    GgufFile f = open_bytes(one_tensor_file());
    ASSERT_EQ(f.tensors().size(), 1u);
    const GgufTensorInfo& t = f.tensor("w");
    EXPECT_EQ(t.dtype, DType::F32);
    EXPECT_EQ(t.shape, (std::vector<int64_t>{4, 2}));
    EXPECT_EQ(t.n_elements(), 8);
    EXPECT_EQ(t.n_bytes, 32u);
    EXPECT_EQ(f.data_offset() % 32, 0u);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data) % 32, 0u);
    float v[8];
    std::memcpy(v, t.data, sizeof(v));
    for (int i = 0; i < 8; ++i) EXPECT_EQ(v[i], float(i));
    EXPECT_EQ(f.find_tensor("nope"), nullptr);
}

TEST(GgufReader, CustomAlignment) {
    GgufBytes g;
    g.header(2, 1).kv_u32("general.alignment", 64);
    g.tensor("a", {32}, 8 /*q8_0*/, 0).tensor("b", {16}, 1 /*f16*/, 64).pad(64);
    g.zeros(34).pad(64).zeros(32);
    GgufFile f = open_bytes(g);
    EXPECT_EQ(f.alignment(), 64u);
    EXPECT_EQ(f.data_offset() % 64, 0u);
    EXPECT_EQ(f.tensor("a").n_bytes, 34u);
    EXPECT_EQ(f.tensor("b").data - f.tensor("a").data, 64);
}

TEST(GgufReader, TypedGetterErrors) {
    GgufBytes g;
    g.header(0, 3).kv_u32("n", 3).kv_str("s", "x");
    g.key("arr", 9).put<uint32_t>(8).put<uint64_t>(1).str("t");
    GgufFile f = open_bytes(g);
    auto msg = [](auto fn) {
        try {
            fn();
        } catch (const Error& e) {
            return std::string(e.what());
        }
        return std::string("(no error)");
    };
    EXPECT_EQ(msg([&] { f.get_int("missing"); }), "mem.gguf: metadata key 'missing' is missing");
    EXPECT_EQ(msg([&] { f.get_string("n"); }), "mem.gguf: metadata key 'n' holds uint32, expected string");
    EXPECT_EQ(msg([&] { f.get_int("s"); }), "mem.gguf: metadata key 's' holds string, expected an integer");
    EXPECT_EQ(msg([&] { f.get_bool("n"); }), "mem.gguf: metadata key 'n' holds uint32, expected bool");
    EXPECT_EQ(msg([&] { f.get_float_array("arr"); }),
              "mem.gguf: metadata key 'arr' holds an array of string, expected an array of numbers");
    EXPECT_EQ(msg([&] { f.get_string_array("n"); }),
              "mem.gguf: metadata key 'n' holds uint32, expected an array of string");
    EXPECT_EQ(msg([&] { f.tensor("x"); }), "mem.gguf: tensor 'x' is missing");
    EXPECT_FALSE(f.find_int("missing").has_value());
    EXPECT_EQ(f.find_string("s").value(), "x");
}

TEST(GgufReader, MissingFile) {
    try {
        GgufFile::open("/nonexistent/dir/m.gguf");
        FAIL();
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "/nonexistent/dir/m.gguf: cannot open: No such file or directory");
    }
    try {
        GgufFile::open("/tmp");
        FAIL();
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "/tmp: cannot open: not a regular file");
    }
}

TEST(GgufReader, HeaderErrors) {
    GgufBytes empty;
    EXPECT_EQ(error_of(empty), "mem.gguf: truncated file: the magic at byte offset 0 needs 4 bytes but only 0 remain");
    GgufBytes magic;
    magic.b = {'G', 'G', 'M', 'L', 3, 0, 0, 0};
    EXPECT_EQ(error_of(magic), "mem.gguf: not a GGUF file: magic bytes are 47 47 4d 4c, expected 47 47 55 46 ('GGUF')");
    GgufBytes v1;
    v1.header(0, 0, 1);
    EXPECT_EQ(error_of(v1), "mem.gguf: unsupported GGUF version 1 (supported: 2, 3)");
    GgufBytes v9;
    v9.header(0, 0, 9);
    EXPECT_EQ(error_of(v9), "mem.gguf: unsupported GGUF version 9 (supported: 2, 3)");
    GgufBytes be;
    be.header(0, 0, 0x03000000u);
    EXPECT_EQ(error_of(be), "mem.gguf: big-endian GGUF files are not supported (version field reads 3 byte-swapped)");
    GgufBytes short_header;
    short_header.b = {'G', 'G', 'U', 'F', 3, 0, 0, 0, 1, 0};
    EXPECT_EQ(error_of(short_header),
              "mem.gguf: truncated file: the tensor count at byte offset 8 needs 8 bytes but only 2 remain");
}

TEST(GgufReader, AbsurdCountsAreRejectedBeforeAllocating) {
    GgufBytes kv;
    kv.header(0, ~uint64_t(0)).zeros(100);
    EXPECT_EQ(error_of(kv),
              "mem.gguf: header claims 18446744073709551615 metadata keys but the 100 bytes after the header can "
              "hold at most 7");
    GgufBytes tensors;
    tensors.header(uint64_t(1) << 40, 0).zeros(66);
    EXPECT_EQ(error_of(tensors),
              "mem.gguf: header claims 1099511627776 tensors but the 66 bytes after the header can hold at most 2");
    GgufBytes both;
    both.header(2, 2).zeros(66);  // 2 tensors (66 bytes at least) + 2 keys (28) do not fit in 66
    EXPECT_EQ(error_of(both),
              "mem.gguf: header claims 2 metadata keys and 2 tensors, more than the 66 bytes after the header can "
              "hold");
    GgufBytes str;
    str.header(0, 1).put<uint64_t>(uint64_t(1) << 62).zeros(20);
    EXPECT_EQ(error_of(str),
              "mem.gguf: truncated file: the name of metadata key #0 at byte offset 32 needs 4611686018427387904 "
              "bytes but only 20 remain");
    GgufBytes arr;
    arr.header(0, 1).key("a", 9).put<uint32_t>(4).put<uint64_t>(1000).zeros(16);
    EXPECT_EQ(error_of(arr),
              "mem.gguf: metadata key 'a' claims an array of 1000 uint32 values at byte offset 37, more than the 16 "
              "remaining bytes can hold");
    GgufBytes strarr;  // strings take at least 8 bytes each
    strarr.header(0, 1).key("a", 9).put<uint32_t>(8).put<uint64_t>(3).zeros(23);
    EXPECT_EQ(error_of(strarr),
              "mem.gguf: metadata key 'a' claims an array of 3 string values at byte offset 37, more than the 23 "
              "remaining bytes can hold");
}

TEST(GgufReader, BadMetadataValues) {
    GgufBytes type;
    type.header(0, 1).key("k", 13).zeros(8);
    EXPECT_EQ(error_of(type),
              "mem.gguf: metadata key 'k' has unknown value type 13 at byte offset 33 (allowed: 0..12)");
    GgufBytes boolean;
    boolean.header(0, 1).key("k", 7).put<uint8_t>(2);
    EXPECT_EQ(error_of(boolean), "mem.gguf: metadata key 'k' is a bool with value 2 (allowed: 0, 1)");
    GgufBytes dup;
    dup.header(0, 2).kv_u32("k", 1).kv_u32("k", 2);
    EXPECT_EQ(error_of(dup), "mem.gguf: duplicate metadata key 'k' (second copy at byte offset 41)");
    GgufBytes empty_key;
    empty_key.header(0, 1).key("", 0).put<uint8_t>(0).zeros(4);
    EXPECT_EQ(error_of(empty_key), "mem.gguf: metadata key #0 at byte offset 24 has an empty name");
    GgufBytes deep;  // arrays nested 10 levels
    deep.header(0, 1).key("d", 9);
    for (int i = 0; i < 10; ++i) deep.put<uint32_t>(9).put<uint64_t>(1);
    deep.zeros(64);
    EXPECT_EQ(error_of(deep), "mem.gguf: metadata key 'd' nests arrays deeper than 8 levels");
    GgufBytes align;
    align.header(0, 1).kv_u32("general.alignment", 48);
    EXPECT_EQ(error_of(align),
              "mem.gguf: metadata key 'general.alignment' = 48 is not allowed (allowed: a power of two up to 2^30)");
    GgufBytes align_type;
    align_type.header(0, 1).kv_str("general.alignment", "32");
    EXPECT_EQ(error_of(align_type), "mem.gguf: metadata key 'general.alignment' holds string, expected uint32");
}

TEST(GgufReader, BadTensorInfos) {
    auto file = [](std::vector<uint64_t> shape, uint32_t type, uint64_t offset, size_t data_bytes = 64) {
        GgufBytes g;
        g.header(1, 0).tensor("t", shape, type, offset).pad(32).zeros(data_bytes);
        return g;
    };
    EXPECT_EQ(error_of(file({}, 0, 0)), "mem.gguf: tensor 't' has 0 dimensions (allowed: 1..4)");
    EXPECT_EQ(error_of(file({1, 1, 1, 1, 1}, 0, 0)), "mem.gguf: tensor 't' has 5 dimensions (allowed: 1..4)");
    EXPECT_EQ(error_of(file({4, 0}, 0, 0)),
              "mem.gguf: tensor 't' has dimension 1 = 0 (allowed: 1.. with at most 2^63-1 elements in all)");
    EXPECT_EQ(error_of(file({uint64_t(1) << 32, uint64_t(1) << 32}, 0, 0)),
              "mem.gguf: tensor 't' has dimension 1 = 4294967296 (allowed: 1.. with at most 2^63-1 elements in all)");
    EXPECT_EQ(error_of(file({256}, 13, 0)),
              "mem.gguf: tensor 't' has type q5_k (ggml type 13), which duet does not support (supported: f32, f16, "
              "bf16, q8_0, q4_0, q5_0, q4_k, q6_k, i8, i32)");
    EXPECT_EQ(error_of(file({256}, 99, 0)),
              "mem.gguf: tensor 't' has type unknown (ggml type 99), which duet does not support (supported: f32, "
              "f16, bf16, q8_0, q4_0, q5_0, q4_k, q6_k, i8, i32)");
    EXPECT_EQ(error_of(file({100, 2}, 12, 0)),
              "mem.gguf: tensor 't' of type q4_k has shape[0] = 100, which is not a multiple of its block size 256");
    EXPECT_EQ(error_of(file({4}, 0, 8)),
              "mem.gguf: tensor 't' has offset 8, which is not a multiple of general.alignment = 32");
    EXPECT_EQ(error_of(file({32}, 0, 0)),
              "mem.gguf: tensor 't' (data bytes 0..128) extends past the end of the file (the data section holds 64 "
              "bytes)");
    EXPECT_EQ(error_of(file({4}, 0, uint64_t(1) << 63)),
              "mem.gguf: tensor 't' (data bytes 9223372036854775808..9223372036854775824) extends past the end of "
              "the file (the data section holds 64 bytes)");
    EXPECT_EQ(error_of(file({uint64_t(1) << 40}, 0, 0)),
              "mem.gguf: tensor 't' needs 4398046511104 bytes of data, more than the whole file (128 bytes)");
}

TEST(GgufReader, TensorSetErrors) {
    GgufBytes dup;
    dup.header(2, 0).tensor("t", {4}, 0, 0).tensor("t", {4}, 0, 32).pad(32).zeros(64);
    EXPECT_EQ(error_of(dup), "mem.gguf: duplicate tensor name 't' (tensor #1)");
    GgufBytes overlap;
    overlap.header(2, 0).tensor("a", {16}, 0, 0).tensor("b", {4}, 0, 32).pad(32).zeros(64);
    EXPECT_EQ(error_of(overlap), "mem.gguf: tensors 'a' (data bytes 0..64) and 'b' (from 32) overlap");
    GgufBytes no_data;  // tensor infos end the file: the data section would start past the end
    no_data.header(1, 0).tensor("a", {4}, 0, 0);
    EXPECT_EQ(error_of(no_data),
              "mem.gguf: truncated file: the tensor data section starts at byte offset 64 but the file has 57 bytes");
    GgufBytes empty_name;
    empty_name.header(1, 0).tensor("", {4}, 0, 0).pad(32).zeros(32);
    EXPECT_EQ(error_of(empty_name), "mem.gguf: tensor #0 at byte offset 24 has an empty name");
}

TEST(GgufReader, EveryTruncationIsAnError) {
    const GgufBytes full = one_tensor_file();
    ASSERT_NO_THROW(open_bytes(full));
    for (size_t n = 0; n < full.size(); ++n) {
        GgufBytes g;
        g.b.assign(full.b.begin(), full.b.begin() + ptrdiff_t(n));
        const std::string e = error_of(g);
        EXPECT_EQ(e.rfind("mem.gguf: ", 0), 0u) << "prefix " << n << ": " << e;
        EXPECT_NE(e, "(no error)") << "prefix " << n;
    }
}

TEST(GgufReader, CorruptedBytesNeverCrash) {
    const GgufBytes full = one_tensor_file();
    std::mt19937 rng(1234);
    int errors = 0;
    for (int iter = 0; iter < 3000; ++iter) {
        GgufBytes g = full;
        const int flips = 1 + int(rng() % 4);
        for (int k = 0; k < flips; ++k) g.b[rng() % g.size()] = uint8_t(rng());
        try {
            open_bytes(g);
        } catch (const Error&) {
            ++errors;
        }
    }
    EXPECT_GT(errors, 0);
}

}  // namespace
}  // namespace duet::format
