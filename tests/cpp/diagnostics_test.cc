// Warnings and notes (include/tilec/support/warnings.h): collected inside a collector's
// scope, printed once outside one.
#include <gtest/gtest.h>

#include "tilec/support/warnings.h"

using namespace tilec;

TEST(Diagnostics, CollectorGathersWarningsAndNotesInOrder) {
  DiagnosticCollector outer;
  warn(SourceLoc{"k.py", 12, 9}, "loop not pipelined", "use shared memory");
  {
    DiagnosticCollector inner;  // the innermost collects
    note(SourceLoc{}, "built twice");
    ASSERT_EQ(inner.diagnostics().size(), 1u);
    EXPECT_EQ(inner.diagnostics()[0].str(), "tilec: note: built twice");
  }
  ASSERT_EQ(outer.diagnostics().size(), 1u);
  const Diagnostic& d = outer.diagnostics()[0];
  EXPECT_EQ(d.kind, Diagnostic::Kind::kWarning);
  EXPECT_EQ(d.str(), "k.py:12:9: warning: loop not pipelined\n  hint: use shared memory");
}

TEST(Diagnostics, WithoutACollectorEachIsPrintedOnce) {
  testing::internal::CaptureStderr();
  for (int i = 0; i < 3; ++i) warn(SourceLoc{"k.py", 3, 1}, "same warning");
  note(SourceLoc{"k.py", 4, 1}, "a note");
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(err, "k.py:3:1: warning: same warning\nk.py:4:1: note: a note\n");
}
