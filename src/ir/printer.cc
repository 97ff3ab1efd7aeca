// STUB: replaced by the T-script printer.
#include "tilec/ir/printer.h"
namespace tilec::ir {
std::string script(const PrimFunc& f, const PrintOptions&) { return "# printer pending: " + f->name + "\n"; }
std::string script(const Stmt&, const PrintOptions&) { return "# printer pending\n"; }
std::string script(const Expr&) { return "<expr>"; }
std::string script(const Layout&) { return "<layout>"; }
}  // namespace tilec::ir
