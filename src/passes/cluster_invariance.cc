// cluster_invariance.h: one value per cluster, checked on every block of a constant grid.
#include "passes/cluster_invariance.h"

#include <unordered_set>

#include "layout/int_eval.h"
#include "passes/cuda_back_util.h"
#include "tilec/ir/mutator.h"

namespace tilec::passes {

namespace {

using namespace ir;

// Visits the largest subexpressions that read block indices and nothing else (IntProgram can
// evaluate them) and records whether one of them differs within a cluster. A block index
// reached any other way (inside a load's index, say) is such a subexpression by itself.
class ClusterVariance : public IRMutator {
 public:
  ClusterVariance(const KernelLaunchNode& k, int dim, int64_t size) : dim_(dim), size_(size) {
    for (const Var& v : k.block_vars) {
      slots_.push_back(v);
      block_set_.insert(v.get());
    }
    constant_ = true;
    for (const Expr& g : k.grid) {
      const int64_t* n = as_const_int(g);
      if (!n || *n <= 0) constant_ = false;
      box_.push_back(n ? *n : 0);
    }
    int64_t blocks = 1;
    for (int64_t n : box_) blocks = constant_ ? blocks * n : 0;
    constant_ = constant_ && blocks <= kMaxClusterCheckBlocks && box_[static_cast<size_t>(dim)] % size == 0;
  }
  bool varies = false;

 protected:
  Expr mutate_binary(const Expr& e, const BinaryNode* op) override {
    return check(e) ? e : IRMutator::mutate_binary(e, op);
  }
  Expr mutate_Cast(const Expr& e, const CastNode* op) override { return check(e) ? e : IRMutator::mutate_Cast(e, op); }
  Expr mutate_Select(const Expr& e, const SelectNode* op) override {
    return check(e) ? e : IRMutator::mutate_Select(e, op);
  }
  Expr mutate_Not(const Expr& e, const NotNode* op) override { return check(e) ? e : IRMutator::mutate_Not(e, op); }
  Expr mutate_Call(const Expr& e, const CallNode* op) override { return check(e) ? e : IRMutator::mutate_Call(e, op); }
  Expr mutate_Var(const Expr& e, const VarNode* op) override {
    check(e);
    return e;
  }

 private:
  // True when `e` reads block indices only and was judged (varies updated); false to descend.
  bool check(const Expr& e) {
    if (varies || !back::uses_any_var(e, block_set_)) return true;
    for (const Var& v : back::free_vars(e))
      if (!block_set_.count(v.get())) return false;
    if (!layout::IntProgram::compiles(e, slots_)) return false;
    if (!back::uses_var(e, slots_[static_cast<size_t>(dim_)].get())) return true;
    varies = !constant_ || differs_within_cluster(e);
    return true;
  }

  // eval_box is row-major, the last block index fastest.
  bool differs_within_cluster(const Expr& e) const {
    const std::vector<int64_t> v = layout::eval_box(e, slots_, box_);
    int64_t inner = 1;
    for (size_t d = box_.size(); d-- > static_cast<size_t>(dim_) + 1;) inner *= box_[d];
    const int64_t extent = box_[static_cast<size_t>(dim_)];
    for (size_t i = 0; i < v.size(); ++i) {
      const int64_t b = static_cast<int64_t>(i) / inner % extent;
      if (b % size_ != 0 && v[i] != v[i - static_cast<size_t>((b % size_) * inner)]) return true;
    }
    return false;
  }

  const int dim_;
  const int64_t size_;
  std::vector<Var> slots_;
  std::unordered_set<const VarNode*> block_set_;
  std::vector<int64_t> box_;
  bool constant_ = false;
};

}  // namespace

bool varies_within_cluster(const Expr& e, const KernelLaunchNode& kernel, int dim, int64_t size) {
  if (size <= 1) return false;
  if (dim < 0 || static_cast<size_t>(dim) >= kernel.block_vars.size() || kernel.grid.size() != kernel.block_vars.size())
    return true;  // no such block index: nothing to compare
  ClusterVariance cv(kernel, dim, size);
  cv.mutate(e);
  return cv.varies;
}

}  // namespace tilec::passes
