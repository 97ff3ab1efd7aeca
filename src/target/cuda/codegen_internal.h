// Internal interface of the CUDA C printer, shared by codegen.cc (statements, the kernel)
// and codegen_expr.cc (expressions, types, the intrinsic table).
#pragma once

#include <set>
#include <sstream>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "tilec/arith/analyzer.h"
#include "tilec/ir/stmt.h"
#include "tilec/target/cuda/codegen.h"

namespace tilec::cuda::detail {

// ---- the intrinsic table (include/tilec/ir/intrinsics.def) ----
enum class IntrinStyle { kCall, kAddressOf, kInfix, kTemplateDType, kTemplateArg0, kExternName, kPrintf };
struct IntrinInfo {
  std::string name;
  int arity = -1;
  bool pure = false;
  std::string cuda;
  IntrinStyle style = IntrinStyle::kCall;
  std::string header;  // "" = tilec/common.cuh
};
const IntrinInfo* find_intrinsic(const std::string& name);

// The C type of a dtype: "float", "half", "tl::vec<float, 4>", ...; UserError for types
// the CUDA back end cannot represent.
std::string c_type(ir::DataType t, const SourceLoc& loc = {});
// The C type of a buffer's storage unit and the number of units for `elems` elements:
// c_type and elems, except float4_e2m1 (tl::fp4x2, two elements per byte; elems is even,
// verify checks every float4 buffer's innermost extent).
std::string storage_c_type(ir::DataType t, const SourceLoc& loc = {});
int64_t storage_units(ir::DataType t, int64_t elems);

// C operator precedence, higher binds tighter.
enum Prec : int {
  kPrecCond = 3,
  kPrecLogOr = 4,
  kPrecLogAnd = 5,
  kPrecBitOr = 6,
  kPrecBitXor = 7,
  kPrecBitAnd = 8,
  kPrecEq = 9,
  kPrecRel = 10,
  kPrecShift = 11,
  kPrecAdd = 12,
  kPrecMul = 13,
  kPrecUnary = 15,
  kPrecPrimary = 17,
};

struct Printed {
  std::string text;
  int prec = kPrecPrimary;
};

class CudaPrinter {
 public:
  explicit CudaPrinter(CodegenOptions opts, int indent = 1) : opts_(opts), indent_(indent) {}
  // Debug printing (tests, dumps) of IR that is not ready for codegen yet: multi-dimensional
  // accesses print as A[i][j], unplanned shared.dyn buffers as __shared__ arrays.
  bool debug = false;

  // ---- names ----
  // Gives a node (VarNode / BufferNode) a unique C identifier derived from `hint`.
  const std::string& define_name(const void* node, const std::string& hint);
  // The identifier of a node; a node seen for the first time is defined on the spot.
  const std::string& name_of(const ir::VarNode* v);
  const std::string& name_of(const ir::BufferNode* b);
  void reserve_name(const std::string& name) { used_names_.insert(name); }

  // ---- expressions (codegen_expr.cc) ----
  std::string expr(const ir::Expr& e) { return print(e).text; }
  Printed print(const ir::Expr& e);
  // `e` as an operand that needs at least precedence `min_prec`.
  std::string operand(const ir::Expr& e, int min_prec);

  // ---- statements (codegen.cc) ----
  void stmt(const ir::Stmt& s);
  std::string take_body() { return body_.str(); }

  // ---- facts for index printing ----
  void add_nonneg_var(const ir::VarNode* v) { nonneg_vars_.insert(v); }
  arith::Analyzer& analyzer() { return analyzer_; }
  // Buffers that hold a vector access somewhere (local arrays get aligned).
  std::unordered_set<const ir::BufferNode*> vector_accessed;

  // Facts codegen_cuda needs after printing the body.
  bool uses_setmaxnreg = false;                 // needs __launch_bounds__(threads, 1)
  std::set<std::pair<int, int>> wgmma_atoms;    // (N, kind) of tl::WgmmaAtom to define
  // The kernel's TMA map parameters: the plan's specs and their parameter names.
  const runtime::LaunchPlan* plan = nullptr;
  std::vector<std::string> tma_names;
  std::string tma_param_name(const ir::CallNode& call);

  const std::set<std::string>& headers() const { return headers_; }
  void need_header(const std::string& h) {
    if (!h.empty()) headers_.insert(h);
  }

 private:
  Printed print_binary(const ir::BinaryNode* op);
  // An operand of an overloaded device function: C++ computes 8- and 16-bit integer
  // arithmetic in int, so such an operation gets its IR type back (tl::min(ushort, ushort),
  // tl::reinterpret<bf16>(ushort) match).
  std::string overload_operand(const ir::Expr& x);
  Printed print_floor_div_mod(const ir::BinaryNode* op);
  Printed print_call(const ir::CallNode* op);
  Printed print_printf(const ir::CallNode* op, const IntrinInfo& info);
  Printed print_load(const ir::BufferLoadNode* op);
  Printed print_fp4_load(const ir::BufferLoadNode* op);
  std::string fp4_byte_index(const ir::Expr& index);
  // The element an access names, "buf[index]", and its lane count (> 1 for a contiguous
  // Ramp index, printed through tl::load / tl::store). Loads and stores share it.
  struct ElementRef {
    std::string text;
    int lanes = 1;
  };
  ElementRef element_ref(const ir::Buffer& buffer, const std::vector<ir::Expr>& indices);
  Printed print_cast(const ir::CastNode* op);
  Printed print_imm(const ir::Expr& e);

  void line(const std::string& text);  // one indented line of the body
  void line_directive(const SourceLoc& loc);
  void print_for(const ir::ForNode* op);
  void print_if(const ir::IfNode* op, bool as_else_if);
  void print_store(const ir::BufferStoreNode* op);
  void print_fp4_store(const ir::BufferStoreNode* op);
  void print_allocate(const ir::AllocateNode* op, const ir::Expr* smem_offset);

  CodegenOptions opts_;
  std::ostringstream body_;
  int indent_ = 1;
  std::unordered_map<const void*, std::string> names_;
  std::unordered_set<std::string> used_names_;
  std::unordered_set<const ir::VarNode*> nonneg_vars_;
  arith::Analyzer analyzer_;
  std::set<std::string> headers_;
  std::string last_line_file_;
  int last_line_ = -1;
};

}  // namespace tilec::cuda::detail
