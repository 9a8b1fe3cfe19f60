// Tokenizer::from_gguf: the tokenizer.ggml.* keys of a GGUF file -> Vocab.
#include "core/error.h"
#include "format/gguf.h"
#include "model/tokenizer/bpe_tokenizer.h"
#include "model/tokenizer/tokenizer.h"

namespace duet::model {

namespace {

int32_t read_id(const format::GgufFile& f, const char* key, int32_t fallback, size_t n_vocab) {
    const std::optional<int64_t> v = f.find_int(key);
    if (!v) return fallback < static_cast<int64_t>(n_vocab) ? fallback : -1;
    if (*v == 0xFFFFFFFF) return -1;  // -1 written as uint32 (e.g. stories260K's padding_token_id): none
    if (*v < -1 || *v >= static_cast<int64_t>(n_vocab))
        fail("{}: {} = {} is out of range (allowed: -1 or 4294967295 for none, or 0 to {})", f.path(), key, *v, n_vocab - 1);
    return static_cast<int32_t>(*v);
}

}  // namespace

std::unique_ptr<Tokenizer> Tokenizer::from_gguf(const format::GgufFile& f) {
    Vocab v;
    v.source = f.path();
    const std::string model = f.get_string("tokenizer.ggml.model");
    if (model == "llama") {
        v.kind = TokenizerKind::SPM;
    } else if (model == "gpt2") {
        v.kind = TokenizerKind::BPE;
    } else {
        fail("{}: tokenizer.ggml.model = \"{}\" is not supported (allowed: llama, gpt2)", f.path(), model);
    }
    v.tokens = f.get_string_array("tokenizer.ggml.tokens");
    if (f.has("tokenizer.ggml.scores")) {
        const std::vector<double> s = f.get_float_array("tokenizer.ggml.scores");
        v.scores.assign(s.begin(), s.end());
    }
    if (f.has("tokenizer.ggml.token_type")) {
        const std::vector<int64_t> t = f.get_int_array("tokenizer.ggml.token_type");
        v.types.reserve(t.size());
        for (size_t i = 0; i < t.size(); ++i) {
            if (t[i] < 0 || t[i] > 6)
                fail("{}: tokenizer.ggml.token_type[{}] = {} is not a token type (allowed: 0 to 6)", f.path(), i, t[i]);
            v.types.push_back(static_cast<TokenType>(t[i]));
        }
    }
    const size_t n = v.tokens.size();
    if (n == 0) fail("{}: tokenizer.ggml.tokens is empty (a vocabulary needs at least one token)", f.path());
    if (v.kind == TokenizerKind::SPM) {
        // llama.cpp's defaults for SentencePiece vocabularies.
        v.bos_id = read_id(f, "tokenizer.ggml.bos_token_id", 1, n);
        v.eos_id = read_id(f, "tokenizer.ggml.eos_token_id", 2, n);
        v.unk_id = read_id(f, "tokenizer.ggml.unknown_token_id", 0, n);
        v.add_bos = f.find_bool("tokenizer.ggml.add_bos_token").value_or(true);
        v.add_space_prefix = f.find_bool("tokenizer.ggml.add_space_prefix").value_or(true);
    } else {
        v.merges = f.get_string_array("tokenizer.ggml.merges");
        v.pre = f.find_string("tokenizer.ggml.pre").value_or("default");
        v.bos_id = read_id(f, "tokenizer.ggml.bos_token_id", -1, n);
        v.eos_id = read_id(f, "tokenizer.ggml.eos_token_id", -1, n);
        v.unk_id = read_id(f, "tokenizer.ggml.unknown_token_id", -1, n);
        v.add_bos = f.find_bool("tokenizer.ggml.add_bos_token").value_or(BpeTokenizer::is_llama3_pre(v.pre));
        v.add_space_prefix = false;
    }
    v.eot_id = read_id(f, "tokenizer.ggml.eot_token_id", -1, n);
    v.pad_id = read_id(f, "tokenizer.ggml.padding_token_id", -1, n);
    v.add_eos = f.find_bool("tokenizer.ggml.add_eos_token").value_or(false);
    return from_vocab(std::move(v));
}

}  // namespace duet::model
