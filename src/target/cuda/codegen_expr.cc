// CUDA C printing of expressions, types and intrinsic calls.
//
// Expressions print with the fewest parentheses C precedence allows. Vector values (dtype
// lanes > 1) print with the same operators: tl::vec<T, N> (tilec/common.cuh) defines them
// lane-wise; memory accesses with a Ramp index print as tl::load<N>(&A[base]) and
// tl::store(&A[base], v), single 4/8/16-byte instructions.
//
// Python-style floor division and modulo print as C / and % when the dividend is provably
// non-negative and the divisor a positive constant, as >> and & for power-of-two divisors
// (exact for negative dividends too), and as tl::floordiv / tl::floormod otherwise.
#include <cmath>
#include <cstdio>
#include <unordered_map>

#include "passes/cuda_back_util.h"
#include "target/cuda/codegen_internal.h"
#include "tilec/passes/cuda_back_passes.h"

namespace tilec::cuda::detail {

using namespace ir;

namespace {

IntrinStyle parse_style(const char* s) {
  std::string v = s;
  if (v == "call") return IntrinStyle::kCall;
  if (v == "address_of") return IntrinStyle::kAddressOf;
  if (v == "infix") return IntrinStyle::kInfix;
  if (v == "template_dtype") return IntrinStyle::kTemplateDType;
  if (v == "template_arg0") return IntrinStyle::kTemplateArg0;
  if (v == "extern_name") return IntrinStyle::kExternName;
  if (v == "printf") return IntrinStyle::kPrintf;
  TILEC_UNREACHABLE() << "unknown TILEC_INTRIN_CUDA style '" << v << "' in intrinsics.def";
}

const std::unordered_map<std::string, IntrinInfo>& intrinsic_table() {
  static const std::unordered_map<std::string, IntrinInfo> table = [] {
    std::unordered_map<std::string, IntrinInfo> t;
#define TILEC_INTRIN(name_, arity_, pure_, cuda_) \
  t[name_] = IntrinInfo{name_, arity_, pure_, cuda_, IntrinStyle::kCall, ""};
#include "tilec/ir/intrinsics.def"
#define TILEC_INTRIN_CUDA(name_, style_, header_)                                        \
  {                                                                                      \
    auto it = t.find(name_);                                                             \
    TILEC_ICHECK(it != t.end()) << "TILEC_INTRIN_CUDA row for undeclared intrinsic " << name_; \
    it->second.style = parse_style(#style_);                                             \
    it->second.header = header_;                                                         \
  }
#include "tilec/ir/intrinsics.def"
    return t;
  }();
  return table;
}

// The inside of a C string literal holding `text` ('%' doubled too when it is a printf format).
std::string c_string_body(const std::string& text, bool format = false) {
  std::string s;
  for (char c : text) {
    if (c == '"' || c == '\\') s += '\\';
    if (c == '\n') {
      s += "\\n";
      continue;
    }
    if (format && c == '%') s += '%';
    s += c;
  }
  return s;
}

int infix_prec(const std::string& op) {
  if (op == "&") return kPrecBitAnd;
  if (op == "|") return kPrecBitOr;
  if (op == "^") return kPrecBitXor;
  if (op == "<<" || op == ">>") return kPrecShift;
  if (op == "+" || op == "-") return kPrecAdd;
  if (op == "*" || op == "/" || op == "%") return kPrecMul;
  if (op == "&&") return kPrecLogAnd;
  if (op == "||") return kPrecLogOr;
  if (op == "==" || op == "!=") return kPrecEq;
  return kPrecRel;  // < <= > >=
}

bool is_narrow_float(DataType t) {
  return t.code() == TypeCode::kBFloat || t.code() == TypeCode::kFloat8E4M3 || t.is_float4() ||
         t.code() == TypeCode::kFloat8E5M2 || (t.code() == TypeCode::kFloat && t.bits() == 16);
}

std::string format_float(double v, bool single) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), single ? "%.9g" : "%.17g", v);
  std::string s = buf;
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return single ? s + "f" : s;
}

}  // namespace

const IntrinInfo* find_intrinsic(const std::string& name) {
  const auto& t = intrinsic_table();
  auto it = t.find(name);
  return it == t.end() ? nullptr : &it->second;
}

std::string c_type(DataType t, const SourceLoc& loc) {
  if (t.is_vector()) return "tl::vec<" + c_type(t.element_of(), loc) + ", " + std::to_string(t.lanes()) + ">";
  switch (t.code()) {
    case TypeCode::kInt:
      switch (t.bits()) {
        case 8: return "signed char";
        case 16: return "short";
        case 32: return "int";
        case 64: return "long long";
      }
      break;
    case TypeCode::kUInt:
      switch (t.bits()) {
        case 8: return "unsigned char";
        case 16: return "unsigned short";
        case 32: return "unsigned int";
        case 64: return "unsigned long long";
      }
      break;
    case TypeCode::kFloat:
      switch (t.bits()) {
        case 16: return "half";
        case 32: return "float";
        case 64: return "double";
      }
      break;
    case TypeCode::kBFloat: return "nv_bfloat16";
    case TypeCode::kFloat8E4M3: return "__nv_fp8_e4m3";
    case TypeCode::kFloat8E5M2: return "__nv_fp8_e5m2";
    case TypeCode::kBool: return "bool";
    case TypeCode::kHandle: return "void*";
    case TypeCode::kVoid: return "void";
    case TypeCode::kFloat4E2M1: return "tl::float4_e2m1";  // a value; buffers hold tl::fp4x2
  }
  TILEC_UNREACHABLE() << "no C type for " << t.str();
}


std::string storage_c_type(DataType t, const SourceLoc& loc) {
  return t.is_float4() && t.is_scalar() ? "tl::fp4x2" : c_type(t, loc);
}

int64_t storage_units(DataType t, int64_t elems) { return t.is_float4() && t.is_scalar() ? (elems + 1) / 2 : elems; }

std::string CudaPrinter::operand(const Expr& e, int min_prec) {
  Printed p = print(e);
  return p.prec >= min_prec ? p.text : "(" + p.text + ")";
}

Printed CudaPrinter::print_imm(const Expr& e) {
  DataType t = e->dtype;
  if (auto* i = e.as<IntImmNode>()) {
    int64_t v = i->value;
    if (t.is_bool()) return {v ? "true" : "false"};
    std::string digits = std::to_string(v);
    Printed p{digits, v < 0 ? int(kPrecUnary) : int(kPrecPrimary)};
    if (t.is_int() && t.bits() == 32) {
      if (v == INT32_MIN) return {"(-2147483647 - 1)"};
      return p;
    }
    if (t.is_int() && t.bits() == 64) {
      if (v == INT64_MIN) return {"(-9223372036854775807ll - 1)"};
      return {digits + "ll", p.prec};
    }
    if (t.is_uint() && t.bits() == 32) return {std::to_string(static_cast<uint32_t>(v)) + "u"};
    if (t.is_uint() && t.bits() == 64) return {std::to_string(static_cast<uint64_t>(v)) + "ull"};
    return {"(" + c_type(t) + ")" + digits, kPrecUnary};
  }
  auto* f = e.as<FloatImmNode>();
  double v = f->value;
  std::string scalar = c_type(t, e->loc);
  std::string special;
  if (std::isnan(v)) special = "tl::nan<" + scalar + ">()";
  else if (std::isinf(v)) special = std::string(v > 0 ? "tl::pos_inf<" : "tl::neg_inf<") + scalar + ">()";
  if (!special.empty()) return {special};
  if (t.bits() == 64) return {format_float(v, false), v < 0 ? int(kPrecUnary) : int(kPrecPrimary)};
  std::string lit = format_float(v, true);
  if (t.bits() == 32 && t.code() == TypeCode::kFloat) return {lit, v < 0 ? int(kPrecUnary) : int(kPrecPrimary)};
  return {scalar + "(" + lit + ")"};
}

Printed CudaPrinter::print(const Expr& e) {
  TILEC_ICHECK(e.defined()) << "null expression in codegen";
  switch (e->kind) {
    case NodeKind::kIntImm:
    case NodeKind::kFloatImm:
      return print_imm(e);
    case NodeKind::kStringImm:
      return {"\"" + c_string_body(e.as<StringImmNode>()->value) + "\""};
    case NodeKind::kVar:
      return {name_of(e.as<VarNode>())};
    case NodeKind::kNot:
      return {"!" + operand(e.as<NotNode>()->a, kPrecUnary), kPrecUnary};
    case NodeKind::kSelect: {
      auto* s = e.as<SelectNode>();
      if (s->cond->dtype.is_vector()) {  // lane-wise; a scalar condition picks a whole vector
        std::string c = expr(s->cond);
      std::string t = expr(s->true_value);
      return {"tl::select(" + c + ", " + t + ", " + expr(s->false_value) + ")"};
      }
      std::string c = operand(s->cond, kPrecLogOr);
      std::string t = operand(s->true_value, kPrecCond + 1);
      return {c + " ? " + t + " : " + operand(s->false_value, kPrecCond), kPrecCond};
    }
    case NodeKind::kCast:
      return print_cast(e.as<CastNode>());
    case NodeKind::kRamp: {
      auto* r = e.as<RampNode>();
      std::string base = expr(r->base);
      return {"tl::ramp<" + std::to_string(r->lanes) + ">(" + base + ", " + expr(r->stride) + ")"};
    }
    case NodeKind::kBroadcast: {
      auto* b = e.as<BroadcastNode>();
      return {"tl::broadcast<" + std::to_string(b->lanes) + ">(" + expr(b->value) + ")"};
    }
    case NodeKind::kBufferLoad:
      return print_load(e.as<BufferLoadNode>());
    case NodeKind::kCall:
      return print_call(e.as<CallNode>());
    default:
      if (is_binary_kind(e->kind)) return print_binary(e.as<BinaryNode>());
      TILEC_UNREACHABLE() << "statement node in expression position";
  }
}

std::string CudaPrinter::overload_operand(const Expr& x) {
  const bool operation = is_binary_kind(x->kind) || x->kind == NodeKind::kCall || x->kind == NodeKind::kNot;
  if (x->dtype.is_integer() && x->dtype.lanes() == 1 && x->dtype.bits() < 32 && operation)
    return "(" + c_type(x->dtype, x->loc) + ")(" + expr(x) + ")";
  return expr(x);
}

Printed CudaPrinter::print_binary(const BinaryNode* op) {
  NodeKind k = op->kind;
  if (k == NodeKind::kMin || k == NodeKind::kMax) {
    need_header("tilec/math.cuh");
    std::string a = overload_operand(op->a);
    return {std::string(k == NodeKind::kMin ? "tl::min(" : "tl::max(") + a + ", " + overload_operand(op->b) + ")"};
  }
  if (k == NodeKind::kFloorDiv || k == NodeKind::kFloorMod) return print_floor_div_mod(op);
  std::string sym;
  switch (k) {
    case NodeKind::kAdd: sym = "+"; break;
    case NodeKind::kSub: sym = "-"; break;
    case NodeKind::kMul: sym = "*"; break;
    case NodeKind::kDiv: sym = "/"; break;
    case NodeKind::kMod: sym = "%"; break;
    case NodeKind::kEQ: sym = "=="; break;
    case NodeKind::kNE: sym = "!="; break;
    case NodeKind::kLT: sym = "<"; break;
    case NodeKind::kLE: sym = "<="; break;
    case NodeKind::kGT: sym = ">"; break;
    case NodeKind::kGE: sym = ">="; break;
    case NodeKind::kAnd: sym = "&&"; break;
    case NodeKind::kOr: sym = "||"; break;
    default: TILEC_UNREACHABLE() << "binary kind " << node_kind_name(k);
  }
  int p = infix_prec(sym);
  // Left-associative: the right operand needs strictly higher precedence — except integer
  // a + (b + c) and a * (b * c), which are associative, so the parentheses only add noise.
  bool assoc = (k == NodeKind::kAdd || k == NodeKind::kMul) && op->dtype.is_integer() && op->b->kind == k;
  std::string a = operand(op->a, p);
  return {a + " " + sym + " " + operand(op->b, assoc ? p : p + 1), p};
}

Printed CudaPrinter::print_floor_div_mod(const BinaryNode* op) {
  bool is_div = op->kind == NodeKind::kFloorDiv;
  DataType t = op->dtype;
  const int64_t* divisor = as_const_int(op->b);
  if (t.is_scalar() && (t.is_uint() || (divisor && *divisor > 0 && passes::back::provably_nonneg(&analyzer_, op->a, nonneg_vars_)))) {
    std::string sym = is_div ? "/" : "%";
    std::string a = operand(op->a, kPrecMul);
    return {a + " " + sym + " " + operand(op->b, kPrecMul + 1), kPrecMul};
  }
  if (t.is_scalar() && divisor && *divisor > 0 && (*divisor & (*divisor - 1)) == 0) {
    int shift = 0;
    while ((int64_t{1} << shift) < *divisor) ++shift;
    // Operands of bit operators are parenthesised unless primary/unary: C's precedence of
    // >> and & below + and == surprises readers.
    if (is_div) return {operand(op->a, kPrecUnary) + " >> " + std::to_string(shift), kPrecShift};
    Expr mask = int_imm(*divisor - 1, t);
    return {operand(op->a, kPrecUnary) + " & " + operand(mask, kPrecUnary), kPrecBitAnd};
  }
  std::string a = expr(op->a);
  return {std::string(is_div ? "tl::floordiv(" : "tl::floormod(") + a + ", " + expr(op->b) + ")"};
}

Printed CudaPrinter::print_cast(const CastNode* op) {
  DataType to = op->dtype, from = op->value->dtype;
  if (to.is_vector() || is_narrow_float(to.element_of()) || is_narrow_float(from.element_of())) {
    return {"tl::cast<" + c_type(to.element_of(), op->loc) + ">(" + expr(op->value) + ")"};
  }
  return {"(" + c_type(to, op->loc) + ")" + operand(op->value, kPrecUnary), kPrecUnary};
}

CudaPrinter::ElementRef CudaPrinter::element_ref(const Buffer& buffer, const std::vector<Expr>& indices) {
  ElementRef ref{name_of(buffer.get())};
  if (debug && indices.size() != 1) {  // debug dumps of IR that is not flattened yet
    for (const auto& i : indices) {
      auto* r = i.as<RampNode>();
      if (r) ref.lanes = r->lanes;
      ref.text += "[" + expr(r ? r->base : i) + "]";
    }
    return ref;
  }
  TILEC_ICHECK(indices.size() == 1)
      << "buffer '" << buffer->name << "' reached codegen with " << indices.size()
      << " indices; flatten_buffers must make every access 1-D";
  const Expr& idx = indices[0];
  if (!idx->dtype.is_vector()) {
    ref.text += "[" + expr(idx) + "]";
    return ref;
  }
  auto* r = idx.as<RampNode>();
  TILEC_ICHECK(r && is_one(r->stride)) << "vector access of '" << buffer->name
                                       << "' with a non-contiguous index reached codegen";
  vector_accessed.insert(buffer.get());
  ref.text += "[" + expr(r->base) + "]";
  ref.lanes = r->lanes;
  return ref;
}

Printed CudaPrinter::print_load(const BufferLoadNode* op) {
  if (op->buffer->dtype.is_float4()) return print_fp4_load(op);
  ElementRef ref = element_ref(op->buffer, op->indices);
  if (ref.lanes > 1) return {"tl::load<" + std::to_string(ref.lanes) + ">(&" + ref.text + ")"};
  return {ref.text};
}

// The byte of element `index` (even) of a float4_e2m1 buffer.
std::string CudaPrinter::fp4_byte_index(const Expr& index) {
  if (const int64_t* c = as_const_int(index)) return std::to_string(*c / 2);
  return expr(floordiv(index, 2));
}

// float4_e2m1 buffers are arrays of tl::fp4x2 (two elements a byte): element i is
// tl::fp4_get(A, i); a vector of N lanes from element b (even: vectorize proves the start
// aligned to N) is tl::fp4_load<N>(&A[b / 2]).
Printed CudaPrinter::print_fp4_load(const BufferLoadNode* op) {
  need_header("tilec/fp4.cuh");
  TILEC_ICHECK(op->indices.size() == 1) << "float4 buffer '" << op->buffer->name << "' reached codegen unflattened";
  const std::string name = name_of(op->buffer.get());
  const Expr& idx = op->indices[0];
  if (!idx->dtype.is_vector()) return {"tl::fp4_get(" + name + ", " + expr(idx) + ")"};
  auto* r = idx.as<RampNode>();
  TILEC_ICHECK(r && is_one(r->stride) && r->lanes % 2 == 0)
      << "vector access of float4 buffer '" << op->buffer->name << "' that is not an even run of elements";
  vector_accessed.insert(op->buffer.get());
  return {"tl::fp4_load<" + std::to_string(r->lanes) + ">(&" + name + "[" + fp4_byte_index(r->base) + "])"};
}

// Stores write whole bytes: a vector of an even number of lanes from an even element. A
// single-element store would share its byte with another thread's element (or need a
// read-modify-write), so it is a CompileError that names the buffer.
void CudaPrinter::print_fp4_store(const BufferStoreNode* op) {
  need_header("tilec/fp4.cuh");
  TILEC_ICHECK(op->indices.size() == 1) << "float4 buffer '" << op->buffer->name << "' reached codegen unflattened";
  auto* r = op->indices[0].as<RampNode>();
  TILEC_USER_CHECK(r && is_one(r->stride) && r->lanes % 2 == 0, op->loc,
                   "make the innermost loop that writes it T.vectorized (or a T.Parallel / T.copy whose innermost "
                   "extent per thread is even), so that each thread writes pairs of consecutive elements")
      << "float4_e2m1 buffer '" << op->buffer->name
      << "' is written one element at a time here; two float4 elements share a byte, so the CUDA back end only "
         "writes them in pairs (consecutive elements along the innermost dimension, by one thread)";
  vector_accessed.insert(op->buffer.get());
  const std::string name = name_of(op->buffer.get());
  std::string at = "&" + name + "[" + fp4_byte_index(r->base) + "]";
  line("tl::fp4_store(" + at + ", " + expr(op->value) + ");");
}

Printed CudaPrinter::print_call(const CallNode* op) {
  const IntrinInfo* info = find_intrinsic(op->op);
  if (!info && debug) {
    // Dumps of IR using intrinsics this build has no row for: print the name as a call.
    std::string name = op->op;
    for (size_t p = name.find('.'); p != std::string::npos; p = name.find('.')) name.replace(p, 1, "::");
    std::string s = name + "(";
    for (size_t i = 0; i < op->args.size(); ++i) {
      if (i) s += ", ";
      s += expr(op->args[i]);
    }
    return {s + ")"};
  }
  if (!info) {
    throw_user_error("unknown intrinsic '" + op->op + "'", op->loc,
                     "intrinsics are the rows of include/tilec/ir/intrinsics.def");
  }
  TILEC_USER_CHECK(info->arity < 0 || static_cast<int>(op->args.size()) == info->arity, op->loc, "")
      << "intrinsic '" << op->op << "' takes " << info->arity << " argument(s), got " << op->args.size();
  need_header(info->header);
  if (op->op == passes::kTmaDescriptorOp) return {tma_param_name(*op)};
  if (op->op.rfind("tl.setmaxnreg", 0) == 0) uses_setmaxnreg = true;
  // An mbarrier (an element of a barrier buffer) is passed by address.
  auto arg_text = [&](const Expr& a) {
    if (auto* l = a.as<BufferLoadNode>(); l && l->buffer->scope == Scope::kBarrier)
      return "&" + name_of(l->buffer.get()) + "[" + expr(l->indices[0]) + "]";
    return overload_operand(a);
  };
  auto join = [&](size_t from) {
    std::string s;
    for (size_t i = from; i < op->args.size(); ++i) {
      if (i > from) s += ", ";
      s += arg_text(op->args[i]);
    }
    return s;
  };
  switch (info->style) {
    case IntrinStyle::kCall:
      return {info->cuda + "(" + join(0) + ")"};
    case IntrinStyle::kAddressOf: {
      auto* load = op->args[0].as<BufferLoadNode>();
      TILEC_USER_CHECK(load != nullptr, op->loc, "write tl.address_of(A[i])")
          << "tl.address_of takes a buffer element, got " << node_kind_name(op->args[0]->kind);
      TILEC_ICHECK(load->indices.size() == 1) << "tl.address_of of a multi-dimensional access reached codegen";
      TILEC_USER_CHECK(!load->buffer->dtype.is_float4(), op->loc, "")
          << "cannot take the address of an element of float4_e2m1 buffer '" << load->buffer->name
          << "' (two elements share a byte)";
      Expr idx = load->indices[0];
      if (auto* r = idx.as<RampNode>()) idx = r->base;
      std::string buf = name_of(load->buffer.get());
      return {"&" + buf + "[" + expr(idx) + "]", kPrecUnary};
    }
    case IntrinStyle::kInfix: {
      if (op->args.size() == 1) return {info->cuda + operand(op->args[0], kPrecUnary), kPrecUnary};
      int p = infix_prec(info->cuda);
      int need = (p <= kPrecShift && p >= kPrecBitOr) ? int(kPrecUnary) : p;  // see print_floor_div_mod
      std::string a = operand(op->args[0], need);
      return {a + " " + info->cuda + " " + operand(op->args[1], std::max(need, p + 1)), p};
    }
    case IntrinStyle::kTemplateDType:
      return {info->cuda + "<" + c_type(op->dtype, op->loc) + ">(" + join(0) + ")"};
    case IntrinStyle::kTemplateArg0: {
      if (auto* str = op->args.empty() ? nullptr : op->args[0].as<StringImmNode>())
        return {info->cuda + "<" + str->value + ">(" + join(1) + ")"};
      TILEC_USER_CHECK(!op->args.empty() && as_const_int(op->args[0]), op->loc, "")
          << "the first argument of '" << op->op << "' must be an integer constant or a template argument string";
      return {info->cuda + "<" + std::to_string(*as_const_int(op->args[0])) + ">(" + join(1) + ")"};
    }
    case IntrinStyle::kPrintf:
      return print_printf(op, *info);
    case IntrinStyle::kExternName: {
      auto* name = op->args.empty() ? nullptr : op->args[0].as<StringImmNode>();
      TILEC_USER_CHECK(name && !name->value.empty(), op->loc, "T.call_extern(\"function_name\", args..., dtype=...)")
          << "the first argument of T.call_extern must be the function's name";
      return {name->value + "(" + join(1) + ")"};
    }
  }
  TILEC_UNREACHABLE() << "intrinsic style";
}

// T.print as one printf: "block (x, y, z) thread (x, y, z): v1 v2 ...\n" with a literal format,
// so that the lines of different threads do not interleave piece by piece. Strings go into the
// format; scalars by their type (bool as True / False, 16-bit and narrower floats through float).
// Vectors keep tl::print (each piece its own printf).
Printed CudaPrinter::print_printf(const CallNode* op, const IntrinInfo& info) {
  std::string fmt = "block (%d, %d, %d) thread (%d, %d, %d):";
  std::string args = ", (int)blockIdx.x, (int)blockIdx.y, (int)blockIdx.z, (int)threadIdx.x, (int)threadIdx.y, "
                     "(int)threadIdx.z";
  for (const Expr& a : op->args)
    if (!a.as<StringImmNode>() && a->dtype.is_vector()) {
      std::string all;
      for (size_t i = 0; i < op->args.size(); ++i) all += (i ? ", " : "") + expr(op->args[i]);
      return {info.cuda + "(" + all + ")"};
    }
  for (const Expr& a : op->args) {
    if (auto* str = a.as<StringImmNode>()) {
      fmt += " " + c_string_body(str->value, true);
      continue;
    }
    const DataType t = a->dtype;
    const std::string v = expr(a);
    if (t.is_bool()) {
      fmt += " %s";
      args += ", (" + v + ") ? \"True\" : \"False\"";
    } else if (t.is_float()) {
      fmt += " %g";
      args += ", (double)static_cast<float>(" + v + ")";
    } else if (t.is_int() || t.is_uint()) {
      const bool wide = t.bits() > 32;
      fmt += t.is_int() ? (wide ? " %lld" : " %d") : (wide ? " %llu" : " %u");
      args += std::string(", (") + (t.is_int() ? (wide ? "long long" : "int") : (wide ? "unsigned long long" : "unsigned")) +
              ")(" + v + ")";
    } else {
      fmt += " %p";
      args += ", (const void*)(" + v + ")";
    }
  }
  return {"printf(\"" + fmt + "\\n\"" + args + ")"};
}

}  // namespace tilec::cuda::detail
