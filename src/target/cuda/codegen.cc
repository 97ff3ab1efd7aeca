// CUDA C codegen: statements and the kernel function.
//
// Input: a PrimFunc after the whole CUDA pipeline — one KernelLaunch (under Let/Annotate
// wrappers), no tile ops, 1-D accesses, every shared.dyn Allocate wrapped in its arena
// offset (plan_shared_memory), barriers already inserted (insert_syncs). Plus the
// LaunchPlan, which fixes the kernel's parameter list.
//
// Output: `extern "C" __global__ void __launch_bounds__(threads) name(...)`, including
// tilec/common.cuh and the device headers the intrinsics used need (by name). Block and
// thread indices become `const int bx = blockIdx.x;` declarations; Let becomes a const
// declaration of the let's type; local buffers become register arrays; T.make_tensor buffers
// typed pointers at their address (`half* __restrict__ A = reinterpret_cast<half*>(A_ptr);`); shared.dyn buffers
// become typed pointers into `extern __shared__ __align__(1024) unsigned char tilec_smem[]`.
// Identifiers are sanitised and made unique in order of definition.
#include "tilec/target/cuda/codegen.h"

#include <algorithm>
#include <cctype>

#include "passes/cuda_back_util.h"
#include "target/cuda/codegen_internal.h"
#include "target/cuda/wgmma_atoms.h"
#include "tilec/ir/mutator.h"
#include "tilec/ir/visitor.h"
#include "tilec/passes/cuda_back_passes.h"

namespace tilec::cuda {

// The function attribute T.import_source fills (python/tilec/language/extern.py).
constexpr const char* kImportSourceAttr = "tilec.import_source";

using namespace ir;

namespace {

const std::unordered_set<std::string>& reserved_words() {
  static const std::unordered_set<std::string> words = {
      "alignas", "alignof", "asm", "auto", "bool", "break", "case", "catch", "char", "class", "const",
      "constexpr", "const_cast", "continue", "decltype", "default", "delete", "do", "double",
      "dynamic_cast", "else", "enum", "explicit", "export", "extern", "false", "float", "for", "friend",
      "goto", "if", "inline", "int", "long", "mutable", "namespace", "new", "noexcept", "nullptr",
      "operator", "private", "protected", "public", "register", "reinterpret_cast", "return", "short",
      "signed", "sizeof", "static", "static_assert", "static_cast", "struct", "switch", "template",
      "this", "throw", "true", "try", "typedef", "typeid", "typename", "union", "unsigned", "using",
      "virtual", "void", "volatile", "while", "and", "or", "not", "xor", "bitand", "bitor", "compl",
      "half", "half2", "nv_bfloat16", "tl", "std", "threadIdx", "blockIdx", "blockDim", "gridDim",
      "warpSize", "tilec_smem", "min", "max", "abs", "exp", "log", "sqrt", "printf", "assert",
      "main", "NULL", "uint4", "uint2", "int4", "float4", "float2", "dim3"};
  return words;
}

}  // namespace

std::string cuda_identifier(const std::string& name) {
  std::string s;
  for (char c : name) s += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
  if (s.empty()) s = "v";
  if (std::isdigit(static_cast<unsigned char>(s[0]))) s = "v_" + s;
  // Names starting with "__" or "_<Capital>" are reserved for the implementation.
  if (s.size() >= 2 && s[0] == '_' && (s[1] == '_' || std::isupper(static_cast<unsigned char>(s[1]))))
    s = "v" + s;
  if (reserved_words().count(s)) s += "_";
  return s;
}

namespace detail {

const std::string& CudaPrinter::define_name(const void* node, const std::string& hint) {
  auto it = names_.find(node);
  if (it != names_.end()) return it->second;
  std::string base = cuda_identifier(hint), name = base;
  for (int i = 1; used_names_.count(name); ++i) name = base + "_" + std::to_string(i);
  used_names_.insert(name);
  return names_[node] = name;
}

const std::string& CudaPrinter::name_of(const VarNode* v) { return define_name(v, v->name); }

std::string CudaPrinter::tma_param_name(const CallNode& call) {
  TILEC_ICHECK(plan != nullptr) << "a TMA descriptor outside a kernel";
  runtime::TmaDescSpec spec = passes::tma_descriptor_spec(call, *plan);
  for (size_t i = 0; i < plan->tma_descs.size() && i < tma_names.size(); ++i)
    if (plan->tma_descs[i] == spec) return tma_names[i];
  TILEC_UNREACHABLE() << "a TMA descriptor the launch plan does not list";
}
const std::string& CudaPrinter::name_of(const BufferNode* b) { return define_name(b, b->name); }

void CudaPrinter::line(const std::string& text) {
  for (int i = 0; i < indent_; ++i) body_ << "  ";
  body_ << text << "\n";
}

void CudaPrinter::line_directive(const SourceLoc& loc) {
  if (!opts_.line_directives || !loc.known()) return;
  if (loc.line == last_line_ && loc.file == last_line_file_) return;
  last_line_ = loc.line;
  last_line_file_ = loc.file;
  std::string file;
  for (char c : loc.file) {
    if (c == '"' || c == '\\') file += '\\';
    file += c;
  }
  body_ << "#line " << loc.line << " \"" << file << "\"\n";
}

void CudaPrinter::stmt(const Stmt& s) {
  if (!s) return;
  line_directive(s->loc);
  switch (s->kind) {
    case NodeKind::kSeq:
      for (const auto& x : s.as<SeqNode>()->stmts) stmt(x);
      return;
    case NodeKind::kFor:
      return print_for(s.as<ForNode>());
    case NodeKind::kWhile: {
      auto* w = s.as<WhileNode>();
      line("while (" + expr(w->cond) + ") {");
      ++indent_;
      stmt(w->body);
      --indent_;
      return line("}");
    }
    case NodeKind::kIf:
      return print_if(s.as<IfNode>(), false);
    case NodeKind::kLet: {
      auto* l = s.as<LetNode>();
      if (passes::back::provably_nonneg(&analyzer_, l->value, nonneg_vars_)) add_nonneg_var(l->var.get());
      std::string value = expr(l->value);  // before the name: the value cannot use the var
      line("const " + c_type(l->var->dtype, s->loc) + " " + name_of(l->var.get()) + " = " + value + ";");
      return stmt(l->body);
    }
    case NodeKind::kBufferStore:
      return print_store(s.as<BufferStoreNode>());
    case NodeKind::kEvaluate: {
      const Expr& v = s.as<EvaluateNode>()->value;
      if (v.as<IntImmNode>()) return;  // a no-op placeholder
      if (v.as<CallNode>()) return line(expr(v) + ";");
      return line("(void)(" + expr(v) + ");");
    }
    case NodeKind::kAllocate:
      return print_allocate(s.as<AllocateNode>(), nullptr);
    case NodeKind::kAnnotate: {
      auto* a = s.as<AnnotateNode>();
      if (a->key == passes::kWgmmaAtomKey) {
        if (auto* v = std::get_if<std::vector<int64_t>>(&a->value); v && v->size() == 2)
          wgmma_atoms.insert({static_cast<int>((*v)[0]), static_cast<int>((*v)[1])});
      }
      if (a->key == passes::kSmemOffsetKey) {
        auto* alloc = a->body.as<AllocateNode>();
        const Expr* off = std::get_if<Expr>(&a->value);
        TILEC_ICHECK(alloc && off) << passes::kSmemOffsetKey << " must wrap an Allocate with an Expr offset";
        return print_allocate(alloc, off);
      }
      return stmt(a->body);
    }
    case NodeKind::kKernelLaunch:
      TILEC_UNREACHABLE() << "a kernel launch nested in a kernel reached codegen";
    case NodeKind::kTileOp:
      TILEC_UNREACHABLE() << "tile op '" << s.as<TileOpNode>()->op
                          << "' reached CUDA codegen; the lowering passes must remove every tile op";
    default:
      TILEC_UNREACHABLE() << "expression node in statement position";
  }
}

void CudaPrinter::print_for(const ForNode* op) {
  TILEC_ICHECK(op->for_kind != ForKind::kParallel && op->for_kind != ForKind::kPipelined &&
               op->for_kind != ForKind::kThreadBinding)
      << "a " << for_kind_name(op->for_kind) << " loop reached CUDA codegen";
  if (op->for_kind == ForKind::kUnrolled || op->for_kind == ForKind::kVectorized) {
    line("#pragma unroll");
  } else if (const AttrValue* u = find_attr(op->annotations, "tilec.unroll");
             u && std::holds_alternative<int64_t>(*u) && std::get<int64_t>(*u) > 1) {
    line("#pragma unroll " + std::to_string(std::get<int64_t>(*u)));  // partial unroll (pipelined loops)
  }
  const std::string& v = name_of(op->loop_var.get());
  if (passes::back::provably_nonneg(&analyzer_, op->min, nonneg_vars_)) add_nonneg_var(op->loop_var.get());
  analyzer_.bind_range(op->loop_var, op->min, op->extent);
  Expr end = passes::back::add(op->min, op->extent);
  std::string init = expr(op->min);
  line("for (" + c_type(op->loop_var->dtype, op->loc) + " " + v + " = " + init + "; " + v + " < " +
       operand(end, kPrecRel + 1) + "; ++" + v + ") {");
  ++indent_;
  stmt(op->body);
  --indent_;
  line("}");
}

void CudaPrinter::print_if(const IfNode* op, bool as_else_if) {
  const std::string cond = expr(op->cond);
  // A guard that folded to true (e.g. "one writer per lane group" when every thread is one)
  // prints as its body; only a single store or call, which declares nothing in this scope.
  const NodeKind body_kind = op->then_case->kind;
  if (cond == "true" && !as_else_if && !op->else_case &&
      (body_kind == NodeKind::kBufferStore || body_kind == NodeKind::kEvaluate))
    return stmt(op->then_case);
  std::string head = "if (" + cond + ") {";
  if (as_else_if) {
    --indent_;
    line("} else " + head);
    ++indent_;
  } else {
    line(head);
    ++indent_;
  }
  stmt(op->then_case);
  if (op->else_case) {
    if (auto* elif = op->else_case.as<IfNode>()) return print_if(elif, true);
    --indent_;
    line("} else {");
    ++indent_;
    stmt(op->else_case);
  }
  --indent_;
  line("}");
}

void CudaPrinter::print_store(const BufferStoreNode* op) {
  if (op->buffer->dtype.is_float4()) return print_fp4_store(op);
  ElementRef ref = element_ref(op->buffer, op->indices);
  std::string value = expr(op->value);
  if (ref.lanes > 1) return line("tl::store(&" + ref.text + ", " + value + ");");
  line(ref.text + " = " + value + ";");
}

void CudaPrinter::print_allocate(const AllocateNode* op, const Expr* smem_offset) {
  const Buffer& b = op->buffer;
  std::string type = storage_c_type(b->dtype, b->loc);
  if (b->dtype.is_float4()) need_header("tilec/fp4.cuh");
  const std::string& name = name_of(b.get());
  if (b->data) {  // T.make_tensor: a typed pointer at the address
    line(type + "* __restrict__ " + name + " = reinterpret_cast<" + type + "*>(" + name_of(b->data.get()) + ");");
    return stmt(op->body);
  }
  int64_t elems = 1;
  for (const auto& e : b->shape) {
    auto* c = as_const_int(e);
    TILEC_USER_CHECK(c != nullptr, b->loc, "on-chip buffers need constant extents")
        << "buffer '" << b->name << "' has a non-constant extent";
    elems *= *c;
  }
  std::string count = std::to_string(storage_units(b->dtype, elems));
  switch (b->scope) {
    case Scope::kSharedDyn:
      if (debug && smem_offset == nullptr) {
        line("__shared__ " + type + " " + name + "[" + count + "];  // not planned yet");
        break;
      }
      TILEC_ICHECK(smem_offset != nullptr)
          << "shared.dyn buffer '" << b->name << "' reached codegen without an arena offset (plan_shared_memory)";
      line(type + "* " + name + " = reinterpret_cast<" + type + "*>(tilec_smem + " + expr(*smem_offset) + ");");
      break;
    case Scope::kShared:
      line("__shared__ __align__(16) " + type + " " + name + "[" + count + "];");
      break;
    case Scope::kBarrier:
      line("__shared__ __align__(8) unsigned long long " + name + "[" + count + "];");
      break;
    case Scope::kLocal:
    case Scope::kVar: {
      int64_t bytes = (elems * b->dtype.bits() * b->dtype.lanes() + 7) / 8;
      int64_t align = bytes % 16 == 0 ? 16 : bytes % 8 == 0 ? 8 : bytes % 4 == 0 ? 4 : 0;
      std::string prefix = align > passes::back::element_bytes(b->dtype) ? "alignas(" + std::to_string(align) + ") " : "";
      line(prefix + type + " " + name + "[" + count + "];");
      break;
    }
    case Scope::kFragment:
      TILEC_UNREACHABLE() << "fragment buffer '" << b->name << "' reached codegen; layout lowering must make it local";
    case Scope::kGlobal:
    case Scope::kTmem:
      throw_user_error(std::string("cannot allocate a ") + scope_name(b->scope) + " buffer ('" + b->name +
                           "') inside a CUDA kernel",
                       b->loc, "allocate shared, fragment or local buffers in the kernel");
  }
  stmt(op->body);
}

}  // namespace detail

namespace {

// Buffers the kernel writes: stores, and addresses taken by calls that may write.
std::unordered_set<const BufferNode*> written_buffers(const Stmt& body) {
  struct Finder : IRVisitor {
    std::unordered_set<const BufferNode*> written;
    void visit_BufferStore(const BufferStoreNode* op) override {
      written.insert(op->buffer.get());
      IRVisitor::visit_BufferStore(op);
    }
    void visit_Call(const CallNode* op) override {
      if (op->op != "tl.address_of") {
        // Addresses passed to intrinsics: written unless the EFFECT row says read-only.
        const std::string& spec = passes::back::intrinsic_effect(op->op);
        for (size_t i = 0; i < op->args.size(); ++i) {
          auto* addr = op->args[i].as<CallNode>();
          if (!addr || addr->op != "tl.address_of" || addr->args.empty()) continue;
          char effect = passes::back::effect_of_arg(spec, i);
          if (effect == 'r' || effect == '.') continue;
          if (auto* load = addr->args[0].as<BufferLoadNode>()) written.insert(load->buffer.get());
        }
      }
      IRVisitor::visit_Call(op);
    }
  } f;
  f.visit(body);
  return f.written;
}

}  // namespace

std::string codegen_cuda(const PrimFunc& f, const runtime::LaunchPlan& plan, const CodegenOptions& opts) {
  const KernelLaunchNode* kernel = passes::back::find_kernel(f->body);
  TILEC_USER_CHECK(kernel != nullptr, f->loc, "write the body as `with T.Kernel(...)`")
      << "function '" << f->name << "' has no kernel launch";
  detail::CudaPrinter p(opts);
  p.plan = &plan;
  std::string kernel_name = p.define_name(f.get(), plan.kernel_name.empty() ? f->name : plan.kernel_name);

  // Parameters, in the LaunchPlan's order.
  std::vector<const BufferNode*> tensor_params;
  std::vector<const VarNode*> scalar_params;
  for (const auto& prm : f->params) {
    if (prm.is_buffer()) tensor_params.push_back(prm.buffer.get());
    else scalar_params.push_back(prm.var.get());
  }
  std::unordered_map<std::string, const VarNode*> symbol_by_name;
  for (const auto& v : passes::back::free_vars_of_stmt(kernel->body)) symbol_by_name[v->name] = v.get();
  auto written = written_buffers(f->body);
  std::vector<std::string> params;
  for (const auto& arg : plan.kernel_args) {
    switch (arg.kind) {
      case runtime::KernelArg::kTensorData: {
        TILEC_ICHECK(arg.index >= 0 && arg.index < static_cast<int>(tensor_params.size())) << "tensor arg index";
        const BufferNode* b = tensor_params[arg.index];
        std::string type = detail::storage_c_type(b->dtype, b->loc);
        if (b->dtype.is_float4()) p.need_header("tilec/fp4.cuh");
        std::string qual = written.count(b) ? "" : "const ";
        params.push_back(qual + type + "* __restrict__ " + p.name_of(b));
        break;
      }
      case runtime::KernelArg::kScalar: {
        TILEC_ICHECK(arg.index >= 0 && arg.index < static_cast<int>(scalar_params.size())) << "scalar arg index";
        const VarNode* v = scalar_params[arg.index];
        params.push_back(detail::c_type(v->dtype, v->loc) + " " + p.name_of(v));
        break;
      }
      case runtime::KernelArg::kTmaDesc: {
        const auto& spec = plan.tma_descs[arg.index];
        std::string name = p.define_name(&arg, "tma_" + plan.tensors[spec.tensor].name);
        if (p.tma_names.size() <= static_cast<size_t>(arg.index)) p.tma_names.resize(arg.index + 1);
        p.tma_names[arg.index] = name;
        params.push_back("const __grid_constant__ tl::TmaDescriptor " + name);
        p.need_header("tilec/tma.cuh");
        break;
      }
      case runtime::KernelArg::kSymbol: {
        auto it = symbol_by_name.find(arg.symbol);
        std::string name = it != symbol_by_name.end() ? p.name_of(it->second) : p.define_name(&arg, arg.symbol);
        params.push_back(detail::c_type(arg.dtype) + " " + name);
        break;
      }
    }
  }

  // Body: kernel indices, then the wrappers' lets, then the kernel body.
  const int64_t threads = kernel->block_threads();
  static const char* kAxes[] = {"x", "y", "z"};
  std::vector<std::string> prologue;
  if (plan.dynamic_shared_bytes > 0) {
    if (find_attr(f->attrs, passes::kSmemBaseAlignAttr)) {
      // The arena starts on a 1024-byte boundary of the shared window (swizzled TMA /
      // wgmma tiles), whatever static shared memory comes before it.
      prologue.push_back("extern __shared__ __align__(1024) unsigned char tilec_smem_base[];");
      prologue.push_back(
          "unsigned char* const tilec_smem = tilec_smem_base + ((1024u - (static_cast<unsigned>("
          "__cvta_generic_to_shared(tilec_smem_base)) & 1023u)) & 1023u);");
    } else {
      prologue.push_back("extern __shared__ __align__(1024) unsigned char tilec_smem[];");
    }
  }
  for (size_t i = 0; i < kernel->block_vars.size(); ++i) {
    const VarNode* v = kernel->block_vars[i].get();
    p.add_nonneg_var(v);
    p.analyzer().bind_range(kernel->block_vars[i], int_imm(0, v->dtype), kernel->grid[i]);
    prologue.push_back("const int " + p.name_of(v) + " = blockIdx." + kAxes[i] + ";");
  }
  for (size_t i = 0; i < kernel->thread_vars.size(); ++i) {
    const VarNode* v = kernel->thread_vars[i].get();
    p.add_nonneg_var(v);
    p.analyzer().bind_range(kernel->thread_vars[i], int_imm(0, v->dtype), int_imm(kernel->threads[i], v->dtype));
    prologue.push_back("const int " + p.name_of(v) + " = threadIdx." + kAxes[i] + ";");
  }
  for (Stmt s = f->body; s && !s.as<KernelLaunchNode>();) {
    if (auto* l = s.as<LetNode>()) {
      std::string value = p.expr(l->value);
      prologue.push_back("const " + detail::c_type(l->var->dtype, l->loc) + " " + p.name_of(l->var.get()) + " = " +
                         value + ";");
      s = l->body;
    } else if (auto* a = s.as<AnnotateNode>()) {
      s = a->body;
    } else if (auto* q = s.as<SeqNode>(); q && q->stmts.size() == 1) {
      s = q->stmts[0];
    } else {
      break;
    }
  }
  p.stmt(kernel->body);
  std::string body = p.take_body();

  std::ostringstream os;
  os << "// Generated by tilec from '" << f->name << "'.\n";
  if (opts.fast_math) os << "#define TILEC_FAST_MATH 1\n";
  if (opts.debug_sync) os << "#define TILEC_DEBUG_SYNC 1\n";
  os << "#include \"tilec/common.cuh\"\n";
  for (const auto& h : p.headers()) os << "#include \"" << h << "\"\n";
  // T.import_source: the program's own device functions (T.call_extern calls them), with the
  // short integer names CUDA C written for nvcc on Linux expects.
  if (auto* a = find_attr(f->attrs, kImportSourceAttr); a && std::holds_alternative<std::string>(*a)) {
    os << "\nusing uint = unsigned int;\nusing ushort = unsigned short;\nusing uchar = unsigned char;\n";
    os << std::get<std::string>(*a) << "\n";
  }
  for (const auto& [n, kind] : p.wgmma_atoms) os << "\n" << wgmma_atom_definition(n, kind);
  // setmaxnreg needs a known register budget per thread: one block per SM.
  int64_t min_blocks = p.uses_setmaxnreg ? 1 : 0;
  if (auto* a = find_attr(f->attrs, passes::kMinBlocksPerSmAttr); a && std::holds_alternative<int64_t>(*a))
    min_blocks = std::max<int64_t>(min_blocks, std::get<int64_t>(*a));
  const std::string bounds = std::to_string(threads) + (min_blocks > 0 ? ", " + std::to_string(min_blocks) : "");
  os << "\nextern \"C\" __global__ void __launch_bounds__(" << bounds << ") " << kernel_name << "(";
  for (size_t i = 0; i < params.size(); ++i) os << (i ? ", " : "") << params[i];
  os << ") {\n";
  for (const auto& l : prologue) os << "  " << l << "\n";
  os << body << "}\n";
  return os.str();
}

std::string codegen_cuda_stmt(const Stmt& s) {
  detail::CudaPrinter p(CodegenOptions{}, 0);
  p.debug = true;
  p.stmt(s);
  return p.take_body();
}

std::string codegen_cuda_expr(const Expr& e) {
  detail::CudaPrinter p(CodegenOptions{});
  p.debug = true;
  return p.expr(e);
}

}  // namespace tilec::cuda
