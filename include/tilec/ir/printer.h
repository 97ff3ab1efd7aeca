// Prints IR as T-script: the same Python syntax users write, so dumps, pass tests and
// programs share one form and the Python front end parses the output back into a
// structurally equal function. Output is deterministic (it feeds the cache key):
// names are made unique in order of first definition.
#pragma once

#include <string>

#include "tilec/ir/stmt.h"

namespace tilec::ir {

struct PrintOptions {
  bool show_loc = false;   // append "  # file:line:col" to statements with a location
};

std::string script(const PrimFunc& f, const PrintOptions& opts = {});
std::string script(const Stmt& s, const PrintOptions& opts = {});
std::string script(const Expr& e);
std::string script(const Layout& l);

}  // namespace tilec::ir
