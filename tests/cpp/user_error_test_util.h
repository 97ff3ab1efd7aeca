// Helpers shared by tests that check UserErrors of hand-built kernels (cpu_target_test,
// grid_sync_test): a source location on line N of "kernel.py", and the full text of the
// UserError a call raises (message, location and hint).
#pragma once

#include <functional>
#include <string>

#include "tilec/support/diag.h"

namespace tilec::testing {

inline SourceLoc at(int line) { return SourceLoc{"kernel.py", line, 5}; }

// "message @loc hint: hint" of the UserError fn raises, or "(no error)".
inline std::string user_error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const UserError& e) {
    return e.message() + " @" + e.loc().str() + " hint: " + e.hint();
  }
  return "(no error)";
}

}  // namespace tilec::testing
