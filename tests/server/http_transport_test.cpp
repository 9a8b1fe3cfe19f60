#include "server/http_transport.h"

#include <gtest/gtest.h>

namespace duet::server {
namespace {

TEST(HttpTransport, KeysEqualOnlyForTheSameKey) {
    EXPECT_TRUE(keys_equal("secret-key", "secret-key"));
    EXPECT_FALSE(keys_equal("secret-kez", "secret-key"));
    EXPECT_FALSE(keys_equal("secret-key-and-more", "secret-key"));  // want's bytes repeat: still unequal
    EXPECT_FALSE(keys_equal("secret-keysecret-key", "secret-key"));
    EXPECT_FALSE(keys_equal("secret", "secret-key"));
    EXPECT_FALSE(keys_equal("", "secret-key"));
    EXPECT_FALSE(keys_equal("", ""));  // an empty configured key never matches
    EXPECT_FALSE(keys_equal("x", ""));
}

TEST(HttpTransport, TooLargeMessageStatesTheLimitAndItsFlag) {
    EXPECT_EQ(body_too_large_message(65536),
              "Request body is larger than the server's limit of 65536 bytes (--max-body-bytes)");
}

}  // namespace
}  // namespace duet::server
