// Reading a T.gemm's operands (see gemm_operands.h).
#include "ops/gemm_operands.h"

#include "ops/op_util.h"
#include "tilec/ir/tile_op.h"

namespace tilec::ops {

using namespace ir;

namespace {

Matrix matrix_of(const BufferRegion& r, const char* name, const SourceLoc& loc) {
  const int nd = static_cast<int>(r.region.size());
  TILEC_USER_CHECK(nd >= 2, loc, "pass a 2-D buffer or region")
      << "T.gemm: operand " << name << " ('" << r.buffer->name << "') has " << nd << " dimension(s), not 2";
  for (int d = 0; d + 2 < nd; ++d)
    TILEC_USER_CHECK(is_one(r.region[d].extent), loc, "index the leading dimensions with a single value")
        << "T.gemm: operand " << name << " ('" << r.buffer->name << "') must be 2-D after its leading dimensions";
  Matrix m;
  m.region = &r;
  const int64_t* e0 = as_const_int(r.region[nd - 2].extent);
  const int64_t* e1 = as_const_int(r.region[nd - 1].extent);
  const int64_t* s0 = as_const_int(r.buffer->shape[nd - 2]);
  const int64_t* s1 = as_const_int(r.buffer->shape[nd - 1]);
  TILEC_USER_CHECK(e0 && e1 && s0 && s1, loc, "tile shapes must be compile-time constants")
      << "T.gemm: operand " << name << " ('" << r.buffer->name << "') has a symbolic shape";
  m.rows = *e0, m.cols = *e1, m.tile_rows = *s0, m.tile_cols = *s1;
  return m;
}

}  // namespace

GemmOp analyze_gemm(const TileOpNode& op, const OpEnv& env) {
  GemmOp g;
  g.a = matrix_of(region_arg(op, 0), "A", op.loc);
  g.b = matrix_of(region_arg(op, 1), "B", op.loc);
  g.c = matrix_of(region_arg(op, 2), "C", op.loc);
  cuda::GemmQuery& q = g.query;
  q.trans_a = attr_bool(op, "transpose_A");
  q.trans_b = attr_bool(op, "transpose_B");
  q.m = q.trans_a ? g.a.cols : g.a.rows;
  q.k = q.trans_a ? g.a.rows : g.a.cols;
  q.n = q.trans_b ? g.b.rows : g.b.cols;
  const int64_t kb = q.trans_b ? g.b.cols : g.b.rows;
  TILEC_USER_CHECK(kb == q.k, op.loc, "A's K extent must equal B's (check transpose_A / transpose_B)")
      << "T.gemm: A is " << g.a.rows << "x" << g.a.cols << (q.trans_a ? " (transposed)" : "") << " and B is "
      << g.b.rows << "x" << g.b.cols << (q.trans_b ? " (transposed)" : "") << ": K is " << q.k << " for A but " << kb
      << " for B";
  TILEC_USER_CHECK(g.c.rows == q.m && g.c.cols == q.n, op.loc, "C must be M x N")
      << "T.gemm: C ('" << g.c.region->buffer->name << "') is " << g.c.rows << "x" << g.c.cols << " but A * B is "
      << q.m << "x" << q.n;
  TILEC_USER_CHECK(region_is_full(*g.c.region) && g.c.region->buffer->ndim() == 2, op.loc,
                   "accumulate into a whole fragment")
      << "T.gemm: C must be a whole 2-D fragment, not a part of '" << g.c.region->buffer->name << "'";
  if (g.a.region->buffer->scope == Scope::kFragment) {
    TILEC_USER_CHECK(region_is_full(*g.a.region) && g.a.region->buffer->ndim() == 2, op.loc,
                     "pass a whole M x K fragment as A")
        << "T.gemm: A in registers must be a whole 2-D fragment, not a part of '" << g.a.region->buffer->name << "'";
  }
  q.a_dtype = g.a.region->buffer->dtype;
  q.b_dtype = g.b.region->buffer->dtype;
  q.c_dtype = g.c.region->buffer->dtype;
  q.a_scope = g.a.region->buffer->scope;
  q.b_scope = g.b.region->buffer->scope;
  q.c_scope = g.c.region->buffer->scope;
  q.lda = g.a.tile_cols;
  q.ldb = g.b.tile_cols;
  q.num_threads = static_cast<int>(env.num_threads());
  q.allow_wgmma = !env.config_flag("tl.disable_wgmma");
  q.wgmma_partition = env.config_string("tilec.wgmma_partition");
  q.instruction = attr_string(op, "instruction");
  const std::string policy = attr_string(op, "policy", "Square");
  auto p = cuda::parse_warp_policy(policy);
  TILEC_USER_CHECK(p.has_value(), op.loc, "use Square, FullRow or FullCol")
      << "T.gemm: unknown policy '" << policy << "'";
  q.policy = *p;
  q.loc = op.loc;
  return g;
}

OperandStart operand_start(const BufferRegion& r, const TileOpNode& op, LowerContext& ctx) {
  const Buffer& b = r.buffer;
  const int nd = b->ndim();
  std::vector<Expr> origin;
  for (int d = 0; d + 2 < nd; ++d) origin.push_back(r.region[d].min);
  origin.push_back(int_imm(0));
  origin.push_back(int_imm(0));
  OperandStart s;
  s.address = call(DataType::Handle(), "tl.address_of",
                   {buffer_load(ctx.lowered_buffer(b), ctx.physical_index(b, origin), op.loc)}, op.loc);
  s.row0 = r.region[nd - 2].min;
  s.col0 = r.region[nd - 1].min;
  return s;
}

Expr first_element_address(const Buffer& b, const TileOpNode& op, LowerContext& ctx) {
  return call(DataType::Handle(), "tl.address_of", {buffer_load(ctx.lowered_buffer(b), {int_imm(0)}, op.loc)}, op.loc);
}

}  // namespace tilec::ops
