// The CPU target's interpreter state (private to src/target/cpu): variable bindings, the
// storage of every live buffer, and the entry points that the per-concern files implement:
//   eval.cc        expressions (arithmetic with the dtype's rounding, casts, selects, loads)
//   intrinsics.cc  Call nodes: math, bit operations, scalar atomics; thread-level calls fail
//   exec.cc        statements: loops, kernel launches, allocations, stores, annotations
//   tile_ops.cc    T.copy, T.fill, T.gemm, T.reduce_*, T.cumsum, T.atomic_* on regions
//   memory.cc      storage, index -> offset with bounds checks and their error messages
//   grid_sync.cc   kernels that call T.sync_grid(): blocks as threads that take turns
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "target/cpu/dtype.h"
#include "tilec/ir/stmt.h"
#include "tilec/ir/tile_op.h"
#include "tilec/target/cpu/interpreter.h"

namespace tilec::cpu {

using namespace ir;

// A buffer's memory: the caller's bytes for a tensor argument, Values for on-chip buffers.
struct Storage {
  Buffer buffer;
  DataType dtype;
  std::vector<int64_t> shape, strides;
  char* bytes = nullptr;     // global tensors (elements of storage_bytes(dtype))
  // On-chip buffers (values already rounded to dtype); a view (T.reshape) shares its
  // buffer's cells under its own shape.
  std::shared_ptr<std::vector<Value>> cells;
  bool global() const { return bytes != nullptr; }
  Value get(int64_t offset) const;
  void set(int64_t offset, const Value& v);
};

// How an access outside a buffer is treated: a global access is guarded (read 0, write
// nothing) unless strict; an on-chip access is an error.
enum class Access : uint8_t { kRead, kWrite, kAtomic };

class GridBarrier;  // grid_sync.cc

class Machine {
 public:
  Machine(const PrimFunc& f, const CpuOptions& options) : func_(f), options_(options) {}

  void run(const std::vector<CpuArg>& args);

  // ---- eval.cc ----
  Value eval(const Expr& e);
  int64_t eval_int(const Expr& e);  // an integer (or bool) expression
  bool eval_bool(const Expr& e) { return eval_int(e) != 0; }

  // ---- intrinsics.cc ----
  Value call(const CallNode* c);

  // ---- exec.cc ----
  void exec(const Stmt& s);

  // ---- tile_ops.cc ----
  void tile_op(const TileOpNode* op);

  // ---- memory.cc ----
  Storage& storage(const Buffer& b, const SourceLoc& loc);
  // The element offset of `idx` in `s`; nullopt for a guarded global access outside the
  // tensor; a UserError for any other out-of-bounds access.
  std::optional<int64_t> offset(const Storage& s, const std::vector<int64_t>& idx, Access access,
                                const SourceLoc& loc);
  Value load(const Buffer& b, const std::vector<int64_t>& idx, const SourceLoc& loc);
  void store(const Buffer& b, const std::vector<int64_t>& idx, const Value& v, const SourceLoc& loc);
  void allocate(const Buffer& b, const SourceLoc& loc);
  void release(const Buffer& b) { storages_.erase(b.get()); }
  void bind_tensor(const Buffer& b, const HostArray& a);
  // T.make_tensor over a pointer parameter (T.ptr): the array passed for it, viewed with the
  // buffer's dtype, shape and strides (which must stay inside the array's bytes).
  void bind_pointer_tensor(const Buffer& b, const SourceLoc& loc);

  // ---- errors ----
  [[noreturn]] void not_supported(const std::string& what, const SourceLoc& loc, const std::string& hint = "");
  const std::string& kernel_name() const { return func_->name; }

  // ---- grid_sync.cc ----
  // T.sync_grid(): waits until every block of the running cooperative kernel reached it.
  void sync_grid(const SourceLoc& loc);

  // ---- variables ----
  void bind(const VarNode* v, const Value& x) { vars_[v] = x; }
  void unbind(const VarNode* v) { vars_.erase(v); }

 private:
  friend class VarScope;
  PrimFunc func_;
  const CpuOptions& options_;
  std::unordered_map<const VarNode*, Value> vars_;
  std::unordered_map<const BufferNode*, Storage> storages_;
  std::unordered_map<const VarNode*, HostArray> pointer_args_;  // pointer parameters: their arrays
  std::unordered_set<const VarNode*> thread_vars_;  // of the running T.Kernel: unsupported
  GridBarrier* grid_barrier_ = nullptr;  // set on a block's machine in a cooperative kernel
  int64_t grid_block_ = 0;                // that block's linear index
  friend void exec_kernel(Machine& m, const KernelLaunchNode* k);
  friend void exec_kernel_cooperative(Machine& m, const KernelLaunchNode* k, const std::vector<int64_t>& grid,
                                      int64_t blocks);
  friend Value eval_var(Machine& m, const VarNode* v);
};

// Binds a variable for a scope and restores the previous binding after it.
class VarScope {
 public:
  VarScope(Machine& m, const VarNode* v, const Value& x) : m_(m), v_(v) {
    auto it = m.vars_.find(v);
    if (it != m.vars_.end()) old_ = it->second;
    m.vars_[v] = x;
  }
  void set(const Value& x) { m_.vars_[v_] = x; }
  ~VarScope() {
    if (old_) m_.vars_[v_] = *old_;
    else m_.vars_.erase(v_);
  }

 private:
  Machine& m_;
  const VarNode* v_;
  std::optional<Value> old_;
};

// Runs the blocks of a kernel that calls T.sync_grid() (grid_sync.cc).
void exec_kernel_cooperative(Machine& m, const KernelLaunchNode* k, const std::vector<int64_t>& grid, int64_t blocks);

// "(3, 130)"
std::string index_str(const std::vector<int64_t>& idx);

}  // namespace tilec::cpu
