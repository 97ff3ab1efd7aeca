// target="cpu" entry points (see include/tilec/target/cpu/interpreter.h): checks the
// arguments against the parameters, binds tensors, scalars and symbolic dimensions, and runs
// the body through the Machine (machine.h lists the files of each concern).
#include "tilec/target/cpu/interpreter.h"

#include <sstream>

#include "target/cpu/machine.h"
#include "tilec/ir/verifier.h"
#include "tilec/ir/visitor.h"
#include "tilec/passes/passes.h"

namespace tilec::cpu {

namespace {

std::string arg_error_hint(const PrimFunc& f) {
  std::ostringstream os;
  os << "the kernel takes (";
  for (size_t i = 0; i < f->params.size(); ++i) os << (i ? ", " : "") << f->params[i].name();
  os << ")";
  return os.str();
}

const char* arg_kind(const CpuArg& a) {
  if (std::holds_alternative<HostArray>(a)) return "an array";
  if (std::holds_alternative<int64_t>(a)) return "an int";
  return "a float";
}

}  // namespace

void Machine::run(const std::vector<CpuArg>& args) {
  const PrimFunc& f = func_;
  std::string where = "target=cpu: kernel '" + f->name + "': ";
  if (args.size() != f->params.size())
    throw_user_error(where + "expected " + std::to_string(f->params.size()) + " arguments, got " +
                         std::to_string(args.size()),
                     f->loc, arg_error_hint(f));
  // Tensors first (they bind symbolic dimensions), then their shapes are checked.
  for (size_t p = 0; p < args.size(); ++p) {
    const Param& param = f->params[p];
    const CpuArg& a = args[p];
    if (!param.is_buffer()) {
      DataType t = param.var->dtype;
      if (t.is_handle()) {  // a pointer parameter: the array itself (T.make_tensor views it)
        auto* arr = std::get_if<HostArray>(&a);
        if (!arr)
          throw_user_error(where + "argument " + std::to_string(p) + " ('" + param.name() +
                               "') is a pointer: target=cpu takes the array itself, got " + arg_kind(a),
                           f->loc, "pass the numpy array or CPU tensor, not its address");
        pointer_args_[param.var.get()] = *arr;
        continue;
      }
      if (auto* i = std::get_if<int64_t>(&a)) bind(param.var.get(), from_int(t, *i));
      else if (auto* d = std::get_if<double>(&a)) bind(param.var.get(), from_double(t, *d));
      else
        throw_user_error(where + "argument " + std::to_string(p) + " ('" + param.name() + "') is a scalar of " +
                             t.str() + ", got " + arg_kind(a),
                         f->loc, arg_error_hint(f));
      continue;
    }
    const Buffer& b = param.buffer;
    const auto* arr = std::get_if<HostArray>(&a);
    if (!arr)
      throw_user_error(where + "argument " + std::to_string(p) + " ('" + b->name + "') is a tensor, got " +
                           arg_kind(a),
                       f->loc, arg_error_hint(f));
    if (!cpu_supports_dtype(b->dtype) || b->dtype.is_float4())
      not_supported("a tensor parameter of dtype " + b->dtype.str() + " ('" + b->name + "')", f->loc);
    if (arr->dtype != b->dtype)
      throw_user_error(where + "argument '" + b->name + "' must be " + b->dtype.str() + ", got " + arr->dtype.str(),
                       f->loc, "convert the array (numpy: .astype)");
    if (static_cast<int>(arr->shape.size()) != b->ndim() || arr->strides.size() != arr->shape.size())
      throw_user_error(where + "argument '" + b->name + "' must have " + std::to_string(b->ndim()) +
                           " dimensions, got " + std::to_string(arr->shape.size()),
                       f->loc, arg_error_hint(f));
    for (size_t d = 0; d < arr->shape.size(); ++d)
      if (auto* v = b->shape[d].as<VarNode>(); v && !vars_.count(v)) bind(v, from_int(v->dtype, arr->shape[d]));
    bind_tensor(b, *arr);
  }
  for (const Param& param : f->params) {
    if (!param.is_buffer()) continue;
    const Storage& s = storages_.at(param.buffer.get());
    for (size_t d = 0; d < s.shape.size(); ++d) {
      int64_t want = eval_int(param.buffer->shape[d]);
      if (want != s.shape[d])
        throw_user_error(where + "argument '" + param.buffer->name + "' has shape " + index_str(s.shape) +
                             " but dimension " + std::to_string(d) + " must be " + std::to_string(want),
                         f->loc, arg_error_hint(f));
    }
  }
  exec(f->body);
}

void run_on_cpu(const PrimFunc& given, const std::vector<CpuArg>& args, const CpuOptions& options) {
  verify(given);
  // T.sync_grid() inside T.Parallel splits the loop, and every block must reach each barrier:
  // the same rewrite and check as on the GPU.
  const PrimFunc f = passes::split_parallel_at_grid_syncs(given);
  passes::check_grid_syncs(f);
  Machine m(f, options);
  m.run(args);
}

std::vector<int64_t> param_shape(const PrimFunc& f, size_t param_index,
                                 const std::vector<std::pair<std::string, int64_t>>& symbols) {
  TILEC_ICHECK(param_index < f->params.size() && f->params[param_index].is_buffer()) << "not a tensor parameter";
  const Buffer& b = f->params[param_index].buffer;
  CpuOptions options;
  Machine m(f, options);
  struct Binder : IRVisitor {
    Machine& m;
    const std::vector<std::pair<std::string, int64_t>>& symbols;
    const Buffer& b;
    Binder(Machine& mm, const std::vector<std::pair<std::string, int64_t>>& s, const Buffer& bb)
        : m(mm), symbols(s), b(bb) {}
    void visit_Var(const VarNode* v) override {
      for (const auto& [name, value] : symbols)
        if (name == v->name) return m.bind(v, from_int(v->dtype, value));
      throw_user_error("target=cpu: the shape of '" + b->name + "' needs the value of '" + v->name + "'", b->loc,
                       "pass the tensors that define '" + v->name + "' (or its value)");
    }
  } binder(m, symbols, b);
  std::vector<int64_t> shape;
  for (const Expr& e : b->shape) {
    binder.visit(e);
    shape.push_back(m.eval_int(e));
  }
  return shape;
}

}  // namespace tilec::cpu
