#include "runtime/tp_rank.h"

#include <cstdio>
#include <cstring>
#include <unordered_map>

#include "core/error.h"
#include "core/timer.h"
#include "graph/shard_pipeline_parallel.h"
#include "graph/shard_tensor_parallel.h"
#include "model/hparams.h"
#include "runtime/tp_weights.h"

namespace duet::runtime {
namespace {

// The step message: n_seq, then per sequence {key, cached positions, new tokens, all_logits},
// then every sequence's new tokens, all as int64 except the tokens (int32). Its byte count
// goes first in a broadcast of its own; -1 there means "finished".
struct StepSeq {
    uint64_t key;
    int64_t n_past, n_tok, all_logits;
};
constexpr int64_t kFinished = -1;

template <typename T>
void put(std::vector<uint8_t>& m, const T& v) {
    const size_t at = m.size();
    m.resize(at + sizeof(T));
    std::memcpy(m.data() + at, &v, sizeof(T));
}

template <typename T>
T get(const std::vector<uint8_t>& m, size_t& at) {
    DUET_CHECK(at + sizeof(T) <= m.size(), "parallel step message is truncated");
    T v;
    std::memcpy(&v, m.data() + at, sizeof(T));
    at += sizeof(T);
    return v;
}

graph::TpShard shard_of(const Model& m, int tp, int rank) {
    const graph::ModelShape shape = model::model_shape(m.hparams(), m.weights().matrix_dtype(), DType::F16, m.path());
    return graph::tp_shard(shape, tp, rank, tp_ff_align(m.weights()));
}

// The tensors pipeline stage `st` reads; the others absent.
model::Weights stage_weights(const model::Weights& full, const graph::PpStage& st) {
    model::Weights w = full;
    for (int64_t l = 0; l < int64_t(w.layers.size()); ++l)
        if (l < st.layers.begin || l >= st.layers.end()) w.layers[size_t(l)] = {};
    for (const graph::TensorSpec& t : graph::tensor_catalogue())
        if ((t.binding == graph::Binding::INPUT && !st.first()) || (t.binding == graph::Binding::OUTPUT && !st.last()))
            w[t.role] = {};
    return w;
}

}  // namespace

namespace {

// `flag n` (--tp or --pp) against the job: n ranks under mpirun, or 1 without it.
void check_world(const char* flag, int n, const parallel::Communicator& comm) {
    if (n == comm.size()) return;
    if (comm.size() == 1)
        fail("{} {} needs {} MPI ranks, and this process was not started by mpirun (allowed: {} 1, or "
             "mpirun -np {} duet ... {} {}{})",
             flag, n, n, flag, n, flag, n, parallel::built_with_mpi() ? "" : "; this duet was built without MPI");
    fail("{} {} does not match the {} ranks of this MPI job (allowed: {} {}, the mpirun -np value)", flag, n,
         comm.size(), flag, comm.size());
}

}  // namespace

void check_parallel_world(int tp, int pp, const parallel::Communicator& comm) {
    if (tp > 1 && pp > 1)
        fail("--tp {} with --pp {}: the real engine runs tensor or pipeline parallelism, not both (allowed: --tp 1 "
             "or --pp 1; duet bench models both)",
             tp, pp);
    if (pp == 1) return check_world("--tp", tp, comm);
    check_world("--pp", pp, comm);
}

void check_tp_world(int tp, const parallel::Communicator& comm) { check_world("--tp", tp, comm); }

TpRank::TpRank(std::shared_ptr<const Model> model, parallel::Communicator& comm, int tp, int pp)
    : model_(std::move(model)), comm_(comm), pp_(pp) {
    check_parallel_world(tp, pp, comm);
    shard_ = shard_of(*model_, tp, pp > 1 ? 0 : comm.rank());
    weights_ = shard_weights(model_->weights(), model_->hparams(), shard_);
    own_ = weights_;
    if (pp > 1) {
        const graph::ModelShape shape = model::model_shape(model_->hparams(), model_->weights().matrix_dtype(),
                                                    DType::F16, model_->path());
        own_ = stage_weights(weights_, {pp, comm.rank(), graph::pp_stage_layers(shape, pp, comm.rank())});
    }
}

TpRank::~TpRank() {
    try {
        finish();
    } catch (...) {
    }
}

uint64_t TpRank::shard_bytes() const { return runtime::shard_bytes(own_); }

std::unique_ptr<Engine> TpRank::make_engine(const EngineOptions& opts) {
    const model::Hparams& hp = model_->hparams();
    graph::Graph g = graph::build_graph(model::model_shape(hp, model_->weights().matrix_dtype(), DType::F16));
    g = graph::ShardTensorParallel(shard_.tp, shard_.rank, false, tp_ff_align(model_->weights())).run(g);
    g = graph::ShardPipelineParallel(pp_, pp_ > 1 ? comm_.rank() : 0).run(g);
    auto e = std::make_unique<Engine>(model_, opts, std::move(g), weights_);
    e->set_tp_hook(this);
    return e;
}

WarmupStats TpRank::prefault() const {
    WarmupStats st;
    const int64_t t0 = now_ns();
    st.prefault_bytes = prefault_slices(own_);
    st.prefault_ms = double(now_ns() - t0) / 1e6;
    st.method = pp_ > 1 ? "touch pass of this stage's layers" : "touch pass of this rank's slices";
    return st;
}

void TpRank::all_reduce_sum(float* x, int64_t n) {
    const int64_t t0 = now_ns();
    comm_.all_reduce_sum(x, n);
    all_reduce_ns_ += now_ns() - t0;
    ++n_all_reduce_;
}

void TpRank::send(const float* x, int64_t n, int stage) { comm_.send(x, n, stage); }
void TpRank::recv(float* x, int64_t n, int stage) { comm_.recv(x, n, stage); }

void TpRank::end_step(ForwardOutput& out) {
    const int last = pp_ - 1;
    if (pp_ == 1) return;
    if (comm_.rank() == last) comm_.send(out.logits.data(), int64_t(out.logits.size()), 0);
    if (leader()) comm_.recv(out.logits.data(), int64_t(out.logits.size()), last);
}

void TpRank::begin_step(std::span<const SeqInput> batch) {
    if (!leader() || comm_.size() == 1) return;
    msg_.clear();
    put(msg_, int64_t(batch.size()));
    for (const SeqInput& in : batch)
        put(msg_, StepSeq{uint64_t(reinterpret_cast<uintptr_t>(in.kv)), in.kv->n_tokens(), int64_t(in.tokens.size()),
                          int64_t(in.all_logits)});
    for (const SeqInput& in : batch)
        for (int32_t t : in.tokens) put(msg_, t);
    int64_t n = int64_t(msg_.size());
    comm_.broadcast(&n, sizeof n, 0);
    comm_.broadcast(msg_.data(), n, 0);
}

RankEngine make_rank_engine(std::shared_ptr<const Model> model, parallel::Communicator& comm, int tp, int pp,
                            const EngineOptions& opts) {
    check_parallel_world(tp, pp, comm);
    RankEngine re;
    if (tp == 1 && pp == 1) {
        re.engine = std::make_unique<Engine>(std::move(model), opts);
        return re;
    }
    re.tp = std::make_unique<TpRank>(std::move(model), comm, tp, pp);
    re.engine = re.tp->make_engine(opts);
    return re;
}

WarmupStats warm_up_rank(const Model& model, RankEngine& re, const WarmupOptions& opts) {
    if (!re.tp) return warm_up(model, re.engine.get(), opts);
    WarmupStats st;
    if (opts.prefault) st = re.tp->prefault();
    if (re.tp->leader()) warm_forwards(*re.engine, opts.n_rounds, st);
    return st;
}

void TpRank::finish() {
    if (!leader() || finished_ || comm_.size() == 1) return;
    finished_ = true;
    int64_t n = kFinished;
    comm_.broadcast(&n, sizeof n, 0);
}

namespace {

struct Followed {
    SequenceKv kv;
    int64_t last_step = 0;
};

// Releases the least recently stepped sequence not in this step; false when there is none.
bool drop_oldest(std::unordered_map<uint64_t, Followed>& seqs, int64_t step, KvCache& cache) {
    auto oldest = seqs.end();
    for (auto it = seqs.begin(); it != seqs.end(); ++it)
        if (it->second.last_step < step && (oldest == seqs.end() || it->second.last_step < oldest->second.last_step))
            oldest = it;
    if (oldest == seqs.end()) return false;
    oldest->second.kv.release(cache);
    seqs.erase(oldest);
    return true;
}

}  // namespace

void TpRank::follow(Engine& engine) {
    DUET_CHECK(!leader(), "follow() on the leader");
    std::unordered_map<uint64_t, Followed> seqs;
    KvCache& cache = engine.kv_cache();
    std::vector<StepSeq> head;
    std::vector<int32_t> tokens;
    std::vector<SeqInput> batch;
    ForwardOutput out;
    try {
        for (int64_t step = 1;; ++step) {
            int64_t n = 0;
            comm_.broadcast(&n, sizeof n, 0);
            if (n == kFinished) break;
            msg_.resize(size_t(n));
            comm_.broadcast(msg_.data(), n, 0);
            size_t at = 0;
            head.resize(size_t(get<int64_t>(msg_, at)));
            int64_t n_tok = 0;
            for (StepSeq& s : head) n_tok += (s = get<StepSeq>(msg_, at)).n_tok;
            tokens.resize(size_t(n_tok));
            for (int32_t& t : tokens) t = get<int32_t>(msg_, at);
            batch.clear();
            const int32_t* next = tokens.data();
            for (const StepSeq& s : head) {
                Followed& f = seqs[s.key];
                f.last_step = step;
                if (f.kv.n_tokens() > s.n_past) f.kv.truncate(cache, s.n_past);
                if (f.kv.n_tokens() < s.n_past)
                    fail("parallel rank {}: a sequence continues at position {} but this rank computed only {} "
                         "(its KV came from another sequence: a prefix cache or a fork, not supported under --tp or "
                         "--pp)",
                         rank(), s.n_past, f.kv.n_tokens());
                batch.push_back({{next, size_t(s.n_tok)}, &f.kv, s.all_logits != 0});
                next += s.n_tok;
            }
            ForwardStatus st = engine.forward(batch, out);
            while (st == ForwardStatus::KV_FULL && drop_oldest(seqs, step, cache)) st = engine.forward(batch, out);
            if (st != ForwardStatus::OK)
                fail("parallel rank {}: a forward rank 0 ran returned {} here (the KV pools differ)", rank(),
                     st == ForwardStatus::KV_FULL ? "KV_FULL" : "CTX_EXCEEDED");
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "duet: error: %s\n", e.what());
        std::fflush(stderr);
        comm_.abort(2);
    }
    for (auto& [key, f] : seqs) f.kv.release(cache);
}

}  // namespace duet::runtime
