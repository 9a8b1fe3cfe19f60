#include "workload/agent_real.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>

#include "core/error.h"
#include "runtime/cpu_affinity.h"
#include "runtime/engine.h"
#include "runtime/generator.h"
#include "runtime/model.h"
#include "runtime/warmup.h"

namespace duet::workload {
namespace {

// Resets the process's peak RSS (VmHWM) to the current RSS (Linux clear_refs "5").
bool reset_peak_rss() {
    std::ofstream f("/proc/self/clear_refs");
    f << "5";
    f.flush();
    return bool(f);
}

uint64_t peak_rss_bytes() {
    std::ifstream f("/proc/self/status");
    std::string line;
    while (std::getline(f, line))
        if (line.rfind("VmHWM:", 0) == 0) return std::stoull(line.substr(6)) * 1024;  // kB
    return 0;
}

void evict_from_page_cache(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;  // Model::load reports the problem
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ::close(fd);
}

// The synthetic ids of message `msg` (stable across runs and switches).
void append_message_tokens(std::vector<int32_t>& out, size_t msg, int64_t n, int64_t n_vocab) {
    for (int64_t i = 0; i < n; ++i)
        out.push_back(int32_t((uint64_t(msg) * 1000003u + uint64_t(i) * 7919u + 3u) % uint64_t(n_vocab)));
}

}  // namespace

int64_t session_tokens(const AgentTrace& trace) {
    int64_t n = 0;
    for (const AgentMessage& m : trace.messages) n += m.n_tokens;
    return n;
}

RealRun replay_real(const std::string& model_path, const AgentTrace& trace, const RealSwitches& sw,
                    const RealOptions& opts) {
    const std::vector<AgentRequest> reqs = agent_requests(trace);
    if (opts.evict_first) evict_from_page_cache(model_path);
    RealRun run;
    run.rss_reset = reset_peak_rss();
    auto model = runtime::Model::load(model_path);
    run.load_ms = model->load_ms();
    run.file_bytes = model->file().file_bytes();
    const model::Hparams& hp = model->hparams();
    const int64_t need = session_tokens(trace) + 1;
    const int64_t reserve = std::max(need, opts.max_ctx > 0 ? opts.max_ctx : hp.n_ctx_train);

    runtime::EngineOptions eo = opts.engine;
    eo.n_threads = opts.threads;
    eo.fuse = sw.fuse;
    eo.static_plan = sw.static_plan;
    eo.kv_type = sw.kv_int8 ? DType::Q8_0 : DType::F16;
    eo.n_ctx = reserve;  // positions a sequence may reach either way
    // paged: blocks for what the session holds; else the pool reserves the whole context
    eo.kv_blocks = sw.paged_kv ? runtime::KvCache::blocks_for(need, 1, eo.block_tokens) : 0;
    runtime::Engine engine(model, eo);
    if (opts.pin_threads) runtime::pin_pool_threads(engine.pool());
    run.kv_pool_bytes = engine.kv_cache().total_bytes();
    runtime::WarmupOptions wo;
    wo.prefault = sw.warmup;
    wo.n_rounds = sw.warmup ? 1 : 0;
    wo.progress = false;
    const runtime::WarmupStats ws = runtime::warm_up(*model, &engine, wo);
    run.warmup_ms = ws.prefault_ms + ws.forwards_ms;

    runtime::Generator gen(engine);
    std::vector<int32_t> history;
    size_t next_msg = 0;
    for (const AgentRequest& rq : reqs) {
        for (; next_msg < rq.message; ++next_msg)
            append_message_tokens(history, next_msg, trace.messages[next_msg].n_tokens, hp.n_vocab);
        runtime::GenerateOptions go;
        go.n_predict = rq.n_generate;
        go.sampling.temperature = 0;
        go.add_bos = false;
        go.reuse_prefix = sw.prefix_reuse;
        go.ignore_eos = true;
        runtime::GenerateStats st;
        const std::vector<int32_t> out = gen.generate_tokens(history, go, {}, &st);
        run.calls.push_back({st.n_prompt, st.n_prompt_cached, int64_t(out.size()), st.ttft_ms});
        history.insert(history.end(), out.begin(), out.end());  // the agent resends what the model said
        ++next_msg;
    }
    double sum = 0;
    for (const CallTiming& c : run.calls) sum += c.ttft_ms;
    run.ttft_mean_ms = sum / double(run.calls.size());
    run.ttft_first_ms = run.calls.front().ttft_ms;
    run.peak_rss_bytes = peak_rss_bytes();
    return run;
}

}  // namespace duet::workload
