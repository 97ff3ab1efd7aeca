// Warnings and notes: the program compiles, but not the way its author may expect (a
// T.Pipelined loop that is not pipelined), or tilec did something worth one line (a kernel
// built a second time, and why). Not a third error channel: nothing here stops a compile.
//
//   warn(loc, message, hint)   — about the user's program; loc is the kernel's file:line.
//   note(loc, message)         — about what tilec did (a rebuild); loc may be unknown.
//
// Inside a DiagnosticCollector's scope (per thread) they are collected; the Python
// bindings turn them into Python warnings (tilec.TilecWarning, at the kernel's file and
// line). Outside one (the CLI, C++ users) each is printed to stderr once per process as
// "file:line:col: warning: message" / "tilec: note: message".
#pragma once

#include <string>
#include <vector>

#include "tilec/support/diag.h"

namespace tilec {

struct Diagnostic {
  enum class Kind { kWarning, kNote };
  Kind kind = Kind::kWarning;
  std::string message;
  SourceLoc loc;
  std::string hint;

  std::string str() const;  // "file:line:col: warning: message\n  hint: ..." (one line when no hint)
};

void warn(const SourceLoc& loc, const std::string& message, const std::string& hint = "");
void note(const SourceLoc& loc, const std::string& message);

// Collects the diagnostics reported on this thread while it lives (nests: the innermost
// collects).
class DiagnosticCollector {
 public:
  DiagnosticCollector();
  ~DiagnosticCollector();
  DiagnosticCollector(const DiagnosticCollector&) = delete;
  DiagnosticCollector& operator=(const DiagnosticCollector&) = delete;
  const std::vector<Diagnostic>& diagnostics() const { return items_; }

 private:
  friend void report(Diagnostic d);
  std::vector<Diagnostic> items_;
  DiagnosticCollector* outer_;
};

void report(Diagnostic d);

}  // namespace tilec
