#include "base/doc_buffer.h"

#include <gtest/gtest.h>

#include <string>

namespace crawld {
namespace {

std::string ReadAll(const DocBuffer& b) {
  std::string out;
  EXPECT_TRUE(b.ForEachChunk([&](std::string_view c) {
                 out.append(c);
                 return Status::Ok();
               }).ok());
  return out;
}

TEST(DocBuffer, SmallDocumentsStayInMemory) {
  DocBuffer b;
  ASSERT_TRUE(b.Append("hello ").ok());
  ASSERT_TRUE(b.Append("world").ok());
  EXPECT_FALSE(b.spilled());
  EXPECT_EQ(b.size(), 11u);
  EXPECT_EQ(ReadAll(b), "hello world");
}

TEST(DocBuffer, LargeDocumentsSpillAndReadBackExactly) {
  DocBuffer::Options o;
  o.memory_limit = 1000;
  DocBuffer b(o);
  std::string expect;
  for (int i = 0; i < 5000; ++i) {
    std::string piece = std::to_string(i) + ",";
    expect += piece;
    ASSERT_TRUE(b.Append(piece).ok());
  }
  EXPECT_TRUE(b.spilled());
  EXPECT_EQ(b.size(), expect.size());
  EXPECT_EQ(ReadAll(b), expect);
  auto prefix = b.ReadPrefix(10);
  ASSERT_TRUE(prefix.ok());
  EXPECT_EQ(*prefix, expect.substr(0, 10));
  std::string mid;
  ASSERT_TRUE(b.ForEachChunk(
                   [&](std::string_view c) {
                     mid.append(c);
                     return Status::Ok();
                   },
                   100, 50)
                  .ok());
  EXPECT_EQ(mid, expect.substr(100, 50));
}

TEST(DocBuffer, UnwritableSpillDirIsAnErrorNotACrash) {
  DocBuffer::Options o;
  o.memory_limit = 4;
  o.spill_dir = "/nonexistent-crawld-dir";
  DocBuffer b(o);
  ASSERT_TRUE(b.Append("abc").ok());
  Status s = b.Append("defgh");
  EXPECT_EQ(s.code(), Status::Code::kIOError);
  EXPECT_EQ(ReadAll(b), "abc");  // what it had is kept
}

TEST(DocBuffer, MoveTransfersContent) {
  DocBuffer::Options o;
  o.memory_limit = 2;
  DocBuffer a(o);
  ASSERT_TRUE(a.Append("spilled content").ok());
  DocBuffer b = std::move(a);
  EXPECT_EQ(ReadAll(b), "spilled content");
  EXPECT_EQ(a.size(), 0u);  // NOLINT(bugprone-use-after-move)
}

// Issue 16: readers of a document in memory see it in place, without a copy.
TEST(DocBuffer, Issue16_MemoryViewUntilSpilled) {
  DocBuffer::Options o;
  o.memory_limit = 8;
  DocBuffer b(o);
  ASSERT_TRUE(b.MemoryView().has_value());
  EXPECT_EQ(*b.MemoryView(), "");
  ASSERT_TRUE(b.Append("abcd").ok());
  ASSERT_TRUE(b.MemoryView().has_value());
  EXPECT_EQ(*b.MemoryView(), "abcd");
  ASSERT_TRUE(b.Append("efghijk").ok());  // past the limit: spilled
  ASSERT_TRUE(b.spilled());
  EXPECT_FALSE(b.MemoryView().has_value());
  EXPECT_EQ(ReadAll(b), "abcdefghijk");
}

}  // namespace
}  // namespace crawld
