// check_request_head: completeness, the two size limits, bytes a header field may not hold,
// body framing, and the raw Authorization field.
#include "server/request_head.h"

#include <gtest/gtest.h>

namespace duet::server {
namespace {

using State = RequestHead::State;
using namespace std::string_literals;

TEST(RequestHead, IncompleteUntilTheBlankLine) {
    const HeadLimits l;
    EXPECT_EQ(check_request_head("GET /health HTTP/1.1\r\nHost: x\r\n", l).state, State::INCOMPLETE);
    const RequestHead h = check_request_head("GET /health HTTP/1.1\r\nHost: x\r\n\r\nNEXT", l);
    ASSERT_EQ(h.state, State::COMPLETE);
    EXPECT_EQ(h.head_bytes, std::string("GET /health HTTP/1.1\r\nHost: x\r\n\r\n").size());
    EXPECT_FALSE(h.content_length);
    EXPECT_FALSE(h.chunked);
}

TEST(RequestHead, MoreFieldsThanTheLimitIs431BeforeTheHeadEnds) {
    HeadLimits l;
    l.max_headers = 3;
    std::string head = "GET / HTTP/1.1\r\n";
    for (int i = 0; i < 3; ++i) head += "X-A: 1\r\n";
    EXPECT_EQ(check_request_head(head, l).state, State::INCOMPLETE);
    head += "X-A: 1\r\n";  // the 4th field, head not finished yet
    const RequestHead h = check_request_head(head, l);
    ASSERT_EQ(h.state, State::BAD);
    EXPECT_EQ(h.status, 431);
    EXPECT_EQ(h.message, "The request has more than 3 header fields, the server's limit (--max-headers)");
}

TEST(RequestHead, HeadLargerThanTheLimitIs431) {
    HeadLimits l;
    l.max_head_bytes = 1024;
    const std::string head = "GET / HTTP/1.1\r\nX-Big: " + std::string(2000, 'a');  // no line end at all
    const RequestHead h = check_request_head(head, l);
    ASSERT_EQ(h.state, State::BAD);
    EXPECT_EQ(h.status, 431);
    EXPECT_EQ(h.message,
              "The request line and headers are larger than the server's limit of 1024 bytes (--max-head-bytes)");
    // Exactly at the limit with the blank line inside it: complete.
    std::string ok = "GET / HTTP/1.1\r\nX: ";
    ok += std::string(1024 - ok.size() - 4, 'b') + "\r\n\r\n";
    ASSERT_EQ(ok.size(), 1024u);
    EXPECT_EQ(check_request_head(ok, l).state, State::COMPLETE);
}

TEST(RequestHead, NulBareCrFoldingAndNamelessLinesAre400) {
    const HeadLimits l;
    auto msg = [&](const std::string& s) {
        const RequestHead h = check_request_head(s, l);
        EXPECT_EQ(h.state, State::BAD) << s;
        EXPECT_EQ(h.status, 400) << s;
        return h.message;
    };
    EXPECT_EQ(msg("GET / HTTP/1.1\r\nAuthorization: Bearer k\0x\r\n\r\n"s),
              "the request head contains a NUL byte (not allowed in HTTP header fields)");
    EXPECT_EQ(msg("GET / HTTP/1.1\r\nX: a\rb\r\n\r\n"), "the request head contains a CR that does not end a line");
    EXPECT_EQ(msg("GET / HTTP/1.1\r\nX: a\r\n b\r\n\r\n"),
              "the request head folds a header field over two lines (obsolete line folding is not accepted)");
    EXPECT_EQ(msg("GET / HTTP/1.1\r\nnocolon\r\n\r\n"), "header line 1 has no field name followed by ':'");
    EXPECT_EQ(msg("GET / HTTP/1.1\r\nX Y: 1\r\n\r\n"), "header field name 'X Y' contains whitespace");
}

TEST(RequestHead, FramingIsOneContentLengthOrChunked) {
    const HeadLimits l;
    RequestHead h = check_request_head("POST / HTTP/1.1\r\ncontent-length: 12\r\n\r\n", l);
    ASSERT_EQ(h.state, State::COMPLETE);
    EXPECT_EQ(*h.content_length, 12u);
    h = check_request_head("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nExpect: 100-continue\r\n\r\n", l);
    ASSERT_EQ(h.state, State::COMPLETE);
    EXPECT_TRUE(h.chunked);
    EXPECT_TRUE(h.expect_continue);
    h = check_request_head("POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", l);
    EXPECT_EQ(h.message, "the request has two different Content-Length fields");
    h = check_request_head("POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n", l);
    EXPECT_EQ(h.message, "Content-Length '-1' is not a decimal number of bytes");
    h = check_request_head("POST / HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n", l);
    EXPECT_EQ(h.message, "the request has both Content-Length and Transfer-Encoding (allowed: one of them)");
    h = check_request_head("POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", l);
    EXPECT_EQ(h.message, "Transfer-Encoding 'gzip' is not supported (allowed: chunked)");
}

// httplib percent-decoded header values: a key containing "%41" arrived as "A".
TEST(RequestHead, AuthorizationIsTheRawFieldValue) {
    const RequestHead h = check_request_head("GET / HTTP/1.1\r\nAuthorization:  Bearer k%41y+%00 \r\n\r\n", {});
    ASSERT_EQ(h.state, State::COMPLETE);
    ASSERT_TRUE(h.authorization);
    EXPECT_EQ(*h.authorization, "Bearer k%41y+%00");
    EXPECT_EQ(h.n_authorization, 1u);
    const RequestHead two = check_request_head("GET / HTTP/1.1\r\nAuthorization: a\r\nauthorization: b\r\n\r\n", {});
    EXPECT_EQ(*two.authorization, "a");
    EXPECT_EQ(two.n_authorization, 2u);
}

}  // namespace
}  // namespace duet::server
