#include "runtime/model.h"

#include "core/error.h"
#include "core/timer.h"

namespace duet::runtime {

Model::Model(format::GgufFile&& file) : file_(std::move(file)) {
    hparams_ = model::hparams_from_gguf(file_);
    weights_ = model::bind_weights(file_, hparams_);
    if (file_.has("tokenizer.ggml.model")) {
        tokenizer_ = model::Tokenizer::from_gguf(file_);
        if (tokenizer_->n_vocab() > hparams_.n_vocab)
            fail("{}: tokenizer has {} tokens but token_embd.weight has only {} rows", file_.path(), tokenizer_->n_vocab(),
                 hparams_.n_vocab);
    }
    if (auto tmpl = file_.find_string("tokenizer.chat_template")) chat_template_ = model::detect_chat_template(*tmpl);
}

std::shared_ptr<const Model> Model::load(const std::string& path, format::LoadMode mode,
                                         const format::MappedFile::Progress& progress) {
    const int64_t t0 = now_ns();
    auto m = std::make_shared<Model>(format::GgufFile::open(path, mode, progress));
    m->load_ms_ = double(now_ns() - t0) / 1e6;
    return m;
}

const model::Tokenizer& Model::tokenizer() const {
    if (!tokenizer_) fail("{}: the file has no tokenizer (tokenizer.ggml.model is missing)", file_.path());
    return *tokenizer_;
}

}  // namespace duet::runtime
