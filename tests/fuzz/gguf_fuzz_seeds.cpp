// Writes the seed corpus for gguf_fuzz: small valid GGUF files (a few KB) that cover every
// metadata type, nested arrays, versions 2 and 3, a custom alignment, every tensor type and a
// complete tiny llama/qwen2 header, so mutations start from deep inside the format.
#include <cstdio>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "format/gguf_writer.h"

using duet::DType;
using duet::format::GgufType;
using duet::format::GgufWriter;

namespace {

std::vector<uint8_t> pattern(size_t n, uint8_t salt) {
    std::vector<uint8_t> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = uint8_t(i * 31 + salt);
    return v;
}

void tiny_model(const std::string& path, const char* arch, uint32_t version, bool quantized) {
    GgufWriter w(path, version);
    const std::string a = arch;
    w.set_string("general.architecture", a);
    w.set_u32(a + ".context_length", 64);
    w.set_u32(a + ".embedding_length", 32);
    w.set_u32(a + ".block_count", 1);
    w.set_u32(a + ".feed_forward_length", 64);
    w.set_u32(a + ".attention.head_count", 2);
    w.set_u32(a + ".attention.head_count_kv", 1);
    w.set_f32(a + ".attention.layer_norm_rms_epsilon", 1e-5f);
    w.set_f32(a + ".rope.freq_base", 10000.0f);
    w.set_u32(a + ".rope.dimension_count", 16);
    std::vector<std::string> tokens = {"<unk>",
                                       "<s>",
                                       "</s>",
                                       "a",
                                       "b",
                                       "ab",
                                       "\xe2\x96\x81"
                                       "the"};
    w.set_string("tokenizer.ggml.model", "llama");
    w.set_string_array("tokenizer.ggml.tokens", tokens);
    w.set_f32_array("tokenizer.ggml.scores", {0, 0, 0, -1, -2, -3, -4});
    w.set_i32_array("tokenizer.ggml.token_type", {2, 3, 3, 1, 1, 1, 1});
    w.set_u32("tokenizer.ggml.bos_token_id", 1);
    w.set_bool("tokenizer.ggml.add_bos_token", true);
    const DType wt = quantized ? DType::Q8_0 : DType::F16;
    auto mat = [&](const std::string& name, int64_t in, int64_t out) {
        const size_t bytes = duet::row_bytes(wt, in) * size_t(out);
        w.add_tensor_bytes(name, wt, {in, out}, pattern(bytes, uint8_t(name.size())));
    };
    auto vec = [&](const std::string& name, int64_t n) {
        w.add_tensor_bytes(name, DType::F32, {n}, pattern(size_t(n) * 4, 7));
    };
    mat("token_embd.weight", 32, 7);
    vec("blk.0.attn_norm.weight", 32);
    mat("blk.0.attn_q.weight", 32, 32);
    mat("blk.0.attn_k.weight", 32, 16);
    if (a == "qwen2") vec("blk.0.attn_q.bias", 32);
    vec("output_norm.weight", 32);
    w.write();
}

void all_types(const std::string& path) {
    GgufWriter w(path);
    w.set_u8("t.u8", 1);
    w.set_i8("t.i8", -1);
    w.set_u16("t.u16", 2);
    w.set_i16("t.i16", -2);
    w.set_u32("t.u32", 3);
    w.set_i32("t.i32", -3);
    w.set_u64("t.u64", 4);
    w.set_i64("t.i64", -4);
    w.set_f32("t.f32", 0.5f);
    w.set_f64("t.f64", 0.25);
    w.set_bool("t.bool", true);
    w.set_string("t.str", "hello");
    w.set_string_array("t.strs", {"x", "yy", ""});
    w.set_array("t.nested", GgufType::ARRAY,
                {GgufWriter::array(GgufType::INT32, {GgufWriter::i32(1), GgufWriter::i32(2)}),
                 GgufWriter::array(GgufType::STRING, {GgufWriter::str("z")})});
    w.write();
}

void every_tensor_type(const std::string& path) {
    GgufWriter w(path);
    w.set_alignment(64);
    const DType types[] = {DType::F32,  DType::F16,  DType::BF16, DType::Q8_0,
                           DType::Q4_0, DType::Q5_0, DType::Q4_K, DType::Q6_K};
    for (DType t : types) {
        const int64_t n = duet::dtype_info(t).block_elems == 1 ? 8 : duet::dtype_info(t).block_elems;
        w.add_tensor_bytes(std::string("t.") + duet::dtype_name(t), t, {n, 1},
                           pattern(duet::row_bytes(t, n), uint8_t(t)));
    }
    w.write();
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: gguf_fuzz_seeds OUTPUT_DIR\n");
        return 2;
    }
    const std::string dir = argv[1];
    try {
        tiny_model(dir + "/llama_v3.gguf", "llama", 3, false);
        tiny_model(dir + "/llama_v2_q8.gguf", "llama", 2, true);
        tiny_model(dir + "/qwen2.gguf", "qwen2", 3, true);
        all_types(dir + "/all_types.gguf");
        every_tensor_type(dir + "/tensor_types.gguf");
    } catch (const duet::Error& e) {
        std::fprintf(stderr, "gguf_fuzz_seeds: %s\n", e.what());
        return 2;
    }
    return 0;
}
