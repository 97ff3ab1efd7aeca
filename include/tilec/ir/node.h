// Base of every IR node, node kinds, and the reference handle used for all nodes.
//
// Nodes are immutable once made and shared by pointer (std::shared_ptr<const T>), so a
// pass that changes nothing returns the very same object (copy-on-write mutation).
// Identity of variables and buffers is pointer identity.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "tilec/support/diag.h"

namespace tilec::ir {

using tilec::SourceLoc;

enum class NodeKind : uint8_t {
#define TILEC_EXPR(Kind, NodeClass) k##Kind,
#define TILEC_STMT(Kind, NodeClass) k##Kind,
#include "tilec/ir/nodes.def"
};

const char* node_kind_name(NodeKind kind);
bool is_expr_kind(NodeKind kind);

struct Node {
  explicit Node(NodeKind k) : kind(k) {}
  virtual ~Node() = default;
  NodeKind kind;
  SourceLoc loc;  // the user's file:line:col where known; ignored by structural equality
};

// A nullable reference to an immutable node of class N (or a subclass).
template <typename N>
class Ref {
 public:
  using node_type = N;
  Ref() = default;
  Ref(std::nullptr_t) {}  // NOLINT(google-explicit-constructor)
  template <typename M, typename = std::enable_if_t<std::is_base_of_v<N, M>>>
  Ref(std::shared_ptr<const M> p) : p_(std::move(p)) {}  // NOLINT
  template <typename M, typename = std::enable_if_t<std::is_base_of_v<N, M>>>
  Ref(const Ref<M>& other) : p_(other.shared()) {}  // NOLINT

  const N* get() const { return p_.get(); }
  const N* operator->() const { return p_.get(); }
  const N& operator*() const { return *p_; }
  explicit operator bool() const { return p_ != nullptr; }
  bool defined() const { return p_ != nullptr; }
  const std::shared_ptr<const N>& shared() const { return p_; }

  // Downcast by kind: returns nullptr when the node is not an M.
  template <typename M>
  const M* as() const {
    return p_ ? dynamic_cast<const M*>(p_.get()) : nullptr;
  }
  // Same identity (pointer equality). Structural equality lives in structural.h.
  bool same_as(const Ref& other) const { return p_ == other.p_; }
  friend bool operator==(const Ref& a, std::nullptr_t) { return a.p_ == nullptr; }
  friend bool operator!=(const Ref& a, std::nullptr_t) { return a.p_ != nullptr; }

 private:
  std::shared_ptr<const N> p_;
};

// Hash/equality by identity, for maps keyed by Var or Buffer.
struct RefHash {
  template <typename R>
  size_t operator()(const R& r) const {
    return std::hash<const void*>()(static_cast<const void*>(r.get()));
  }
};
struct RefEq {
  template <typename R>
  bool operator()(const R& a, const R& b) const {
    return a.get() == b.get();
  }
};

// Make a node and stamp a source location on it.
template <typename N, typename... Args>
std::shared_ptr<N> make_node(Args&&... args) {
  return std::make_shared<N>(std::forward<Args>(args)...);
}

}  // namespace tilec::ir
