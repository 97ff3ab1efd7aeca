// support::unified_diff: the hunks TILEC_DUMP_IR=diff prints.
#include <gtest/gtest.h>

#include "tilec/support/text_diff.h"

namespace tilec::support {
namespace {

TEST(TextDiff, EqualTextsGiveNothing) { EXPECT_EQ(unified_diff("a\nb\n", "a\nb\n", "x", "y"), ""); }

TEST(TextDiff, OneChangedLineWithContext) {
  std::string a = "1\n2\n3\n4\n5\n6\n7\n8\n9\n";
  std::string b = "1\n2\n3\n4\nFIVE\n6\n7\n8\n9\n";
  EXPECT_EQ(unified_diff(a, b, "before", "after"),
            "--- before\n+++ after\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+FIVE\n 6\n 7\n 8\n");
}

TEST(TextDiff, InsertionsDeletionsAndSeparateHunks) {
  std::string a = "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\nk\nl\nm\n";
  std::string b = "a\nNEW\nb\nc\nd\ne\nf\ng\nh\ni\nj\nk\nm\n";  // insert after a, delete l
  std::string d = unified_diff(a, b, "x", "y", 1);
  EXPECT_EQ(d, "--- x\n+++ y\n@@ -1,2 +1,3 @@\n a\n+NEW\n b\n@@ -11,3 +12,2 @@\n k\n-l\n m\n");
}

TEST(TextDiff, LargeRewritesAreOneBlock) {
  std::string a, b;
  for (int i = 0; i < 3000; ++i) a += "a" + std::to_string(i) + "\n", b += "b" + std::to_string(i) + "\n";
  std::string d = unified_diff(a, b, "x", "y", 0);
  EXPECT_NE(d.find("@@ -1,3000 +1,3000 @@\n-a0\n"), std::string::npos);
  EXPECT_NE(d.find("\n+b2999\n"), std::string::npos);
}

}  // namespace
}  // namespace tilec::support
