// Pass split_host_device and build_launch_plan: the host side of a kernel, as data.
//
// Input: a PrimFunc at the end of the CUDA pipeline (after flatten_buffers and
//   plan_shared_memory): one KernelLaunch, possibly under Let/Annotate wrappers; global
//   parameters possibly flattened (originals in attr kUnflattenedParamsAttr).
// Output: the function unchanged (the pass only checks), and, from build_launch_plan, the
//   runtime::LaunchPlan:
//   - tensors: one TensorParam per buffer parameter, in parameter order: dtype, shape as
//     DimSpecs (a constant, a T.dynamic variable by name, or a constant times one: `seq_len *
//     heads` is DimSpec{symbol seq_len, scale heads}), strides likewise when the
//     parameter has explicit strides (empty = contiguous row-major), alignment_bytes = the
//     widest access the kernel makes through that tensor (vector loads/stores found in the
//     body, intrinsics whose EFFECT row gives the bytes they access, e.g. 16-byte cp.async,
//     kAssumeAlignedPrefix annotations), at least one element;
//     index_bits = the width of the tensor's offset arithmetic (the flattened buffer's
//     extent type: 64 when flatten_buffers chose int64 indices, else 32);
//   - scalars, param_order, symbols (every variable in a tensor's shape or strides, in order
//     of first appearance);
//   - kernel_args: every tensor's data pointer, then every scalar, then the symbols the
//     kernel body uses (codegen prints the kernel's parameter list from this);
//   - grid (expressions over symbol_vars, wrapper Lets substituted), block, cluster,
//     dynamic_shared_bytes (attr kDynamicSharedBytesAttr), cooperative (the kernel calls
//     tl.sync_grid: the runtime launches it cooperatively).
// Errors (UserError): a tensor dimension that is neither a constant, a variable nor a constant
//   times a variable; two
//   different symbolic variables with one name; a variable the kernel uses that is neither
//   a parameter nor a symbolic dimension; a grid extent that depends on a scalar parameter.
// Must run after: flatten_buffers, plan_shared_memory (it reads their attributes).
#include <map>

#include "passes/cuda_back_util.h"
#include "tilec/ir/mutator.h"
#include "tilec/ir/visitor.h"
#include "tilec/passes/cuda_back_passes.h"
#include "tilec/passes/passes.h"
#include "tilec/target/cuda/codegen.h"

namespace tilec::passes {

using namespace ir;

namespace {

class SymbolTable {
 public:
  runtime::DimSpec spec(const Expr& e, const Buffer& tensor, int dim, const char* what) {
    runtime::DimSpec d;
    if (auto* c = as_const_int(e)) {
      d.value = *c;
      return d;
    }
    Expr sym = e;
    if (auto* mul = e.as<BinaryNode>(); mul && mul->kind == NodeKind::kMul) {  // scale * symbol
      const bool const_b = as_const_int(mul->b) != nullptr;
      const int64_t* c = const_b ? as_const_int(mul->b) : as_const_int(mul->a);
      const Expr& other = const_b ? mul->a : mul->b;
      if (c && *c >= 1 && other.as<VarNode>()) {
        sym = other;
        d.scale = *c;
      }
    }
    auto* v = sym.as<VarNode>();
    TILEC_USER_CHECK(v != nullptr, tensor->loc,
                     "declare the dimension as its own T.dynamic variable (or a constant times one) and compute "
                     "derived sizes in the kernel")
        << "tensor '" << tensor->name << "' " << what << " " << dim
        << " is an expression; only constants, T.dynamic variables and constant multiples of them are supported";
    auto it = by_name_.find(v->name);
    if (it == by_name_.end()) {
      by_name_[v->name] = v;
      names.push_back(v->name);
      vars.push_back(Var(std::static_pointer_cast<const VarNode>(sym.shared())));
    } else {
      TILEC_USER_CHECK(it->second == v, tensor->loc, "give every T.dynamic variable its own name")
          << "two different symbolic dimensions are named '" << v->name << "'";
    }
    d.symbol = v->name;
    return d;
  }
  bool contains(const VarNode* v) const {
    auto it = by_name_.find(v->name);
    return it != by_name_.end() && it->second == v;
  }
  std::vector<std::string> names;
  std::vector<Var> vars;

 private:
  std::map<std::string, const VarNode*> by_name_;
};

// Widest access (bytes) per buffer: vector loads/stores and assume-aligned annotations.
class AccessWidths : public IRVisitor {
 public:
  std::unordered_map<const BufferNode*, int64_t> bytes;

 protected:
  void note(const Buffer& b, const std::vector<Expr>& indices) {
    int lanes = 1;
    for (const auto& i : indices) lanes = std::max(lanes, i->dtype.lanes());
    int64_t w = b->dtype.with_lanes(lanes).bytes();  // float4_e2m1: two a byte
    int64_t& cur = bytes[b.get()];
    cur = std::max(cur, w);
  }
  void visit_BufferLoad(const BufferLoadNode* op) override {
    note(op->buffer, op->indices);
    IRVisitor::visit_BufferLoad(op);
  }
  void visit_BufferStore(const BufferStoreNode* op) override {
    note(op->buffer, op->indices);
    IRVisitor::visit_BufferStore(op);
  }
  void visit_Call(const CallNode* op) override {
    // Intrinsics that access global memory in units of N bytes (EFFECT rows, e.g. cp.async).
    const std::string& spec = back::intrinsic_effect(op->op);
    for (size_t i = 0; i < op->args.size(); ++i) {
      auto* addr = op->args[i].as<CallNode>();
      int64_t w = back::effect_bytes_of_arg(spec, i);
      if (!addr || addr->op != "tl.address_of" || addr->args.empty() || w <= 0) continue;
      if (auto* load = addr->args[0].as<BufferLoadNode>()) {
        int64_t& cur = bytes[load->buffer.get()];
        cur = std::max(cur, w);
      }
    }
    IRVisitor::visit_Call(op);
  }
  void visit_Annotate(const AnnotateNode* op) override {
    const std::string prefix = kAssumeAlignedPrefix;
    if (op->key.rfind(prefix, 0) == 0) {
      auto* b = std::get_if<Buffer>(&op->value);
      int64_t w = std::stoll(op->key.substr(prefix.size()));
      TILEC_ICHECK(b && w > 0) << op->key << " needs a Buffer value";
      int64_t& cur = bytes[b->get()];
      cur = std::max(cur, w);
    }
    IRVisitor::visit_Annotate(op);
  }
};

// Width of the offset arithmetic codegen prints for a tensor: flatten_buffers gives the
// 1-D buffer's extent the index type; an unflattened buffer's indices are as wide as its
// widest dimension or stride.
int index_bits_of(const Buffer& param, bool flattened) {
  if (flattened) {
    TILEC_ICHECK(param->ndim() == 1) << "flattened parameter '" << param->name << "' is not 1-D";
    return param->shape[0]->dtype.bits() >= 64 ? 64 : 32;
  }
  int bits = 32;
  for (const auto* dims : {&param->shape, &param->strides})
    for (const auto& e : *dims) bits = std::max(bits, e->dtype.bits() >= 64 ? 64 : 32);
  return bits;
}

}  // namespace

runtime::LaunchPlan build_launch_plan(const PrimFunc& f) {
  runtime::LaunchPlan plan;
  plan.kernel_name = cuda::cuda_identifier(f->name);
  const KernelLaunchNode* kernel = back::find_kernel(f->body);
  TILEC_USER_CHECK(kernel != nullptr, f->loc, "write the body as `with T.Kernel(...)`")
      << "function '" << f->name << "' has no kernel launch";

  // The buffer parameters as the user declared them (before flattening).
  std::vector<Buffer> originals;
  if (auto* a = find_attr(f->attrs, kUnflattenedParamsAttr)) {
    for (const auto& [b, layout] : std::get<LayoutMap>(*a)) originals.push_back(b);
  }
  std::unordered_map<const BufferNode*, int> tensor_index;
  std::unordered_map<const VarNode*, int> scalar_index;
  SymbolTable symbols;
  int buffer_param = 0;
  for (const auto& p : f->params) {
    if (p.is_buffer()) {
      TILEC_ICHECK(originals.empty() || buffer_param < static_cast<int>(originals.size()))
          << "unflattened params attr does not match the parameters";
      const Buffer& orig = originals.empty() ? p.buffer : originals[buffer_param];
      runtime::TensorParam t;
      t.name = orig->name;
      t.dtype = orig->dtype;
      for (int d = 0; d < orig->ndim(); ++d) t.shape.push_back(symbols.spec(orig->shape[d], orig, d, "dimension"));
      for (size_t d = 0; d < orig->strides.size(); ++d)
        t.strides.push_back(symbols.spec(orig->strides[d], orig, static_cast<int>(d), "stride"));
      t.alignment_bytes = static_cast<int>(back::element_bytes(orig->dtype));
      t.index_bits = index_bits_of(p.buffer, !originals.empty());
      tensor_index[p.buffer.get()] = static_cast<int>(plan.tensors.size());
      tensor_index[orig.get()] = static_cast<int>(plan.tensors.size());
      plan.param_order.push_back({true, static_cast<int>(plan.tensors.size())});
      plan.tensors.push_back(std::move(t));
      ++buffer_param;
    } else {
      scalar_index[p.var.get()] = static_cast<int>(plan.scalars.size());
      plan.param_order.push_back({false, static_cast<int>(plan.scalars.size())});
      plan.scalars.push_back(runtime::ScalarParam{p.var->name, p.var->dtype});
    }
  }
  plan.symbols = symbols.names;
  plan.symbol_vars = symbols.vars;

  // Alignment the kernel relies on.
  AccessWidths widths;
  widths.visit(f->body);
  for (const auto& [buf, bytes] : widths.bytes) {
    auto it = tensor_index.find(buf);
    if (it == tensor_index.end()) continue;
    auto& t = plan.tensors[it->second];
    t.alignment_bytes = std::max<int>(t.alignment_bytes, static_cast<int>(bytes));
  }

  // Wrapper lets (evaluated on the device too) and the variables the device code uses.
  VarMap wrapper_lets;
  std::vector<Var> device_uses = back::free_vars_of_stmt(kernel->body);
  std::unordered_set<const VarNode*> wrapper_bound;
  for (const auto& v : kernel->block_vars) wrapper_bound.insert(v.get());
  for (const auto& v : kernel->thread_vars) wrapper_bound.insert(v.get());
  for (Stmt s = f->body; s && !s.as<KernelLaunchNode>();) {
    if (auto* l = s.as<LetNode>()) {
      for (auto& v : back::free_vars(l->value)) device_uses.push_back(v);
      wrapper_lets[l->var.get()] = substitute(l->value, wrapper_lets);
      wrapper_bound.insert(l->var.get());
      s = l->body;
    } else if (auto* a = s.as<AnnotateNode>()) {
      s = a->body;
    } else if (auto* q = s.as<SeqNode>(); q && q->stmts.size() == 1) {
      s = q->stmts[0];
    } else {
      break;
    }
  }
  std::unordered_set<const VarNode*> used_symbols;
  for (const auto& v : device_uses) {
    if (wrapper_bound.count(v.get()) || scalar_index.count(v.get())) continue;
    TILEC_USER_CHECK(symbols.contains(v.get()), v->loc,
                     "pass the value as a scalar parameter, or use it as a dimension of a tensor parameter")
        << "the kernel uses '" << v->name << "', which is neither a parameter nor a symbolic dimension";
    used_symbols.insert(v.get());
  }

  for (size_t i = 0; i < plan.tensors.size(); ++i)
    plan.kernel_args.push_back({runtime::KernelArg::kTensorData, static_cast<int>(i), "", DataType::Handle()});
  for (size_t i = 0; i < plan.scalars.size(); ++i)
    plan.kernel_args.push_back({runtime::KernelArg::kScalar, static_cast<int>(i), "", plan.scalars[i].dtype});
  for (const auto& v : symbols.vars)
    if (used_symbols.count(v.get())) plan.kernel_args.push_back({runtime::KernelArg::kSymbol, 0, v->name, v->dtype});

  // TMA tensor maps: one per distinct tl.tma_descriptor(name, swizzle, box...) call.
  for_each_node(kernel->body, [&](const Node* n) {
    auto* c = dynamic_cast<const CallNode*>(n);
    if (!c || c->op != kTmaDescriptorOp) return;
    runtime::TmaDescSpec d = tma_descriptor_spec(*c, plan);
    for (const auto& e : plan.tma_descs)
      if (e == d) return;
    plan.tma_descs.push_back(d);
    plan.kernel_args.push_back({runtime::KernelArg::kTmaDesc, static_cast<int>(plan.tma_descs.size()) - 1, "",
                                DataType::Handle()});
  });

  for (const auto& g : kernel->grid) {
    Expr e = substitute(g, wrapper_lets);
    for (const auto& v : back::free_vars(e)) {
      TILEC_USER_CHECK(!scalar_index.count(v.get()), g->loc,
                       "derive the grid from tensor dimensions (T.dynamic) instead of a scalar parameter")
          << "the grid extent depends on the scalar parameter '" << v->name << "'";
      TILEC_USER_CHECK(symbols.contains(v.get()), g->loc, "grid extents may use constants and tensor dimensions")
          << "the grid extent uses '" << v->name << "', which is not a symbolic dimension of a tensor parameter";
    }
    plan.grid.push_back(e);
  }
  for (size_t i = 0; i < kernel->threads.size() && i < 3; ++i) plan.block[i] = kernel->threads[i];
  for (size_t i = 0; i < kernel->cluster.size() && i < 3; ++i) plan.cluster[i] = kernel->cluster[i];
  if (auto* a = find_attr(f->attrs, kDynamicSharedBytesAttr)) plan.dynamic_shared_bytes = std::get<int64_t>(*a);
  if (auto* a = find_attr(f->attrs, kPersistentAttr)) plan.persistent_blocks_per_sm = std::get<int64_t>(*a);
  plan.cooperative = contains_grid_sync(kernel->body);  // T.sync_grid: a cooperative launch
  return plan;
}

runtime::TmaDescSpec tma_descriptor_spec(const CallNode& c, const runtime::LaunchPlan& plan) {
  TILEC_ICHECK(c.args.size() >= 3) << kTmaDescriptorOp << " needs (tensor name, swizzle, box...)";
  auto* name = c.args[0].as<StringImmNode>();
  auto* swizzle = as_const_int(c.args[1]);
  TILEC_ICHECK(name && swizzle) << kTmaDescriptorOp << ": tensor name and swizzle must be constants";
  runtime::TmaDescSpec d;
  d.tensor = -1;
  for (size_t i = 0; i < plan.tensors.size(); ++i)
    if (plan.tensors[i].name == name->value) {
      TILEC_ICHECK(d.tensor < 0) << "two tensor parameters are named '" << name->value << "'";
      d.tensor = static_cast<int>(i);
    }
  TILEC_ICHECK(d.tensor >= 0) << kTmaDescriptorOp << " names '" << name->value << "', which is no tensor parameter";
  d.swizzle = static_cast<int>(*swizzle);
  for (size_t i = 2; i < c.args.size(); ++i) {
    auto* b = as_const_int(c.args[i]);
    TILEC_ICHECK(b) << kTmaDescriptorOp << ": box extents must be constants";
    d.box.push_back(*b);
  }
  return d;
}

Pass split_host_device_pass() {
  return {"split_host_device", [](const PrimFunc& f, PassContext&) {
            (void)build_launch_plan(f);  // raises the user errors here, with this pass named in dumps
            return f;
          }};
}

}  // namespace tilec::passes
