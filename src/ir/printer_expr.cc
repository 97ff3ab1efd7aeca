// T-script printer, part 1: names, expressions, attribute values and layouts.
//
// Contract: prints any expression of the IR as Python source that the front end parses back
// into a structurally equal expression (docs/TSCRIPT.md, "Expressions"). Parentheses follow
// Python precedence exactly: a tree prints with the fewest parentheses that keep its shape
// (left-associative operators parenthesise an equal-precedence right operand; comparisons
// parenthesise any comparison operand, since Python would chain them).
// Names: every Var and Buffer gets a unique Python identifier at its definition (in print
// order); a free variable or buffer is named at its first use.
#include <charconv>
#include <cmath>
#include <optional>
#include <set>

#include "printer_internal.h"
#include "tilec/ir/structural.h"

namespace tilec::ir::printer_detail {

namespace {

const std::set<std::string>& reserved_names() {
  static const std::set<std::string> kReserved = {
      "T",      "False",  "None",   "True",    "and",      "as",     "assert", "async",
      "await",  "break",  "class",  "continue", "def",     "del",    "elif",   "else",
      "except", "finally", "for",   "from",    "global",   "if",     "import", "in",
      "is",     "lambda", "nonlocal", "not",   "or",       "pass",   "raise",  "return",
      "try",    "while",  "with",   "yield",   "match",    "case",   "type"};
  return kReserved;
}

std::string sanitize(const std::string& hint) {
  std::string s;
  for (char c : hint) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    s += ok ? c : '_';
  }
  if (s.empty()) s = "v";
  if (s[0] >= '0' && s[0] <= '9') s = "v" + s;
  if (reserved_names().count(s)) s += "_";
  return s;
}

struct IntrinsicInfo {
  int arity;
};
const IntrinsicInfo* find_intrinsic(const std::string& name) {
  static const std::unordered_map<std::string, IntrinsicInfo> kTable = {
#define TILEC_INTRIN(name, arity, pure, cuda) {name, {arity}},
#include "tilec/ir/intrinsics.def"
  };
  auto it = kTable.find(name);
  return it == kTable.end() ? nullptr : &it->second;
}

// Barrier operations: void calls the front end writes as T.<name>(barrier[, parity]).
bool is_barrier_op(const std::string& name) {
  return name == "barrier_wait" || name == "barrier_arrive" || name == "mbarrier_wait_parity" ||
         name == "mbarrier_arrive";
}

// The argument of T.float32(...): an integer when the value is integral, else the shortest
// decimal that reads back as the same double; inf / nan as strings.
std::string float_imm_literal(double v) {
  if (std::isnan(v)) return "\"nan\"";
  if (std::isinf(v)) return v > 0 ? "\"inf\"" : "\"-inf\"";
  if (v == 0 && std::signbit(v)) return "-0.0";
  if (v == std::trunc(v) && std::fabs(v) < 1e15) return std::to_string(static_cast<long long>(v));
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, res.ptr);
}

// A Python float literal (attribute values): always reads back as a float.
std::string python_float(double v) {
  if (std::isnan(v)) return "float(\"nan\")";
  if (std::isinf(v)) return v > 0 ? "float(\"inf\")" : "float(\"-inf\")";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), v);
  std::string s(buf, res.ptr);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

// T.ceildiv(a, b) is sugar for floordiv(a + b - 1, b); recognise that exact tree.
bool match_ceildiv(const BinaryNode* op, Expr* a, Expr* b) {
  if (op->kind != NodeKind::kFloorDiv) return false;
  auto* sub = op->a.as<BinaryNode>();
  if (!sub || sub->kind != NodeKind::kSub || !is_one(sub->b)) return false;
  auto* add = sub->a.as<BinaryNode>();
  if (!add || add->kind != NodeKind::kAdd || !structural_equal(add->b, op->b)) return false;
  *a = add->a;
  *b = op->b;
  return true;
}

}  // namespace

std::string identifier(const std::string& hint) { return sanitize(hint); }

std::string quote(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '"': out += "\\\""; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (c < 0x20 || c == 0x7f) {
          static const char* kHex = "0123456789abcdef";
          out += "\\x";
          out += kHex[c >> 4];
          out += kHex[c & 15];
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

// ---------------------------------------------------------------- names

std::string ScriptPrinter::define(const void* key, const std::string& hint) {
  std::string base = sanitize(hint);
  std::string name = base;
  for (int k = 1; used_.count(name); ++k) name = base + "_" + std::to_string(k);
  used_.insert(name);
  names_[key] = name;
  return name;
}

std::string ScriptPrinter::var_name(const VarNode* v) {
  auto it = names_.find(v);
  return it != names_.end() ? it->second : define(v, v->name);
}

std::string ScriptPrinter::buffer_name(const BufferNode* b) {
  auto it = names_.find(b);
  return it != names_.end() ? it->second : define(b, b->name);
}

// ---------------------------------------------------------------- expressions

Printed ScriptPrinter::expr(const Expr& e) {
  if (!e) return {"None", kPrecAtom};
  switch (e->kind) {
#define TILEC_EXPR(Kind, NodeClass) \
  case NodeKind::k##Kind:           \
    return print_##Kind(static_cast<const NodeClass*>(e.get()));
#define TILEC_BINARY(Kind, Symbol, Category) \
  case NodeKind::k##Kind:                    \
    return print_binary(static_cast<const BinaryNode*>(e.get()));
#include "tilec/ir/nodes.def"
    default:
      TILEC_UNREACHABLE() << "statement kind " << node_kind_name(e->kind) << " in expression position";
  }
}

std::string ScriptPrinter::operand(const Expr& e, int min_prec) {
  Printed p = expr(e);
  return p.prec < min_prec ? "(" + p.text + ")" : p.text;
}

std::string ScriptPrinter::exprs(const std::vector<Expr>& xs) {
  std::string s;
  for (size_t i = 0; i < xs.size(); ++i) s += (i ? ", " : "") + expr(xs[i]).text;
  return s;
}

std::string ScriptPrinter::shape_tuple(const std::vector<Expr>& xs) {
  if (xs.size() == 1) return "(" + expr(xs[0]).text + ",)";
  return "(" + exprs(xs) + ")";
}

Printed ScriptPrinter::print_IntImm(const IntImmNode* op) {
  if (op->dtype.is_bool()) return {op->value ? "True" : "False", kPrecAtom};
  std::string v = std::to_string(op->value);
  if (op->dtype == DataType::Int(32)) return {v, op->value < 0 ? kPrecUnary : kPrecAtom};
  return {"T." + op->dtype.str() + "(" + v + ")", kPrecAtom};
}

Printed ScriptPrinter::print_FloatImm(const FloatImmNode* op) {
  return {"T." + op->dtype.str() + "(" + float_imm_literal(op->value) + ")", kPrecAtom};
}

Printed ScriptPrinter::print_StringImm(const StringImmNode* op) { return {quote(op->value), kPrecAtom}; }

Printed ScriptPrinter::print_Var(const VarNode* op) { return {var_name(op), kPrecAtom}; }

Printed ScriptPrinter::print_binary(const BinaryNode* op) {
  auto call2 = [&](const char* fn) {
    return Printed{std::string("T.") + fn + "(" + expr(op->a).text + ", " + expr(op->b).text + ")", kPrecAtom};
  };
  auto infix = [&](const char* sym, int prec, bool chains) {
    // Left-associative: an equal-precedence left operand needs no parentheses, a right one
    // does. Comparisons chain in Python, so any comparison operand is parenthesised.
    std::string l = operand(op->a, chains ? prec + 1 : prec);
    std::string r = operand(op->b, prec + 1);
    return Printed{l + " " + sym + " " + r, prec};
  };
  switch (op->kind) {
    case NodeKind::kAdd: return infix("+", kPrecAdd, false);
    case NodeKind::kSub: return infix("-", kPrecAdd, false);
    case NodeKind::kMul: return infix("*", kPrecMul, false);
    case NodeKind::kDiv:
      return op->a->dtype.is_float() ? infix("/", kPrecMul, false) : call2("truncdiv");
    case NodeKind::kMod: return call2("truncmod");
    case NodeKind::kFloorDiv: {
      Expr a, b;
      if (match_ceildiv(op, &a, &b)) return {"T.ceildiv(" + expr(a).text + ", " + expr(b).text + ")", kPrecAtom};
      return infix("//", kPrecMul, false);
    }
    case NodeKind::kFloorMod: return infix("%", kPrecMul, false);
    case NodeKind::kMin: return call2("min");
    case NodeKind::kMax: return call2("max");
    case NodeKind::kAnd: return infix("and", kPrecAnd, false);
    case NodeKind::kOr: return infix("or", kPrecOr, false);
    default:
      TILEC_ICHECK(is_compare_kind(op->kind)) << "unhandled binary kind " << node_kind_name(op->kind);
      return infix(binary_symbol(op->kind), kPrecCompare, true);
  }
}

Printed ScriptPrinter::print_Not(const NotNode* op) { return {"not " + operand(op->a, kPrecNot), kPrecNot}; }

Printed ScriptPrinter::print_Select(const SelectNode* op) {
  return {"T.if_then_else(" + expr(op->cond).text + ", " + expr(op->true_value).text + ", " +
              expr(op->false_value).text + ")",
          kPrecAtom};
}

Printed ScriptPrinter::print_Cast(const CastNode* op) {
  return {"T.cast(" + expr(op->value).text + ", " + quote(op->dtype.str()) + ")", kPrecAtom};
}

Printed ScriptPrinter::print_Ramp(const RampNode* op) {
  return {"T.Ramp(" + expr(op->base).text + ", " + expr(op->stride).text + ", " + std::to_string(op->lanes) + ")",
          kPrecAtom};
}

Printed ScriptPrinter::print_Broadcast(const BroadcastNode* op) {
  return {"T.Broadcast(" + expr(op->value).text + ", " + std::to_string(op->lanes) + ")", kPrecAtom};
}

Printed ScriptPrinter::print_BufferLoad(const BufferLoadNode* op) {
  std::string name = buffer_name(op->buffer.get());
  return {name + "[" + (op->indices.empty() ? "()" : exprs(op->indices)) + "]", kPrecAtom};
}

Printed ScriptPrinter::print_Call(const CallNode* op) {
  const IntrinsicInfo* info = op->op.find('.') == std::string::npos ? find_intrinsic(op->op) : nullptr;
  if (info) {
    // The front end infers the type of T.<name>(...) from the call; print the short form
    // only when that inference gives back this call's type (docs/TSCRIPT.md).
    if (op->op == "infinity" && op->args.empty()) return {"T.infinity(" + quote(op->dtype.str()) + ")", kPrecAtom};
    if (op->op == "print" && op->dtype.is_void()) return {"T.print(" + exprs(op->args) + ")", kPrecAtom};
    if (is_barrier_op(op->op) && op->dtype.is_void() && static_cast<int>(op->args.size()) == info->arity)
      return {"T." + op->op + "(" + exprs(op->args) + ")", kPrecAtom};
    if (op->op != "infinity" && op->op != "print" && !op->args.empty() && op->args[0]->dtype == op->dtype)
      return {"T." + op->op + "(" + exprs(op->args) + ")", kPrecAtom};
  }
  std::string s = "T.call_intrin(" + quote(op->dtype.str()) + ", " + quote(op->op);
  for (const auto& a : op->args) s += ", " + expr(a).text;
  return {s + ")", kPrecAtom};
}

// ---------------------------------------------------------------- attribute values and layouts

std::string ScriptPrinter::attr_value(const AttrValue& v) {
  struct Visitor {
    ScriptPrinter* p;
    std::string operator()(std::monostate) const { return "None"; }
    std::string operator()(bool b) const { return b ? "True" : "False"; }
    std::string operator()(int64_t i) const { return std::to_string(i); }
    std::string operator()(double d) const { return python_float(d); }
    std::string operator()(const std::string& s) const { return quote(s); }
    std::string operator()(const Expr& e) const { return p->expr(e).text; }
    std::string operator()(const Buffer& b) const { return b ? p->buffer_name(b.get()) : "None"; }
    std::string operator()(const Layout& l) const { return p->layout(l); }
    std::string operator()(const std::vector<int64_t>& xs) const {
      std::string s = "[";
      for (size_t i = 0; i < xs.size(); ++i) s += (i ? ", " : "") + std::to_string(xs[i]);
      return s + "]";
    }
    std::string operator()(const LayoutMap& m) const {
      std::string s = "{";
      for (size_t i = 0; i < m.size(); ++i)
        s += (i ? ", " : "") + (*this)(m[i].first) + ": " + p->layout(m[i].second);
      return s + "}";
    }
  };
  return std::visit(Visitor{this}, v);
}

std::string ScriptPrinter::lambda(const std::vector<Var>& vars, const Var& extra, const std::vector<Expr>& body,
                                  bool as_list) {
  // Lambda parameters are local to the lambda: their names are released afterwards, and
  // whatever name the same objects had outside is restored.
  std::vector<Var> params = vars;
  if (extra) params.push_back(extra);
  std::vector<std::pair<const void*, std::optional<std::string>>> saved;
  std::vector<std::string> names;
  for (const auto& v : params) {
    auto it = names_.find(v.get());
    saved.emplace_back(v.get(), it == names_.end() ? std::nullopt : std::optional<std::string>(it->second));
    names.push_back(define(v.get(), v->name));
  }
  std::string s = "lambda ";
  for (size_t i = 0; i < names.size(); ++i) s += (i ? ", " : "") + names[i];
  s += ": ";
  s += as_list ? "[" + exprs(body) + "]" : expr(body.at(0)).text;
  for (const auto& n : names) used_.erase(n);
  for (auto it = saved.rbegin(); it != saved.rend(); ++it) {
    if (it->second) names_[it->first] = *it->second;
    else names_.erase(it->first);
  }
  return s;
}

std::string ScriptPrinter::layout(const Layout& l) {
  if (!l) return "None";
  std::string shape = shape_tuple(l->input_shape);
  if (!l->is_fragment()) return "T.Layout(" + shape + ", " + lambda(l->vars, nullptr, l->forward_index, true) + ")";
  bool replicated = l->replicate && !is_one(l->replicate);
  std::string s = "T.Fragment(" + shape;
  s += ", forward_thread=" + lambda(l->vars, replicated ? l->rep_var : Var(), {l->forward_thread}, false);
  s += ", forward_index=" + lambda(l->vars, nullptr, l->forward_index, true);
  if (replicated) s += ", replicate=" + expr(l->replicate).text;
  return s + ")";
}

std::string ScriptPrinter::print_layout(const Layout& l) { return layout(l); }

}  // namespace tilec::ir::printer_detail
