// What pipeline_planning and inject_pipeline share: the canonical body of a pipelined
// loop, and which buffers a body statement reads and writes.
//
// Canonical body: a chain of Allocate / Annotate nodes (the "wrappers", outermost first)
// around one Seq of statements, with no Let between them (Lets are inlined). The `stage`
// and `order` lists of the loop's PipelineInfo have one entry per statement of that Seq.
#pragma once

#include <functional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "tilec/ir/mutator.h"
#include "tilec/ir/stmt.h"

namespace tilec::passes::pipeline {

struct Body {
  std::vector<ir::Stmt> wrappers;  // Allocate / Annotate nodes, outermost first (bodies ignored)
  std::vector<ir::Stmt> stmts;
};

// Splits any loop body into wrappers and flat statements: nested Seqs are flattened,
// Lets are substituted into what follows them, Allocates and Annotates met anywhere in
// the statement list are hoisted into the wrappers.
Body split_body(const ir::Stmt& body);
// The inverse: the wrappers around Seq(stmts) (a single statement stays itself).
ir::Stmt join_body(const std::vector<ir::Stmt>& wrappers, std::vector<ir::Stmt> stmts);
// Loop `op` as a serial loop over `body` with statement j at issue position order[j].
ir::Stmt serial_loop(const ir::ForNode* op, const Body& body, const std::vector<int>& order);

using BufferSet = std::unordered_set<const ir::BufferNode*>;
struct Access {
  BufferSet reads, writes;
};
// The buffers a statement reads and writes: tile ops by their known argument roles
// (unknown ops read and write every region), plain statements by their loads and stores.
Access accesses(const ir::Stmt& s);
// The same, leaving out the tile ops (and what they contain) for which `skip` is true.
Access accesses_except(const ir::Stmt& s, const std::function<bool(const ir::TileOpNode*)>& skip);

// T.copy / T.async_copy from a global buffer into a shared one.
bool is_global_to_shared_copy(const ir::Stmt& s);

// Rewrites every access (loads, stores, tile-op regions) of the buffers in `map` to the
// versioned buffer, at version `slot` (a new leading index / a region of extent 1 there).
class VersionAccesses : public ir::IRMutator {
 public:
  VersionAccesses(const std::unordered_map<const ir::BufferNode*, ir::Buffer>& map, ir::Expr slot)
      : map_(map), slot_(std::move(slot)) {}
  ir::BufferRegion mutate_region(const ir::BufferRegion& r) override;

 protected:
  ir::Expr mutate_BufferLoad(const ir::Expr& e, const ir::BufferLoadNode* op) override;
  ir::Stmt mutate_BufferStore(const ir::Stmt& s, const ir::BufferStoreNode* op) override;

 private:
  // The indices in front of an access: the version, and row 0 where `versioned` keeps a 1-D
  // tile as one row (one more dimension than the version adds).
  std::vector<ir::Expr> version_prefix(const ir::Buffer& versioned, const ir::Buffer& original) const;
  const std::unordered_map<const ir::BufferNode*, ir::Buffer>& map_;
  ir::Expr slot_;
};

}  // namespace tilec::passes::pipeline
