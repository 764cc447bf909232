// The feed's "limit" query parameter, as both GET /api/feed (a worker's)
// and GET /api/docs (the supervisor's) read it.
#include "daemon/feed_json.h"

#include <gtest/gtest.h>

#include <string>

namespace crawld::daemon {
namespace {

TEST(FeedLimit, AbsentIsOneHundred) {
  Result<size_t> limit = FeedLimit(nullptr);
  ASSERT_TRUE(limit.ok());
  EXPECT_EQ(*limit, 100u);
}

TEST(FeedLimit, OneToOneThousandIsTaken) {
  for (const char* v : {"1", "7", "1000"}) {
    const std::string s = v;
    Result<size_t> limit = FeedLimit(&s);
    ASSERT_TRUE(limit.ok()) << v;
    EXPECT_EQ(*limit, std::stoul(s));
  }
}

TEST(FeedLimit, AnythingElseIsAnError) {
  for (const char* v : {"", "0", "1001", "100000000000000000000", "-1", "12x",
                        " 5", "5 ", "0x10"}) {
    const std::string s = v;
    Result<size_t> limit = FeedLimit(&s);
    ASSERT_FALSE(limit.ok()) << '"' << v << '"';
    EXPECT_EQ(limit.status().code(), Status::Code::kInvalidArgument);
    EXPECT_EQ(limit.status().message(), "limit must be 1 .. 1000");
  }
}

}  // namespace
}  // namespace crawld::daemon
