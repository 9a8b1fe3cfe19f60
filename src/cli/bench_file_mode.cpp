#include "cli/bench_file_mode.h"

#include <algorithm>
#include <cstring>
#include <map>

#include "core/error.h"
#include "kernels/kernels.h"
#include "runtime/weight_source.h"

namespace duet::cli {
namespace {

using graph::WeightRole;

// Weights reached through the PIM layout: the ND matrix is reordered into the PIM base with
// its block index at construction; matmul gathers the rows back through the index only.
class PimLayoutWeightSource : public runtime::WeightSource {
public:
    // Every matrix the graph's MATMUL nodes read (fused ones included) goes through the layout.
    PimLayoutWeightSource(const runtime::PlainWeightSource& plain, const graph::Graph& g,
                          const layout::PimLayoutParams& params, const layout::MemoryOrganisation& org)
        : plain_(plain) {
        auto add = [&](WeightRole role, int32_t layer) {
            const model::TensorRef& t = plain_.tensor(role, layer);
            if (t.dtype != DType::F16 && t.dtype != DType::BF16) {
                ++plain_count_;
                return;
            }
            Matrix m;
            m.plan = layout::plan_pim_layout(t.rows, t.cols, t.dtype, params, org, false);
            std::vector<uint8_t> nd(size_t(t.rows * t.cols) * 2);
            for (int64_t r = 0; r < t.rows; ++r)
                std::memcpy(&nd[size_t(r * t.cols) * 2], static_cast<const uint8_t*>(t.data) + size_t(r) * t.row_stride_bytes,
                            size_t(t.cols) * 2);
            m.base = layout::to_pim(nd.data(), m.plan);
            m.index = layout::build_block_index(m.plan);
            mats_.emplace(std::make_pair(int(role), layer), std::move(m));
        };
        for (const graph::MatrixUse& m : graph::matrices(g)) add(m.role, m.layer);
    }
    int64_t pim_count() const { return int64_t(mats_.size()); }
    int64_t plain_count() const { return plain_count_; }

    runtime::WeightInfo info(WeightRole role, int32_t layer) const override { return plain_.info(role, layer); }
    void matmul(WeightRole role, int32_t layer, const float* x, int64_t m, int64_t x_stride, float* y, int64_t y_stride,
                ThreadPool& pool) const override {
        auto it = mats_.find(std::make_pair(int(role), layer));
        if (it == mats_.end()) return plain_.matmul(role, layer, x, m, x_stride, y, y_stride, pool);
        const Matrix& mat = it->second;
        const int64_t n = mat.plan.n_rows, k = mat.plan.k;
        std::vector<uint8_t> nd(size_t(n * k) * 2);
        layout::read_tile_via_index(mat.base.data(), mat.base.size(), mat.index, 0, n, 0, k, nd.data());
        kernels::matmul(x, m, k, x_stride, nd.data(), mat.plan.dtype, size_t(k) * 2, n, y, y_stride, pool);
    }

private:
    struct Matrix {
        layout::PimLayoutPlan plan;
        std::vector<uint8_t> base;
        layout::PimBlockIndex index;
    };
    const runtime::PlainWeightSource& plain_;
    std::map<std::pair<int, int32_t>, Matrix> mats_;
    int64_t plain_count_ = 0;
};

}  // namespace

FileRun run_file_engine(const std::string& path, int64_t seq_len, int64_t gen_len, bool pim_layout,
                        const layout::PimLayoutParams& params, const layout::MemoryOrganisation& org, bool fuse,
                        const runtime::WarmupOptions& warmup) {
    auto model = runtime::Model::load(path);
    const model::Hparams& hp = model->hparams();
    const int64_t ctx = std::max<int64_t>(2, hp.n_ctx_train > 0 ? hp.n_ctx_train : seq_len + gen_len);
    if (gen_len >= ctx) fail("--gen-len = {} does not fit {}'s context of {} tokens", gen_len, path, ctx);
    FileRun run;
    const int64_t n_prompt = std::min(seq_len, ctx - gen_len);
    for (int64_t i = 0; i < n_prompt; ++i) run.prompt.push_back(int32_t((7 * i + 3) % hp.n_vocab));

    runtime::EngineOptions eo;
    eo.n_threads = 0;
    eo.n_ctx = n_prompt + gen_len;
    eo.kv_type = DType::F16;
    eo.fuse = fuse;
    runtime::Engine engine(model, eo);
    std::unique_ptr<PimLayoutWeightSource> ws;
    if (pim_layout) {
        ws = std::make_unique<PimLayoutWeightSource>(engine.plain_weights(), engine.graph(), params, org);
        engine.set_weight_source(ws.get());
        run.pim_matrices = ws->pim_count();
        run.plain_matrices = ws->plain_count();
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
    engine.set_weight_source(nullptr);
    return run;
}

}  // namespace duet::cli
