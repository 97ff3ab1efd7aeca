#include "tilec/support/warnings.h"

#include <cstdio>
#include <mutex>
#include <set>

namespace tilec {

namespace {
thread_local DiagnosticCollector* t_collector = nullptr;
}  // namespace

std::string Diagnostic::str() const {
  std::string out = (loc.known() ? loc.str() + ": " : std::string("tilec: ")) +
                    (kind == Kind::kNote ? "note: " : "warning: ") + message;
  if (!hint.empty()) out += "\n  hint: " + hint;
  return out;
}

DiagnosticCollector::DiagnosticCollector() : outer_(t_collector) { t_collector = this; }
DiagnosticCollector::~DiagnosticCollector() { t_collector = outer_; }

void report(Diagnostic d) {
  if (t_collector) {
    t_collector->items_.push_back(std::move(d));
    return;
  }
  static std::mutex mu;
  static std::set<std::string> seen;
  std::string text = d.str();
  std::lock_guard<std::mutex> lock(mu);
  if (seen.insert(text).second) std::fprintf(stderr, "%s\n", text.c_str());
}

void warn(const SourceLoc& loc, const std::string& message, const std::string& hint) {
  report({Diagnostic::Kind::kWarning, message, loc, hint});
}

void note(const SourceLoc& loc, const std::string& message) { report({Diagnostic::Kind::kNote, message, loc, ""}); }

}  // namespace tilec
