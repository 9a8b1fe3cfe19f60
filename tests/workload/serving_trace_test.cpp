// Serving request traces: JSONL and ShareGPT files, synthetic arrivals; exact error messages.
#include "workload/serving_trace.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <algorithm>
#include <fstream>

#include "core/error.h"

namespace duet::workload {
namespace {

std::string write_temp(const std::string& name, const std::string& text) {
    const std::filesystem::path p = std::filesystem::temp_directory_path() / ("duet_serving_trace_" + name);
    std::ofstream(p) << text;
    return p.string();
}

std::string error_of(const std::string& path, const TokenCounter& count = {}, int64_t n_ctx = 4096) {
    try {
        load_serving_trace(path, n_ctx, count, {});
    } catch (const Error& e) {
        return e.what();
    }
    return "no error";
}

TEST(ServingTrace, ReadsJsonlInFileOrderWithTokenCountsOrText) {
    const std::string p = write_temp("ok.jsonl",
                                     "{\"arrival_s\": 0.5, \"prompt_tokens\": 100, \"output_tokens\": 20}\n"
                                     "\n"
                                     "{\"arrival_s\": 0, \"prompt\": \"four words of text\", \"output_tokens\": 1}\n");
    const TokenCounter words = [](const std::string& t) {
        return std::vector<int32_t>(size_t(std::count(t.begin(), t.end(), ' ') + 1), int32_t(t.size()));
    };
    const auto r = load_serving_trace(p, 4096, words, {});
    ASSERT_EQ(r.size(), 2u);
    EXPECT_EQ(r[0].arrival_ns, 500'000'000);
    EXPECT_EQ(r[0].prompt_tokens, 100);
    EXPECT_EQ(r[0].output_tokens, 20);
    EXPECT_EQ(r[1].arrival_ns, 0);
    EXPECT_EQ(r[1].prompt_tokens, 4);
    EXPECT_EQ(r[0].tokens, nullptr);  // a count has no ids
    ASSERT_NE(r[1].tokens, nullptr);  // a text keeps its ids for the prefix cache
    EXPECT_EQ(r[1].tokens->size(), 4u);
    EXPECT_EQ(load_serving_trace(p, 4096, words, {}, 1).size(), 1u);  // --requests 1
}

TEST(ServingTrace, BadJsonlNamesFileLineAndField) {
    const auto line2 = [](const std::string& name, const std::string& second) {
        return write_temp(name, "{\"arrival_s\": 0, \"prompt_tokens\": 5, \"output_tokens\": 5}\n" + second + "\n");
    };
    std::string p = line2("missing.jsonl", "{\"prompt_tokens\": 5, \"output_tokens\": 5}");
    EXPECT_EQ(error_of(p), p + " line 2: field \"arrival_s\" is missing (allowed: seconds >= 0)");
    p = line2("negative.jsonl", "{\"arrival_s\": -1.5, \"prompt_tokens\": 5, \"output_tokens\": 5}");
    EXPECT_EQ(error_of(p), p + " line 2: field \"arrival_s\" = -1.5 is negative (allowed: seconds >= 0)");
    p = line2("text_time.jsonl", "{\"arrival_s\": \"soon\", \"prompt_tokens\": 5, \"output_tokens\": 5}");
    EXPECT_EQ(error_of(p), p + " line 2: field \"arrival_s\" = \"soon\" is not a number (allowed: seconds >= 0)");
    p = line2("no_output.jsonl", "{\"arrival_s\": 1, \"prompt_tokens\": 5}");
    EXPECT_EQ(error_of(p), p + " line 2: field \"output_tokens\" is missing (allowed: tokens >= 1)");
    p = line2("zero_prompt.jsonl", "{\"arrival_s\": 1, \"prompt_tokens\": 0, \"output_tokens\": 5}");
    EXPECT_EQ(error_of(p), p + " line 2: field \"prompt_tokens\" = 0 is out of range (allowed: tokens >= 1)");
    p = line2("frac.jsonl", "{\"arrival_s\": 1, \"prompt_tokens\": 2.5, \"output_tokens\": 5}");
    EXPECT_EQ(error_of(p), p + " line 2: field \"prompt_tokens\" = 2.5 is not a whole number (allowed: tokens >= 1)");
    p = line2("no_prompt.jsonl", "{\"arrival_s\": 1, \"output_tokens\": 5}");
    EXPECT_EQ(error_of(p), p + " line 2: field \"prompt_tokens\" is missing (allowed: \"prompt_tokens\": tokens >= 1, "
                               "or \"prompt\": text)");
    p = line2("text_no_tok.jsonl", "{\"arrival_s\": 1, \"prompt\": \"hi\", \"output_tokens\": 5}");
    EXPECT_EQ(error_of(p), p + " line 2: field \"prompt\" is text, and the model has no tokenizer to count it "
                               "(allowed: a GGUF --model, or \"prompt_tokens\" as a number)");
    p = line2("too_long.jsonl", "{\"arrival_s\": 1, \"prompt_tokens\": 4000, \"output_tokens\": 200}");
    EXPECT_EQ(error_of(p), p + " line 2: field \"output_tokens\": prompt 4000 + output 200 = 4200 tokens exceeds the "
                               "context of 4096 tokens (allowed: at most 4096 in all)");
    p = line2("garbage.jsonl", "arrival_s=1");
    EXPECT_EQ(error_of(p), p + " line 2: not a JSON object (allowed: {\"arrival_s\", \"prompt_tokens\" or \"prompt\", "
                               "\"output_tokens\"})");
    EXPECT_EQ(error_of("/nonexistent/trace.jsonl"), "--workload-file /nonexistent/trace.jsonl: cannot open the file");
}

TEST(ServingTrace, ShareGptTakesTheFirstHumanTurnAndItsReply) {
    const std::string p = write_temp(
        "share.json",
        R"([{"id": "a", "conversations": [{"from": "system", "value": "x"}, {"from": "human", "value": "one two three"},
            {"from": "gpt", "value": "four five"}]},
           {"id": "b", "conversations": [{"from": "human", "value": "only a question"}]},
           {"id": "c", "conversations": [{"from": "human", "value": "w w w w w w w w w w"}, {"from": "gpt", "value": "v"}]}])");
    const TokenCounter words = [](const std::string& t) {
        return std::vector<int32_t>(size_t(std::count(t.begin(), t.end(), ' ') + 1), int32_t(t.size()));
    };
    const auto r = load_serving_trace(p, 4096, words, {2.0, 1.0, 7});
    ASSERT_EQ(r.size(), 2u);
    EXPECT_EQ(r[0].prompt_tokens, 3);
    EXPECT_EQ(r[0].output_tokens, 2);
    EXPECT_EQ(r[1].prompt_tokens, 10);
    EXPECT_EQ(r[0].arrival_ns, 0);
    EXPECT_EQ(r[1].arrival_ns, arrival_times_ns({2.0, 1.0, 7}, 2)[1]);
    EXPECT_EQ(load_serving_trace(p, 8, words, {}).size(), 1u);  // entry c (11 tokens) beyond a context of 8: skipped
    EXPECT_EQ(error_of(p), p + " entry 0: field \"value\" is text, and the model has no tokenizer to count it "
                               "(allowed: a GGUF --model, or \"prompt_tokens\" as a number)");
    const std::string bad = write_temp("share_bad.json", R"([{"id": "a", "turns": []}])");
    EXPECT_EQ(error_of(bad, words), bad + " entry 0: field \"conversations\" is missing (allowed: an array of "
                                          "{\"from\", \"value\"} turns)");
}

TEST(ServingTrace, AgentSessionsAreClosedLoopCallsOverOneTranscriptEach) {
    const AgentTrace t = default_agent_trace(2);  // system 1536, then 2 x (user 48, tool_call 32, tool 256, assistant 64)
    const std::vector<AgentRequest> calls = agent_requests(t);
    const auto r = agent_session_requests(t, 2, {1.0, 1.0, 3}, 7'000'000, 8192);
    ASSERT_EQ(r.size(), 2 * calls.size());
    const size_t n = calls.size();
    for (size_t s = 0; s < 2; ++s)
        for (size_t k = 0; k < n; ++k) {
            const auto& q = r[s * n + k];
            EXPECT_EQ(q.prompt_tokens, calls[k].n_prompt);
            EXPECT_EQ(q.output_tokens, calls[k].n_generate);
            EXPECT_EQ(q.after, k == 0 ? -1 : int64_t(s * n + k - 1));
            EXPECT_EQ(q.think_ns, k == 0 ? 0 : 7'000'000);
            ASSERT_EQ(int64_t(q.tokens->size()), calls[k].n_prompt + calls[k].n_generate);
            if (k > 0) {  // the history: the previous call's prompt and output, token for token
                const auto& prev = *r[s * n + k - 1].tokens;
                EXPECT_TRUE(std::equal(prev.begin(), prev.end(), q.tokens->begin()));
            }
        }
    EXPECT_EQ(r[n].arrival_ns, arrival_times_ns({1.0, 1.0, 3}, 2)[1]);
    // The system prompt has the same ids in both sessions, the rest its own.
    const auto &a = *r[0].tokens, &b = *r[n].tokens;
    EXPECT_TRUE(std::equal(a.begin(), a.begin() + 1536, b.begin()));
    EXPECT_NE(a[1536], b[1536]);
    try {
        agent_session_requests(t, 1, {}, 0, 1000);
        ADD_FAILURE() << "no error";
    } catch (const Error& e) {
        EXPECT_EQ(std::string(e.what()), t.source + ": the call at message 3 needs 1584 + 32 tokens, beyond the "
                                                    "context of 1000 tokens (allowed: at most 1000 in all, or --ctx)");
    }
}

TEST(ServingArrivals, GammaGapsHaveTheRateAndBurstinessAndRepeatWithTheSeed) {
    const int64_t n = 40001;
    for (double cv : {1.0, 3.0}) {
        const std::vector<int64_t> t = arrival_times_ns({5.0, cv, 11}, n);
        EXPECT_EQ(t, arrival_times_ns({5.0, cv, 11}, n));
        EXPECT_NE(t, arrival_times_ns({5.0, cv, 12}, n));
        double sum = 0, sum2 = 0;
        for (size_t i = 1; i < t.size(); ++i) {
            const double g = double(t[i] - t[i - 1]) / 1e9;
            sum += g, sum2 += g * g;
        }
        const double mean = sum / double(n - 1), sd = std::sqrt(sum2 / double(n - 1) - mean * mean);
        EXPECT_NEAR(mean, 0.2, 0.2 * 0.05) << cv;  // 1 / rate
        EXPECT_NEAR(sd / mean, cv, cv * 0.05) << cv;
    }
    EXPECT_EQ(arrival_times_ns({}, 3), (std::vector<int64_t>{0, 0, 0}));  // rate inf
}

}  // namespace
}  // namespace duet::workload
