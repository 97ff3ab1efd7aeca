// kernel.explain(): what the CUDA back end chose for each copy and gemm of a program and,
// for every faster choice it did not make, the rule that ruled it out (issue 14).
//
// It runs the CUDA pipeline up to the tile-level decisions (warp specialization, pipeline
// injection: copies are then plain, cp.async or TMA; layouts are not inferred yet) and
// asks instruction selection the same questions lowering asks:
//   T.gemm  -> the candidate chain (tcgen05, wgmma, mma.sync, FMA) with each rejection;
//   T.copy  -> TMA (load in a warp-specialized loop, or store) / cp.async (pipelined loop) /
//              plain vectorized copy, with why TMA or cp.async did not apply;
//   kernel  -> the pipelined loop's form: warp-specialized (producer + consumers) or the
//              reason it is not (tilec.not_warp_specialized), and each loop's depth;
//   SIMT copy -> its vector width (from the lowered IR); a TMA load not multicast -> why;
//              a TMA copy of a tensor with symbolic strides -> that TMA is decided at launch.
#pragma once

#include <string>
#include <vector>

#include "tilec/ir/stmt.h"
#include "tilec/passes/pass.h"

namespace tilec::cuda {

struct ExplainLine {
  SourceLoc loc;                      // the op's source line (line 0: not known)
  std::string what;                   // "T.gemm(A_shared, B_shared, C_local)", "kernel", ...
  std::string chosen;                 // the choice, e.g. "wgmma (A, B from shared memory)"
  std::vector<std::string> rejected;  // "mma.sync... : <why>" for the faster choices not made
  std::string label = "chosen";       // how `chosen` is introduced ("found" for a finding)
};

std::vector<ExplainLine> explain(const ir::PrimFunc& f, passes::PassContext& ctx);

// One scalar shared-memory access of a lowered kernel and its bank-conflict degree (the most
// distinct 4-byte words one bank serves to the first warp; 1 = conflict-free), bank_conflicts.cc.
struct BankConflict {
  SourceLoc loc;
  std::string buffer;
  bool store = false;
  int ways = 1;
};
std::vector<BankConflict> shared_bank_conflicts(const ir::PrimFunc& lowered);
std::string format_explain(const std::vector<ExplainLine>& lines);

}  // namespace tilec::cuda
