#include "workload/agent_modelled.h"

#include <algorithm>

#include "graph/memory_plan.h"
#include "sim/planner.h"
#include "sim/report.h"

namespace duet::workload {
namespace {

// Activations without a static plan: every activation tensor of the forward has its own
// buffer for the whole step, what CANN's graph engine does with memory reuse disabled
// (ge.exec.disableReuseMemory = 1 / atc --disable_reuse_memory=1: "non-conflicting memory is
// reused" only when enabled; hiascend.com CANN ATC parameter reference). The engine's static
// plan is the enabled case (graph/memory_plan.h). A caching allocator that frees at last use
// sits between the two; no public figure places it, so it is not modelled.
uint64_t per_op_activation_bytes(const graph::Graph& g, int64_t n_tok) {
    std::vector<char> touched(g.tensors.size(), 0);
    for (const graph::Node& n : g.nodes)
        for (const auto* ts : {&n.in, &n.out})
            for (int32_t t : *ts) touched[size_t(g.root(t))] = 1;
    uint64_t sum = 0;
    for (size_t t = 0; t < g.tensors.size(); ++t) {
        const graph::Tensor& ten = g.tensors[t];
        const bool device = ten.kind == graph::TensorKind::ACTIVATION || ten.kind == graph::TensorKind::LOGITS;
        if (!device || g.root(int32_t(t)) != int32_t(t) || !touched[t]) continue;  // a fused-away tensor: none
        const int64_t rows = ten.rows == graph::Rows::TOKENS ? n_tok : 1;
        sum += uint64_t(rows) * uint64_t(ten.width) * 2;  // f16 on the device, as memory accounting
    }
    return sum;
}

}  // namespace

ModelledRun replay_modelled(const graph::ModelShape& shape, const AgentTrace& trace, const ModelledSwitches& sw,
                            const sim::SimHardware& hw, int64_t max_ctx, const sim::RunOptions& base) {
    sim::RunOptions ro = base;
    ro.placement.policy = sim::Policy::NPU_ONLY;
    graph::ModelShape qshape = shape;
    if (sw.weight_quant != ModelledSwitches::WeightQuant::NONE) qshape.weight_dtype = DType::I8;
    if (sw.kv_int8) qshape.kv_dtype = DType::Q8_0;
    ro.int8_matmul_act_dtype = sw.weight_quant == ModelledSwitches::WeightQuant::W8A8 ? DType::I8 : DType::F16;
    ModelledRun out;
    double sum = 0;
    for (const AgentRequest& rq : agent_requests(trace)) {
        const int64_t n_cached = sw.prefix_reuse ? rq.n_reusable : 0;
        graph::GraphOptions go;
        go.fuse = sw.fuse;
        // W8A8 quantises activations per token: RMSNorm fuses into that quantisation
        go.int8_acts = sw.weight_quant == ModelledSwitches::WeightQuant::W8A8;
        const sim::Plan plan = sim::plan_generation(qshape, rq.n_prompt, rq.n_generate, 1, go, n_cached);
        const int64_t context = sw.paged_kv ? rq.n_prompt + rq.n_generate : std::max(max_ctx, rq.n_prompt + rq.n_generate);
        const sim::RunReport r = sim::simulate_run(qshape, plan, context, 1, ro, hw);
        ModelledCall c;
        c.n_prompt = rq.n_prompt;
        c.n_cached = n_cached;
        c.n_generate = rq.n_generate;
        c.ttft_ms = r.timeline.ttft_ns / 1e6;
        c.tbt_ms = r.tbt_mean_ns / 1e6;
        const sim::DeviceStats npu = r.timeline.prefill.npu();
        c.prefill_busy_ns = npu.busy_ns;
        c.prefill_launch_ns = npu.launch_ns;
        c.memory = r.memory;
        if (!sw.static_plan) {
            uint64_t per_op = 0;
            for (const sim::ForwardSpan& f : plan.forwards)
                per_op = std::max(per_op, per_op_activation_bytes(*plan.graph, f.n_new));
            c.memory.activations_bytes = per_op;
        }
        sum += c.ttft_ms;
        if (c.memory.total_bytes() > out.peak_memory_bytes) {
            out.peak_memory_bytes = c.memory.total_bytes();
            out.peak = c.memory;
        }
        out.calls.push_back(c);
    }
    out.ttft_mean_ms = sum / double(out.calls.size());
    out.ttft_first_ms = out.calls.front().ttft_ms;
    return out;
}

}  // namespace duet::workload
