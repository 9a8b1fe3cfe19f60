#pragma once
// A loaded model: the immutable, shareable half of llama.cpp's model/context split. It owns
// the GgufFile (the read-only mapping), the hparams, the weights bound into that mapping
// (zero copy) and the tokenizer. Everything that changes while generating — KV blocks,
// scratch, sampler state — lives in Engine / SequenceKv / Generator instead, so one Model
// serves any number of engines and sequences.
//
// Thread safety: immutable after load; share it through std::shared_ptr<const Model>.
#include <memory>
#include <optional>
#include <string>

#include "format/gguf.h"
#include "model/chat_template.h"
#include "model/hparams.h"
#include "model/tokenizer/tokenizer.h"
#include "model/weights.h"

namespace duet::runtime {

class Model {
public:
    // Opens and validates the file, reads hparams, binds every weight and reads the tokenizer.
    // Throws duet::Error naming the file and the problem. mode: map the file (default) or read
    // it into memory (format::LoadMode; the CLI reads unless `--mmap`); progress: as READ reads the file.
    static std::shared_ptr<const Model> load(const std::string& path, format::LoadMode mode = format::LoadMode::MMAP,
                                             const format::MappedFile::Progress& progress = nullptr);

    const format::GgufFile& file() const { return file_; }
    const std::string& path() const { return file_.path(); }
    const model::Hparams& hparams() const { return hparams_; }
    const model::Weights& weights() const { return weights_; }
    bool has_tokenizer() const { return tokenizer_ != nullptr; }
    // Throws duet::Error when the file carries no tokenizer (tokenizer.ggml.model absent).
    const model::Tokenizer& tokenizer() const;
    // The chat template named by tokenizer.chat_template, when recognised.
    std::optional<model::ChatTemplate> chat_template() const { return chat_template_; }
    double load_ms() const { return load_ms_; }

    explicit Model(format::GgufFile&& file);  // use load(); public for make_shared

private:
    format::GgufFile file_;
    model::Hparams hparams_;
    model::Weights weights_;
    std::unique_ptr<model::Tokenizer> tokenizer_;
    std::optional<model::ChatTemplate> chat_template_;
    double load_ms_ = 0;
};

}  // namespace duet::runtime
