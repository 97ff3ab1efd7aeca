// Internal interface of the T-script printer, shared by printer.cc (functions and
// statements) and printer_expr.cc (expressions, attribute values, layouts).
// The format is specified in docs/TSCRIPT.md; this code follows that page.
#pragma once

#include <sstream>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "tilec/ir/printer.h"

namespace tilec::ir::printer_detail {

// Python operator precedence, loosest first (only the levels T-script uses).
enum Prec : int {
  kPrecOr = 1,
  kPrecAnd = 2,
  kPrecNot = 3,
  kPrecCompare = 4,
  kPrecAdd = 5,    // + -
  kPrecMul = 6,    // * / // %
  kPrecUnary = 7,  // -5
  kPrecAtom = 8,   // names, literals, calls, subscripts
};

struct Printed {
  std::string text;
  int prec = kPrecAtom;
};

class ScriptPrinter {
 public:
  explicit ScriptPrinter(PrintOptions opts = {}) : opts_(opts) {}

  std::string print_func(const PrimFunc& f);
  std::string print_stmt(const Stmt& s);
  std::string print_expr(const Expr& e) { return expr(e).text; }
  std::string print_layout(const Layout& l);

  // ---- names (printer_expr.cc) ----
  // A fresh unique identifier for the object defined here (a Var or a Buffer).
  std::string define(const void* key, const std::string& hint);
  std::string var_name(const VarNode* v);        // defines a free variable on first use
  std::string buffer_name(const BufferNode* b);  // likewise for buffers

  // ---- expressions (printer_expr.cc) ----
  Printed expr(const Expr& e);
  std::string exprs(const std::vector<Expr>& xs);  // "a, b, c"
  std::string shape_tuple(const std::vector<Expr>& xs);  // "(a, b)", "(a,)", "()"
  std::string attr_value(const AttrValue& v);
  std::string layout(const Layout& l);

 private:
  // expressions
#define TILEC_EXPR(Kind, NodeClass) Printed print_##Kind(const NodeClass* op);
#define TILEC_BINARY(Kind, Symbol, Category)
#include "tilec/ir/nodes.def"
  Printed print_binary(const BinaryNode* op);
  std::string operand(const Expr& e, int min_prec);  // parenthesised when looser than min_prec
  std::string lambda(const std::vector<Var>& vars, const Var& extra,
                     const std::vector<Expr>& body, bool as_list);

  // statements (printer.cc)
  void stmt(const Stmt& s, int indent);
  // A statement that opens its own indented block (loop, if and kernel bodies, `with`
  // blocks): nothing of the enclosing block follows it at its indentation.
  void nested(const Stmt& s, int indent);
#define TILEC_STMT(Kind, NodeClass) void print_##Kind(const NodeClass* op, int indent);
#include "tilec/ir/nodes.def"
  void line(int indent, const std::string& text, const SourceLoc& loc = {});
  std::string region(const BufferRegion& r, bool avoid_all_plain);
  std::string slice(const Range& r);
  std::string loop_header(const ForNode* op);

  PrintOptions opts_;
  std::ostringstream out_;
  std::unordered_map<const void*, std::string> names_;
  std::unordered_set<std::string> used_;
  // True while printing a statement that more statements of the same printed block follow
  // (set by print_Seq, cleared by nested()): an Annotate there needs the `with` form.
  bool followed_ = false;
};

// Python string literal with escapes: "text".
std::string quote(const std::string& s);
// A valid Python identifier close to `hint` (keywords and `T` get a trailing '_').
std::string identifier(const std::string& hint);

}  // namespace tilec::ir::printer_detail
