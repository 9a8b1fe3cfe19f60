#pragma once
// Requests for `duet bench --workload serving` (docs/serving.md): synthetic arrivals or a trace
// file, as serving::ServingRequest (arrival time, prompt tokens, output tokens).
//
// Synthetic arrivals: inter-arrival times drawn from a gamma distribution with mean 1/rate and
// coefficient of variation `burstiness_cv` (shape 1/cv^2, scale cv^2/rate; cv = 1 is a Poisson
// process, cv > 1 burstier), the first request at t = 0; rate = infinity puts every request at
// t = 0. std::mt19937_64 seeded with `seed`, so a seed gives the same arrivals in every run of
// the same build.
//
// Trace files (format by the first non-blank character):
//  - JSONL ('{'): one object per line, {"arrival_s": seconds >= 0, "prompt_tokens": n >= 1 (or
//    "prompt": text, counted by the model's tokenizer), "output_tokens": n >= 1}; blank lines
//    are skipped; arrival times need not be sorted. `duet serve --request-log` writes this.
//  - ShareGPT ('['): an array of {"conversations": [{"from": "human", "value": text},
//    {"from": "gpt", "value": text}, ...]}; each entry's first human turn is the prompt and the
//    reply after it the output (both counted by the tokenizer; vLLM's benchmark reads the same
//    file this way); entries without such a pair, or longer than the context, are skipped (with
//    a warning: vLLM's benchmark filters them too); arrivals are synthetic (the rate,
//    burstiness and seed above), in file order.
// Every error names the file, the line (JSONL) or entry (ShareGPT), the field and what is
// allowed; a JSONL prompt + output beyond the context is an error, not a silent truncation.
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "serving/serving_run.h"
#include "workload/agent_trace.h"
#include "workload/agent_trace.h"

namespace duet::workload {

struct ArrivalSpec {
    double rate_rps = std::numeric_limits<double>::infinity();
    double burstiness_cv = 1.0;
    uint64_t seed = 0;
};

// n arrival times in ns (first at 0).
std::vector<int64_t> arrival_times_ns(const ArrivalSpec& spec, int64_t n);

// n identical requests (prompt_tokens, output_tokens) at synthetic arrival times.
std::vector<serving::ServingRequest> synthetic_requests(const ArrivalSpec& spec, int64_t n, int64_t prompt_tokens,
                                                        int64_t output_tokens);

// Gives every request prompt token ids whose first `shared` are the same for all (a system
// prompt) and the rest unique to the request, so the modelled prefix cache shares exactly that
// prefix. Throws duet::Error when a prompt is not longer than `shared` (--shared-prefix).
void give_shared_prefix(std::vector<serving::ServingRequest>& reqs, int64_t shared);

// Agent sessions as a closed-loop serving workload: n_sessions copies of the session `trace`
// (docs/agent.md), starting at the arrival times of `spec`; each model call of a session arrives
// think_ns after the previous call finished, with the whole history as its prompt. Token ids
// make the history reusable by the modelled prefix cache: system messages have the same ids in
// every session (shared tool schemas), every other message ids of its own. Throws duet::Error
// (naming the trace's source) when a call's prompt + output exceed the context n_ctx.
std::vector<serving::ServingRequest> agent_session_requests(const AgentTrace& trace, int64_t n_sessions,
                                                            const ArrivalSpec& spec, int64_t think_ns, int64_t n_ctx);
// True when the file holds agent messages ({"role": ...} lines) rather than serving requests.
bool is_agent_session_file(const std::string& path);

// Token ids of a text; empty function: the model has no tokenizer (text prompts are then an
// error). A prompt given as text keeps its ids (ServingRequest::tokens: the modelled prefix
// cache shares what prompts have in common); a reply is only counted.
using TokenCounter = std::function<std::vector<int32_t>(const std::string&)>;

// True when the file is ShareGPT JSON (its first non-blank character is '['): its arrivals are synthetic.
bool is_sharegpt_file(const std::string& path);

// Reads a trace file (JSONL or ShareGPT, see above). n_ctx: the context (prompt + output must fit);
// max_requests >= 0 keeps the first that many (in file order); `spec` gives ShareGPT's arrivals.
// Throws duet::Error naming file, line/entry and field.
std::vector<serving::ServingRequest> load_serving_trace(const std::string& path, int64_t n_ctx,
                                                        const TokenCounter& count_tokens, const ArrivalSpec& spec,
                                                        int64_t max_requests = -1);

}  // namespace duet::workload
