// Every pass of tilec: one declaration and its contract each, in pipeline order.
// A pass lives in its own file under src/passes/ whose header comment holds the full
// contract; the lines here are the summary a pipeline author needs. The pipelines
// (src/pipeline/<target>_pipeline.cc) are plain lists of these.
//
// To add a pass: declare `Pass <name>_pass();` here with its contract, implement it in
// src/passes/<name>.cc, and put it in the pipeline list where its "runs after" holds.
#pragma once

#include "tilec/passes/pass.h"

namespace tilec::passes {

// verify (src/passes/verify.cc)
//   in:  any PrimFunc.   out: the same function, unchanged.
//   Raises the verifier's UserError (ir::verify) on the first malformed construct.
//   Runs first, and may run again after any pass as a check.
Pass verify_pass();

// simplify (src/passes/simplify.cc)
//   in:  a verified PrimFunc.   out: an equivalent function whose expressions are
//   simplified by arith::Analyzer, knowing loop, block and thread index ranges.
//   Structure (statements, buffers, tile ops) is untouched. Runs after verify.
Pass simplify_pass();

// ---- passes of the other areas are declared below, in pipeline order ----

// rasterize_blocks (src/passes/rasterize_blocks.cc)
//   in:  kernels that may contain Annotate{"use_swizzle", panel}.   out: the annotation
//   consumed; the 2-D kernel's (bx, by) become Lets of fresh hardware block indices in a
//   panel-serpentine order (better L2 reuse). Runs before layout inference / lowering.
Pass rasterize_blocks_pass();

// layout_inference (src/passes/layout_inference.cc)                         [layoutops]
//   in:  tile-level kernels (tile ops, T.Parallel nests, optional T.annotate_layout).
//   out: kernel body wrapped in Annotate{"layout_map", LayoutMap} with a layout for every
//   fragment and shared buffer; each T.Parallel nest's outer For annotated "loop_layout".
//   UserError naming both ops and the buffer on conflicting demands. After pipeline
//   planning, before lower_tile_ops.
Pass layout_inference_pass();

// lower_tile_ops (src/passes/lower_tile_ops.cc)                             [layoutops]
//   in:  the output of layout_inference.   out: lowered IR (docs/LOWERED_IR.md) except
//   that T.Pipelined loops remain for pipeline injection: no tile ops, no Parallel loops,
//   fragments become Scope::kLocal register arrays, shared buffers 1-D physical.
Pass lower_tile_ops_pass();

}  // namespace tilec::passes
