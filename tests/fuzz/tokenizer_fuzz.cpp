// libFuzzer target for the tokenizers (model/tokenizer/tokenizer.h), built the way the engine
// builds them: the vocabulary of a generated model (model/synthetic_vocab.h) is written as GGUF
// metadata and read back with Tokenizer::from_gguf. Random bytes must encode to in-range ids and
// decode back to exactly the same bytes (the documented round trip; for SPM only when the text has
// no literal U+2581, which SPM reads as its space marker); random id sequences must decode or
// end in one duet::Error. Input layout:
//   byte 0: bits 0-1 tokenizer (0, 3 SPM tiny-llama; 1 BPE llama-bpe tiny-llama3; 2 BPE qwen2
//           tiny-qwen2), bit 2 parse_special, bit 3 add_bos, bit 4 decode mode
//   rest:   the text (encode mode) or little-endian int32 ids (decode mode)
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "format/gguf.h"
#include "format/gguf_writer.h"
#include "fuzz_util.h"
#include "model/arch_presets.h"
#include "model/synthetic_vocab.h"
#include "model/tokenizer/tokenizer.h"

namespace {

using duet::model::Tokenizer;

std::unique_ptr<Tokenizer> load(const char* preset_name) {
    const duet::model::ArchPreset* preset = duet::model::find_arch_preset_info(preset_name);
    if (!preset) duet::fuzz::unexpected("unknown preset");
    const char* dir = std::getenv("TMPDIR");
    std::string path = std::string(dir && *dir ? dir : "/tmp") + "/duet-tokenizer-fuzz-XXXXXX";
    const int fd = mkstemp(path.data());
    if (fd < 0) duet::fuzz::unexpected("mkstemp failed");
    close(fd);
    {
        duet::format::GgufWriter w(path);
        duet::model::write_vocab(w, duet::model::build_synthetic_vocab(*preset));
        w.write();
    }
    auto tok = Tokenizer::from_gguf(duet::format::GgufFile::open(path));
    unlink(path.c_str());
    return tok;
}

const Tokenizer& tokenizer(int which) {
    static const std::unique_ptr<Tokenizer> t[3] = {load("tiny-llama"), load("tiny-llama3"), load("tiny-qwen2")};
    return *t[which == 3 ? 0 : which];
}

void check_encode(const Tokenizer& tok, const std::string& text, bool parse_special, bool add_bos) {
    const std::vector<int32_t> ids = tok.encode(text, add_bos, parse_special);
    for (int32_t id : ids)
        if (id < 0 || id >= tok.n_vocab()) duet::fuzz::unexpected("encode produced an id out of range");
    if (add_bos && tok.bos() >= 0 && (ids.empty() || ids[0] != tok.bos()))
        duet::fuzz::unexpected("add_bos did not put bos first");
    const std::string back = tok.decode(ids);
    const bool spm_marker = tok.kind() == "llama" && text.find("\xE2\x96\x81") != std::string::npos;
    if (!parse_special && !spm_marker && back != text) duet::fuzz::unexpected("decode(encode(text)) != text");
    duet::model::StreamDecoder sd(tok);
    for (int32_t id : ids) (void)sd.feed(id);
    (void)sd.flush();
}

void check_decode(const Tokenizer& tok, const uint8_t* data, size_t size) {
    std::vector<int32_t> ids(size / 4);
    if (!ids.empty()) std::memcpy(ids.data(), data, ids.size() * 4);
    bool in_range = true;
    for (int32_t& id : ids) {
        // mostly valid ids, now and then a bad one
        if (id >= 0 || (id & 0xff) != 0x80) id = int32_t(uint32_t(id) % uint32_t(tok.n_vocab() + 1));
        in_range = in_range && id >= 0 && id < tok.n_vocab();
    }
    try {
        (void)tok.decode(ids);
        if (!in_range) duet::fuzz::unexpected("decode accepted an id out of range");
        duet::model::StreamDecoder sd(tok);
        for (int32_t id : ids) (void)sd.feed(id);
        (void)sd.flush();
    } catch (const duet::Error&) {
        if (in_range) throw;
    }
}

}  // namespace

// The vocabularies are built once, before fuzzing (training the BPE merges takes seconds
// under ASan, which -timeout would count against the first input).
extern "C" int LLVMFuzzerInitialize(int*, char***) {
    for (int which = 0; which < 3; ++which) (void)tokenizer(which);
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    const uint8_t mode = data[0];
    const Tokenizer& tok = tokenizer(mode & 3);
    try {
        if (mode & 16)
            check_decode(tok, data + 1, size - 1);
        else
            check_encode(tok, std::string(reinterpret_cast<const char*>(data + 1), size - 1), mode & 4, mode & 8);
    } catch (const std::exception& e) {
        duet::fuzz::unexpected("tokenizer threw", &e);
    }
    return 0;
}
