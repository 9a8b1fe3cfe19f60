// The server's limits against the real `duet serve` binary: body size while reading (chunked
// and form-encoded bodies too), open connections, and a failing engine step.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "http_probe.h"

namespace duet::test {
namespace {

using nlohmann::json;

// One HTTP/1.1 chunk: size in hex, CRLF, data, CRLF.
std::string fmt_chunk(const std::string& data) {
    char size[32];
    std::snprintf(size, sizeof size, "%zx\r\n", data.size());
    return size + data + "\r\n";
}

json json_body(const std::string& response) { return json::parse(body_of(response)); }

const char* kTooLarge = "Request body is larger than the server's limit of 65536 bytes (--max-body-bytes)";

// A chunked body was read whole before the limit was looked at: 30 MB took the server from
// 393 MB to 1.1 GB. Now reading stops at the limit and the peak RSS stays near where it was.
TEST(ServerLimits, ChunkedBodyOverTheLimitIs413WhileReading) {
    ModelDir d("chunked");
    ServerProcess s(d.serve({"--max-body-bytes", "65536"}), rss_measuring_env());
    reset_peak_rss(s.pid());  // the peak then measures this request only
    const int64_t rss_before_kb = status_kb(s.pid(), "VmRSS");
    ASSERT_GT(rss_before_kb, 0);

    const int fd = connect_to(s.port());
    ASSERT_GE(fd, 0);
    const std::string head =
        "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        "Transfer-Encoding: chunked\r\n\r\n";
    ASSERT_EQ(::send(fd, head.data(), head.size(), MSG_NOSIGNAL), ssize_t(head.size()));
    const std::string payload(1 << 16, 'a');
    const std::string chunk = fmt_chunk(payload);
    const int64_t total_bytes = 40ll << 20;  // 40 MB offered
    for (int64_t sent = 0; sent < total_bytes; sent += int64_t(payload.size())) {
        if (::send(fd, chunk.data(), chunk.size(), MSG_NOSIGNAL) != ssize_t(chunk.size())) break;  // server closed
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, 0) > 0) break;  // the answer is there: stop sending
    }
    const std::string response = read_response(fd);
    ::close(fd);
    ASSERT_EQ(response.rfind("HTTP/1.1 413", 0), 0u) << response.substr(0, 200);
    const json e = json_body(response);
    EXPECT_EQ(e["error"]["message"], kTooLarge);
    EXPECT_EQ(e["error"]["type"], "invalid_request_error");
    const int64_t peak_kb = status_kb(s.pid(), "VmHWM");
    // Generous: the 40 MB body must not have been held (it would add >= 40 MB).
    EXPECT_LT(peak_kb - rss_before_kb, 16 * 1024) << "peak RSS grew by " << (peak_kb - rss_before_kb) << " kB";
    EXPECT_EQ(httplib::Client("127.0.0.1", s.port()).Get("/health")->status, 200);  // still serving
}

// curl -d @body.json sends application/x-www-form-urlencoded: httplib applied its compiled-in
// 8192-byte form limit while the message named 1048576. Now the body is JSON whatever the
// Content-Type, under one limit that the message states.
TEST(ServerLimits, FormEncodedBodyIsJsonUnderTheOneLimit) {
    ModelDir d("form");
    ServerProcess s(d.serve({"--max-body-bytes", "65536"}), {});
    httplib::Client c("127.0.0.1", s.port());
    c.set_read_timeout(std::chrono::seconds(60));
    const std::string pad(20000, ' ');  // > 8192, < 65536
    const std::string body = R"({"prompt":"Once upon a time","max_tokens":3,"temperature":0})" + pad;
    auto r = c.Post("/v1/completions", body, "application/x-www-form-urlencoded");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200) << r->body;
    EXPECT_EQ(json::parse(r->body)["usage"]["completion_tokens"], 3);
    r = c.Post("/v1/completions", std::string(70000, ' '), "application/x-www-form-urlencoded");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 413);
    EXPECT_EQ(json::parse(r->body)["error"]["message"], kTooLarge);
    r = c.Post("/v1/completions", std::string(70000, ' '), "text/plain");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 413);
}

// Connections over --max-connections are answered 503 and closed; once others close, new ones
// are served again.
TEST(ServerLimits, ConnectionsOverTheCapGet503) {
    ModelDir d("conns");
    ServerProcess s(d.serve({"--max-connections", "2"}), {});
    const int a = connect_to(s.port()), b = connect_to(s.port());  // open, idle
    ASSERT_GE(a, 0);
    ASSERT_GE(b, 0);
    const int c = connect_to(s.port());
    ASSERT_GE(c, 0);
    const std::string get = "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
    ASSERT_EQ(::send(c, get.data(), get.size(), MSG_NOSIGNAL), ssize_t(get.size()));
    const std::string response = read_response(c);
    ::close(c);
    ASSERT_EQ(response.rfind("HTTP/1.1 503", 0), 0u) << response.substr(0, 200);
    EXPECT_EQ(json_body(response)["error"]["message"],
              "The server has 2 connections open, its limit (--max-connections); retry later");
    ::close(a);
    ::close(b);
    int status = 0;
    for (int i = 0; i < 300 && status != 200; ++i) {  // the server notices the closes
        auto r = httplib::Client("127.0.0.1", s.port()).Get("/health");
        status = r ? r->status : 0;
        if (status != 200) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    EXPECT_EQ(status, 200);
}

// An exception on the engine thread ended the process. Now the failed step's request gets a
// 500 in OpenAI's shape and the next request is served normally.
TEST(ServerLimits, AFailingEngineStepFailsItsRequestAndServingGoesOn) {
    ModelDir d("fault");
    ServerProcess s(d.serve({"--fault-at-step", "2"}), {});
    httplib::Client c("127.0.0.1", s.port());
    c.set_read_timeout(std::chrono::seconds(60));
    const std::string body = R"({"prompt":"Once upon a time","max_tokens":4,"temperature":0})";
    auto r = c.Post("/v1/completions", body, "application/json");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 500);
    const json e = json::parse(r->body);
    EXPECT_EQ(e["error"]["type"], "server_error");
    EXPECT_EQ(e["error"]["message"], "injected fault at engine step 2");
    r = c.Post("/v1/completions", body, "application/json");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200) << r->body;
    EXPECT_EQ(json::parse(r->body)["usage"]["completion_tokens"], 4);
    const std::string m = c.Get("/metrics")->body;
    EXPECT_NE(m.find("\nduet_engine_step_failures_total 1\n"), std::string::npos) << m;
    EXPECT_NE(m.find("\nduet_kv_blocks_used 0\n"), std::string::npos);  // the failed request's blocks came back
}

// Without --host the server listens on the loopback address only.
TEST(ServerLimits, BindsLoopbackByDefault) {
    auto [rc, out] = run_command(duet_binary() + " serve --help");
    EXPECT_EQ(rc, 0);
    EXPECT_NE(out.find("127.0.0.1"), std::string::npos) << out;
    ModelDir d("bind");
    ServerProcess s(d.serve({}), {});  // throws unless the banner names http://127.0.0.1:PORT
    EXPECT_GT(s.port(), 0);
}

}  // namespace
}  // namespace duet::test
