// LaunchPlan <-> text (format in include/tilec/runtime/plan_text.h) and the plan
// consistency check.
//
// Contract: launch_plan_from_text(launch_plan_to_text(p)) is equal to p field by field,
// with grid expressions structurally equal over fresh symbol Vars of the same names and
// types. Every plan that leaves launch_plan_from_text has passed check_launch_plan.
// Errors in text name the line; errors in a plan name the kernel and the item.
#include "tilec/runtime/plan_text.h"

#include <cctype>
#include <charconv>
#include <set>
#include <sstream>

#include "tilec/support/diag.h"

namespace tilec::runtime {
namespace {

using ir::NodeKind;

bool is_identifier(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.')) return false;
  }
  return true;
}

struct OpName {
  NodeKind kind;
  const char* name;
};
constexpr OpName kBinaryOps[] = {
    {NodeKind::kAdd, "+"},       {NodeKind::kSub, "-"},          {NodeKind::kMul, "*"},
    {NodeKind::kDiv, "truncdiv"}, {NodeKind::kMod, "truncmod"},  {NodeKind::kFloorDiv, "//"},
    {NodeKind::kFloorMod, "%"},  {NodeKind::kMin, "min"},        {NodeKind::kMax, "max"},
    {NodeKind::kEQ, "=="},       {NodeKind::kNE, "!="},          {NodeKind::kLT, "<"},
    {NodeKind::kLE, "<="},       {NodeKind::kGT, ">"},           {NodeKind::kGE, ">="},
    {NodeKind::kAnd, "and"},     {NodeKind::kOr, "or"},
};

void expr_to_text(const ir::Expr& e, std::ostream& os) {
  TILEC_ICHECK(e.defined()) << "null launch expression";
  if (const auto* imm = e.as<ir::IntImmNode>()) {
    os << imm->value;
    if (imm->dtype != ir::Int32()) os << ':' << imm->dtype.str();
    return;
  }
  if (const auto* v = e.as<ir::VarNode>()) {
    TILEC_ICHECK(is_identifier(v->name)) << "symbol name '" << v->name << "' cannot be written";
    os << v->name;
    return;
  }
  if (const auto* c = e.as<ir::CastNode>()) {
    os << "(cast:" << c->dtype.str() << ' ';
    expr_to_text(c->value, os);
    os << ')';
    return;
  }
  if (const auto* n = e.as<ir::NotNode>()) {
    os << "(not ";
    expr_to_text(n->a, os);
    os << ')';
    return;
  }
  if (const auto* s = e.as<ir::SelectNode>()) {
    os << "(select ";
    expr_to_text(s->cond, os);
    os << ' ';
    expr_to_text(s->true_value, os);
    os << ' ';
    expr_to_text(s->false_value, os);
    os << ')';
    return;
  }
  if (const auto* b = e.as<ir::BinaryNode>()) {
    for (const auto& op : kBinaryOps) {
      if (op.kind == b->kind) {
        os << '(' << op.name << ' ';
        expr_to_text(b->a, os);
        os << ' ';
        expr_to_text(b->b, os);
        os << ')';
        return;
      }
    }
  }
  TILEC_UNREACHABLE() << "a launch expression cannot contain a " << ir::node_kind_name(e->kind);
}

[[noreturn]] void text_error(int line, const std::string& msg) {
  throw_user_error("launch plan text, line " + std::to_string(line) + ": " + msg, {});
}

// Recursive-descent reader of one S-expression.
class ExprReader {
 public:
  ExprReader(const std::string& text, const std::vector<ir::Var>& vars, int line)
      : text_(text), vars_(vars), line_(line) {}

  ir::Expr read_all() {
    ir::Expr e = read();
    skip_space();
    if (pos_ != text_.size()) fail("unexpected '" + text_.substr(pos_) + "' after the expression");
    return e;
  }

 private:
  [[noreturn]] void fail(const std::string& msg) { text_error(line_, msg + " in '" + text_ + "'"); }
  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  std::string atom() {
    skip_space();
    size_t start = pos_;
    while (pos_ < text_.size() && !std::isspace(static_cast<unsigned char>(text_[pos_])) &&
           text_[pos_] != '(' && text_[pos_] != ')') {
      ++pos_;
    }
    if (start == pos_) fail("expected a value");
    return text_.substr(start, pos_ - start);
  }
  ir::Expr read() {
    skip_space();
    if (pos_ >= text_.size()) fail("unexpected end of expression");
    if (text_[pos_] == ')') fail("unexpected ')'");
    if (text_[pos_] != '(') return leaf(atom());
    ++pos_;
    std::string op = atom();
    std::vector<ir::Expr> args;
    for (;;) {
      skip_space();
      if (pos_ >= text_.size()) fail("missing ')'");
      if (text_[pos_] == ')') {
        ++pos_;
        break;
      }
      args.push_back(read());
    }
    auto want = [&](size_t n) {
      if (args.size() != n) fail("'" + op + "' takes " + std::to_string(n) + " operands, got " + std::to_string(args.size()));
    };
    if (op.rfind("cast:", 0) == 0) {
      want(1);
      auto t = ir::DataType::parse(op.substr(5));
      if (!t) fail("unknown type '" + op.substr(5) + "'");
      return ir::cast(*t, args[0]);
    }
    if (op == "not") {
      want(1);
      return ir::logical_not(args[0]);
    }
    if (op == "select") {
      want(3);
      return ir::select(args[0], args[1], args[2]);
    }
    for (const auto& b : kBinaryOps) {
      if (op == b.name) {
        want(2);
        return ir::binary(b.kind, args[0], args[1]);
      }
    }
    fail("unknown operator '" + op + "'");
  }
  ir::Expr leaf(const std::string& tok) {
    if (std::isdigit(static_cast<unsigned char>(tok[0])) || tok[0] == '-') {
      std::string digits = tok;
      ir::DataType t = ir::Int32();
      if (auto colon = tok.find(':'); colon != std::string::npos) {
        digits = tok.substr(0, colon);
        auto parsed = ir::DataType::parse(tok.substr(colon + 1));
        if (!parsed) fail("unknown type in '" + tok + "'");
        t = *parsed;
      }
      int64_t v = 0;
      auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
      if (ec != std::errc() || end != digits.data() + digits.size()) fail("bad integer '" + tok + "'");
      return ir::int_imm(v, t);
    }
    for (const auto& v : vars_) {
      if (v->name == tok) return v;
    }
    fail("unknown symbol '" + tok + "' (declare it with a 'symbol' line)");
  }

  const std::string& text_;
  const std::vector<ir::Var>& vars_;
  int line_;
  size_t pos_ = 0;
};

}  // namespace

std::string dim_spec_text(const DimSpec& d) {
  if (d.symbol.empty()) return std::to_string(d.value);
  return d.scale == 1 ? d.symbol : std::to_string(d.scale) + "*" + d.symbol;
}

namespace {

void dims_to_text(const std::vector<DimSpec>& dims, std::ostream& os) {
  os << '[';
  for (size_t i = 0; i < dims.size(); ++i) os << (i ? "," : "") << dim_spec_text(dims[i]);
  os << ']';
}

std::vector<DimSpec> dims_from_text(const std::string& s, int line) {
  if (s.size() < 2 || s.front() != '[' || s.back() != ']') text_error(line, "expected [d0,d1,...], got '" + s + "'");
  std::vector<DimSpec> dims;
  std::string body = s.substr(1, s.size() - 2);
  if (body.empty()) return dims;
  std::stringstream ss(body);
  std::string item;
  while (std::getline(ss, item, ',')) {
    DimSpec d;
    if (size_t star = item.find('*'); star != std::string::npos) {  // scale*symbol
      const std::string scale = item.substr(0, star), symbol = item.substr(star + 1);
      auto [end, ec] = std::from_chars(scale.data(), scale.data() + scale.size(), d.scale);
      if (ec != std::errc() || end != scale.data() + scale.size() || d.scale < 1 || !is_identifier(symbol)) {
        text_error(line, "bad dimension '" + item + "' (a scaled symbol is written 32*name)");
      }
      d.symbol = symbol;
    } else if (!item.empty() && std::isdigit(static_cast<unsigned char>(item[0]))) {
      auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), d.value);
      if (ec != std::errc() || end != item.data() + item.size()) text_error(line, "bad dimension '" + item + "'");
    } else if (is_identifier(item)) {
      d.symbol = item;
    } else {
      text_error(line, "bad dimension '" + item + "'");
    }
    dims.push_back(d);
  }
  return dims;
}

int64_t to_int(const std::string& s, int line) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) text_error(line, "expected an integer, got '" + s + "'");
  return v;
}

int index_bits_from_text(const std::string& s, int line) {
  if (s != "int32" && s != "int64") text_error(line, "index is int32 or int64, got '" + s + "'");
  return s == "int32" ? 32 : 64;
}

ir::DataType to_dtype(const std::string& s, int line) {
  auto t = ir::DataType::parse(s);
  if (!t) text_error(line, "unknown type '" + s + "'");
  return *t;
}

void collect_vars(const ir::Expr& e, std::vector<const ir::VarNode*>& out) {
  if (!e.defined()) return;
  if (const auto* v = e.as<ir::VarNode>()) {
    out.push_back(v);
  } else if (const auto* b = e.as<ir::BinaryNode>()) {
    collect_vars(b->a, out);
    collect_vars(b->b, out);
  } else if (const auto* c = e.as<ir::CastNode>()) {
    collect_vars(c->value, out);
  } else if (const auto* n = e.as<ir::NotNode>()) {
    collect_vars(n->a, out);
  } else if (const auto* s = e.as<ir::SelectNode>()) {
    collect_vars(s->cond, out);
    collect_vars(s->true_value, out);
    collect_vars(s->false_value, out);
  }
}

}  // namespace

std::string launch_expr_to_text(const ir::Expr& e) {
  std::ostringstream os;
  expr_to_text(e, os);
  return os.str();
}

ir::Expr launch_expr_from_text(const std::string& text, const std::vector<ir::Var>& vars) {
  return ExprReader(text, vars, 0).read_all();
}

void check_launch_plan(const LaunchPlan& p) {
  auto fail = [&](const std::string& msg) {
    throw_user_error("invalid launch plan for kernel '" + p.kernel_name + "': " + msg, {},
                     "this plan comes from the compiler or from hand-written plan text");
  };
  if (!is_identifier(p.kernel_name)) fail("the kernel name must be an identifier");
  if (p.symbols.size() != p.symbol_vars.size()) fail("symbols and symbol_vars differ in length");
  std::set<std::string> symbols;
  for (size_t i = 0; i < p.symbols.size(); ++i) {
    if (!is_identifier(p.symbols[i])) fail("symbol name '" + p.symbols[i] + "' is not an identifier");
    if (!p.symbol_vars[i].defined() || p.symbol_vars[i]->name != p.symbols[i]) {
      fail("symbol_vars[" + std::to_string(i) + "] does not match symbol '" + p.symbols[i] + "'");
    }
    if (!p.symbol_vars[i]->dtype.is_integer()) fail("symbol '" + p.symbols[i] + "' must have an integer type");
    if (!symbols.insert(p.symbols[i]).second) fail("symbol '" + p.symbols[i] + "' is declared twice");
  }
  auto check_dims = [&](const std::string& who, const std::vector<DimSpec>& dims) {
    for (const auto& d : dims) {
      if (d.symbol.empty() && d.value < 0) fail(who + " has a negative dimension");
      if (!d.symbol.empty() && !symbols.count(d.symbol)) fail(who + " uses undeclared symbol '" + d.symbol + "'");
    }
  };
  for (const auto& t : p.tensors) {
    if (!is_identifier(t.name)) fail("tensor name '" + t.name + "' is not an identifier");
    check_dims("tensor '" + t.name + "' shape", t.shape);
    check_dims("tensor '" + t.name + "' strides", t.strides);
    if (!t.strides.empty() && t.strides.size() != t.shape.size()) {
      fail("tensor '" + t.name + "' has " + std::to_string(t.shape.size()) + " dims but " +
           std::to_string(t.strides.size()) + " strides");
    }
    if (t.alignment_bytes < 1 || (t.alignment_bytes & (t.alignment_bytes - 1)) != 0) {
      fail("tensor '" + t.name + "' alignment " + std::to_string(t.alignment_bytes) + " is not a power of two");
    }
    if (t.index_bits != 32 && t.index_bits != 64) {
      fail("tensor '" + t.name + "' index width must be int32 or int64, got " + std::to_string(t.index_bits) + " bits");
    }
    if (t.dtype.lanes() != 1 || t.dtype.is_void() || t.dtype.is_handle()) {
      fail("tensor '" + t.name + "' has element type " + t.dtype.str());
    }
  }
  for (const auto& s : p.scalars) {
    if (!is_identifier(s.name)) fail("scalar name '" + s.name + "' is not an identifier");
    const bool scalar_type = s.dtype.is_integer() || s.dtype.is_bool() || s.dtype.is_float() || s.dtype.is_handle();
    if (s.dtype.lanes() != 1 || !scalar_type) {
      fail("scalar '" + s.name + "' has unsupported type " + s.dtype.str());
    }
  }
  std::vector<int> tensor_seen(p.tensors.size()), scalar_seen(p.scalars.size());
  for (auto [is_tensor, index] : p.param_order) {
    auto& seen = is_tensor ? tensor_seen : scalar_seen;
    if (index < 0 || index >= static_cast<int>(seen.size())) fail("parameter order refers to a missing parameter");
    if (seen[index]++) fail("parameter order lists a parameter twice");
  }
  if (p.param_order.size() != p.tensors.size() + p.scalars.size()) fail("parameter order does not list every parameter");
  for (const auto& a : p.kernel_args) {
    switch (a.kind) {
      case KernelArg::kTensorData:
        if (a.index < 0 || a.index >= static_cast<int>(p.tensors.size())) fail("kernel argument refers to a missing tensor");
        break;
      case KernelArg::kScalar:
        if (a.index < 0 || a.index >= static_cast<int>(p.scalars.size())) fail("kernel argument refers to a missing scalar");
        break;
      case KernelArg::kSymbol:
        if (!symbols.count(a.symbol)) fail("kernel argument uses undeclared symbol '" + a.symbol + "'");
        if (a.dtype != ir::Int32() && a.dtype != ir::Int64()) fail("symbol argument '" + a.symbol + "' must be int32 or int64");
        break;
      case KernelArg::kTmaDesc:
        if (a.index < 0 || a.index >= static_cast<int>(p.tma_descs.size())) fail("kernel argument refers to a missing tensor map");
        break;
      default:
        fail("unknown kernel argument kind");
    }
  }
  for (const auto& d : p.tma_descs) {
    if (d.tensor < 0 || d.tensor >= static_cast<int>(p.tensors.size())) fail("tensor map refers to a missing tensor");
    const auto& t = p.tensors[d.tensor];
    if (d.box.size() != t.shape.size() || d.box.empty() || d.box.size() > 5)
      fail("tensor map of '" + t.name + "' has a box of rank " + std::to_string(d.box.size()) + " for a rank-" +
           std::to_string(t.shape.size()) + " tensor (1 to 5)");
    for (int64_t b : d.box)
      if (b < 1 || b > 256) fail("tensor map of '" + t.name + "' has a box extent " + std::to_string(b) + " (1 to 256)");
    if (d.swizzle < 0 || d.swizzle > 3) fail("tensor map of '" + t.name + "' has swizzle " + std::to_string(d.swizzle));
  }
  if (p.grid.empty() || p.grid.size() > 3) fail("the grid must have 1 to 3 dimensions, got " + std::to_string(p.grid.size()));
  for (const auto& g : p.grid) {
    if (!g.defined()) fail("a grid extent is missing");
    std::vector<const ir::VarNode*> used;
    collect_vars(g, used);
    for (const auto* v : used) {
      if (!symbols.count(v->name)) fail("grid extent uses '" + v->name + "', which is not a symbol");
    }
  }
  int64_t threads = 1;
  for (int i = 0; i < 3; ++i) {
    if (p.block[i] < 1 || p.cluster[i] < 1) fail("block and cluster extents must be >= 1");
    threads *= p.block[i];
  }
  if (threads > 1024) fail("a block of " + std::to_string(threads) + " threads exceeds CUDA's limit of 1024");
  if (p.dynamic_shared_bytes < 0) fail("negative dynamic shared memory size");
  if (p.cooperative && p.persistent_blocks_per_sm > 0) fail("a cooperative kernel cannot be persistent");
  if (p.cooperative && p.cluster[0] * p.cluster[1] * p.cluster[2] > 1)
    fail("a cooperative kernel cannot have thread-block clusters");
}

std::string launch_plan_to_text(const LaunchPlan& p) {
  check_launch_plan(p);
  std::ostringstream os;
  os << "tilec-launch-plan 1\n";
  os << "kernel " << p.kernel_name << '\n';
  for (const auto& v : p.symbol_vars) os << "symbol " << v->name << ' ' << v->dtype.str() << '\n';
  for (const auto& t : p.tensors) {
    os << "tensor " << t.name << ' ' << t.dtype.str() << " shape=";
    dims_to_text(t.shape, os);
    os << " strides=";
    dims_to_text(t.strides, os);
    os << " align=" << t.alignment_bytes << " output=" << (t.is_output ? 1 : 0) << " index=int" << t.index_bits
       << '\n';
  }
  for (const auto& s : p.scalars) os << "scalar " << s.name << ' ' << s.dtype.str() << '\n';
  for (auto [is_tensor, index] : p.param_order) os << "param " << (is_tensor ? "tensor " : "scalar ") << index << '\n';
  for (const auto& a : p.kernel_args) {
    switch (a.kind) {
      case KernelArg::kTensorData: os << "arg tensor " << a.index << '\n'; break;
      case KernelArg::kScalar: os << "arg scalar " << a.index << '\n'; break;
      case KernelArg::kSymbol: os << "arg symbol " << a.symbol << ' ' << a.dtype.str() << '\n'; break;
      case KernelArg::kTmaDesc: os << "arg tma " << a.index << '\n'; break;
    }
  }
  for (const auto& d : p.tma_descs) {
    os << "tma tensor=" << d.tensor << " box=";
    for (size_t i = 0; i < d.box.size(); ++i) os << (i ? "," : "") << d.box[i];
    os << " swizzle=" << d.swizzle << '\n';
  }
  for (const auto& g : p.grid) {
    os << "grid ";
    expr_to_text(g, os);
    os << '\n';
  }
  os << "block " << p.block[0] << ' ' << p.block[1] << ' ' << p.block[2] << '\n';
  os << "cluster " << p.cluster[0] << ' ' << p.cluster[1] << ' ' << p.cluster[2] << '\n';
  os << "smem " << p.dynamic_shared_bytes << '\n';
  if (p.persistent_blocks_per_sm > 0) os << "persistent " << p.persistent_blocks_per_sm << '\n';
  if (p.cooperative) os << "cooperative 1\n";
  return os.str();
}

LaunchPlan launch_plan_from_text(const std::string& text) {
  LaunchPlan p;
  std::istringstream in(text);
  std::string raw;
  int line = 0;
  bool saw_header = false, saw_param = false, saw_arg = false;
  std::set<size_t> index_given;  // tensors whose line has an index= field
  while (std::getline(in, raw)) {
    ++line;
    if (auto hash = raw.find('#'); hash != std::string::npos) raw.resize(hash);
    std::istringstream ls(raw);
    std::vector<std::string> tok;
    for (std::string t; ls >> t;) tok.push_back(t);
    if (tok.empty()) continue;
    const std::string& head = tok[0];
    auto want = [&](size_t n) {
      if (tok.size() != n) text_error(line, "'" + head + "' takes " + std::to_string(n - 1) + " fields, got " + std::to_string(tok.size() - 1));
    };
    if (!saw_header) {
      if (head != "tilec-launch-plan") text_error(line, "expected 'tilec-launch-plan 1' first");
      want(2);
      if (tok[1] != "1") text_error(line, "unsupported launch plan version " + tok[1]);
      saw_header = true;
    } else if (head == "kernel") {
      want(2);
      p.kernel_name = tok[1];
    } else if (head == "symbol") {
      want(3);
      p.symbols.push_back(tok[1]);
      p.symbol_vars.push_back(ir::make_var(tok[1], to_dtype(tok[2], line)));
    } else if (head == "tensor") {
      if (tok.size() < 3) text_error(line, "'tensor' needs a name and a type");
      TensorParam t;
      t.name = tok[1];
      t.dtype = to_dtype(tok[2], line);
      for (size_t i = 3; i < tok.size(); ++i) {
        auto eq = tok[i].find('=');
        if (eq == std::string::npos) text_error(line, "expected key=value, got '" + tok[i] + "'");
        std::string key = tok[i].substr(0, eq), value = tok[i].substr(eq + 1);
        if (key == "shape") t.shape = dims_from_text(value, line);
        else if (key == "strides") t.strides = dims_from_text(value, line);
        else if (key == "align") t.alignment_bytes = static_cast<int>(to_int(value, line));
        else if (key == "output") t.is_output = to_int(value, line) != 0;
        else if (key == "index") t.index_bits = index_bits_from_text(value, line), index_given.insert(p.tensors.size());
        else text_error(line, "unknown tensor field '" + key + "'");
      }
      p.tensors.push_back(std::move(t));
    } else if (head == "scalar") {
      want(3);
      p.scalars.push_back({tok[1], to_dtype(tok[2], line)});
    } else if (head == "param") {
      want(3);
      if (tok[1] != "tensor" && tok[1] != "scalar") text_error(line, "'param' is 'tensor' or 'scalar'");
      p.param_order.emplace_back(tok[1] == "tensor", static_cast<int>(to_int(tok[2], line)));
      saw_param = true;
    } else if (head == "arg") {
      KernelArg a{};
      if (tok.size() >= 2 && tok[1] == "tensor") {
        want(3);
        a.kind = KernelArg::kTensorData;
        a.index = static_cast<int>(to_int(tok[2], line));
      } else if (tok.size() >= 2 && tok[1] == "scalar") {
        want(3);
        a.kind = KernelArg::kScalar;
        a.index = static_cast<int>(to_int(tok[2], line));
      } else if (tok.size() >= 2 && tok[1] == "symbol") {
        want(4);
        a.kind = KernelArg::kSymbol;
        a.symbol = tok[2];
        a.dtype = to_dtype(tok[3], line);
      } else if (tok.size() >= 2 && tok[1] == "tma") {
        want(3);
        a.kind = KernelArg::kTmaDesc;
        a.index = static_cast<int>(to_int(tok[2], line));
      } else {
        text_error(line, "'arg' is 'tensor <i>', 'scalar <i>', 'symbol <name> <type>' or 'tma <i>'");
      }
      p.kernel_args.push_back(std::move(a));
      saw_arg = true;
    } else if (head == "tma") {
      TmaDescSpec d;
      for (size_t i = 1; i < tok.size(); ++i) {
        auto eq = tok[i].find('=');
        if (eq == std::string::npos) text_error(line, "expected key=value, got '" + tok[i] + "'");
        std::string key = tok[i].substr(0, eq), value = tok[i].substr(eq + 1);
        if (key == "tensor") {
          d.tensor = static_cast<int>(to_int(value, line));
        } else if (key == "box") {
          std::istringstream bs(value);
          for (std::string part; std::getline(bs, part, ',');) d.box.push_back(to_int(part, line));
        } else if (key == "swizzle") {
          d.swizzle = static_cast<int>(to_int(value, line));
        } else {
          text_error(line, "unknown tma field '" + key + "'");
        }
      }
      p.tma_descs.push_back(std::move(d));
    } else if (head == "grid") {
      std::string expr_text = raw.substr(raw.find("grid") + 4);
      p.grid.push_back(ExprReader(expr_text, p.symbol_vars, line).read_all());
    } else if (head == "block" || head == "cluster") {
      want(4);
      int64_t* dst = head == "block" ? p.block : p.cluster;
      for (int i = 0; i < 3; ++i) dst[i] = to_int(tok[i + 1], line);
    } else if (head == "smem") {
      want(2);
      p.dynamic_shared_bytes = to_int(tok[1], line);
    } else if (head == "persistent") {
      want(2);
      p.persistent_blocks_per_sm = to_int(tok[1], line);
    } else if (head == "cooperative") {
      want(2);
      p.cooperative = to_int(tok[1], line) != 0;
    } else {
      text_error(line, "unknown item '" + head + "'");
    }
  }
  if (!saw_header) text_error(line, "empty launch plan text");
  // Without index=, a tensor is indexed as wide as its widest symbol (the compiler's rule
  // for symbolic dimensions): int64 when one is int64, else int32.
  for (size_t i = 0; i < p.tensors.size(); ++i) {
    if (index_given.count(i)) continue;
    for (const auto* dims : {&p.tensors[i].shape, &p.tensors[i].strides}) {
      for (const auto& d : *dims) {
        for (const auto& v : p.symbol_vars) {
          if (v->name == d.symbol && v->dtype.bits() >= 64) p.tensors[i].index_bits = 64;
        }
      }
    }
  }
  if (!saw_param) {
    for (size_t i = 0; i < p.tensors.size(); ++i) p.param_order.emplace_back(true, static_cast<int>(i));
    for (size_t i = 0; i < p.scalars.size(); ++i) p.param_order.emplace_back(false, static_cast<int>(i));
  }
  if (!saw_arg) {
    for (auto [is_tensor, index] : p.param_order) {
      KernelArg a{};
      a.kind = is_tensor ? KernelArg::kTensorData : KernelArg::kScalar;
      a.index = index;
      p.kernel_args.push_back(a);
    }
  }
  check_launch_plan(p);
  return p;
}

}  // namespace tilec::runtime
