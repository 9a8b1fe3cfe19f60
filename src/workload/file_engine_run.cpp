#include "workload/file_engine_run.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "core/log.h"
#include "runtime/pim_weight_source.h"
#include "workload/model_limits.h"

namespace duet::workload {
namespace {

// Teacher-forced logits: the sequence prompt + reference[0 .. n-2] forwarded once with every
// row's logits; row i predicts reference[i]. Trace off: this pass is not part of the run.
std::vector<float> score(runtime::Engine& engine, const std::vector<int32_t>& prompt,
                         const std::vector<int32_t>& reference) {
    if (reference.empty()) return {};
    std::vector<int32_t> seq = prompt;
    seq.insert(seq.end(), reference.begin(), reference.end() - 1);
    runtime::SequenceKv kv;
    const runtime::SeqInput in{seq, &kv, true};
    runtime::ForwardOutput out;
    const runtime::ForwardStatus st = engine.forward({&in, 1}, out);
    kv.release(engine.kv_cache());
    DUET_CHECK(st == runtime::ForwardStatus::OK, "scoring forward of {} tokens did not fit", seq.size());
    const int64_t first = int64_t(prompt.size()) - 1;
    return {out.row(0, first), out.row(0, first) + size_t(reference.size()) * size_t(out.n_vocab)};
}

}  // namespace

bool op_precision_converts_f32(const std::string& mode) {
    return mode == "allow_fp32_to_fp16" || mode == "force_fp16" || mode == "allow_mix_precision";
}

FileRun run_file_engine(const std::string& path, int64_t seq_len, int64_t gen_len, bool pim_layout,
                        const layout::PimLayoutParams& params, const layout::MemoryOrganisation& org, bool fuse,
                        const runtime::WarmupOptions& warmup, bool f32_to_f16, const std::vector<int32_t>* reference,
                        bool q8_0_as_int8, bool seq_len_from_flag) {
    auto model = runtime::load_model(path, warmup);
    const model::Hparams& hp = model->hparams();
    const int64_t ctx = std::max<int64_t>(2, hp.n_ctx_train > 0 ? hp.n_ctx_train : seq_len + gen_len);
    // Past the context: refused when --seq-len asked for it, said aloud when it came from settings.
    const workload::ModelLimits limits{path, hp.n_layer, ctx};
    workload::check_context(limits, seq_len_from_flag ? seq_len : 0, gen_len);
    FileRun run;
    const int64_t n_prompt = workload::cut_to_context(limits, seq_len, gen_len);
    for (int64_t i = 0; i < n_prompt; ++i) run.prompt.push_back(int32_t((7 * i + 3) % hp.n_vocab));

    runtime::EngineOptions eo;
    eo.n_threads = 0;
    eo.n_ctx = n_prompt + gen_len;
    eo.kv_type = DType::F16;
    eo.fuse = fuse;
    runtime::Engine engine(model, eo);
    std::unique_ptr<runtime::PimLayoutWeightSource> ws;
    if (pim_layout) {
        ws = std::make_unique<runtime::PimLayoutWeightSource>(engine.plain_weights(), engine.graph(), params, org,
                                                              f32_to_f16, q8_0_as_int8);
        engine.set_weight_source(ws.get());
        run.pim_matrices = ws->pim_count();
        run.converted_matrices = ws->converted_count();
        run.int8_matrices = ws->int8_count();
        run.int8_scale_bytes = ws->int8_scale_bytes();
    }
    run.warmup = runtime::warm_up(*model, &engine, warmup);
    engine.set_trace(&run.trace);
    runtime::Generator gen(engine);
    runtime::GenerateOptions go;
    go.n_predict = gen_len;
    go.sampling.temperature = 0;  // greedy: both runs must agree token for token
    go.add_bos = false;
    run.tokens = gen.generate_tokens(run.prompt, go, {}, &run.stats);
    engine.set_trace(nullptr);
    gen.reset();  // frees the sequence's KV for the scoring pass
    run.n_vocab = hp.n_vocab;
    run.logits = score(engine, run.prompt, reference ? *reference : run.tokens);
    engine.set_weight_source(nullptr);
    return run;
}

}  // namespace duet::workload
