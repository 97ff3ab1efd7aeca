"""Spec -> T source text (a module whose `program()` returns the T.prim_func), and the kernel's
parameters (name, shape, dtype, role). The text is what a regression test keeps, so it is plain
T code with every constant inlined."""

from __future__ import annotations


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def op_expr(op: list, e: str, w: str, cdt: str) -> str:
    name = op[0]
    if name == "affine":
        return f"{e} * {op[1]!r} + {op[2]!r}"
    if name == "exp":
        return f"T.exp(T.min({e}, 2.0))"
    if name in ("max", "min"):
        return f"T.{name}({e}, {op[1]!r})"
    if name == "reflect":  # continuous at the threshold
        return f"T.if_then_else({e} > {op[1]!r}, {e}, {op[1] * 2!r} - {e})"
    if name == "castrt":
        return f'T.cast(T.cast({e}, "{op[1]}"), "{cdt}")'
    if name == "add_w":
        return f"{e} + {w}"
    if name == "mul_w":
        return f"{e} * {w}"
    if name == "abs":
        return f"T.abs({e})"
    if name == "sqrt1":
        return f"T.sqrt(T.abs({e}) + 1.0)"
    raise ValueError(f"unknown op {name}")


def params(spec: dict) -> list:
    """[(name, shape, dtype, role)], role: 'in', 'out' (allocated, NaN-poisoned) or 'acc'
    (passed in zeroed: atomics add to it)."""
    f, M, N, dt = spec["family"], spec["M"], spec["N"], spec["dtype"]
    if f == "ew":
        ps = [("X", (M, N), dt, "in")] + ([("W", (M, N), dt, "in")] if spec["use_w"] else [])
        return ps + [("Y", (M, N), spec["odt"], "out")]
    if f == "reduce":
        ps = [("X", (M, N), dt, "in"), ("Y", (N,) if spec["dim"] == 0 else (M,), spec["odt"], "out")]
        return ps + ([("Z", (M, N), spec["odt"], "out")] if spec["broadcast"] else [])
    if f == "gemm":
        K = spec["K"]
        a = (K, M) if spec["trans_A"] else (M, K)
        b = (N, K) if spec["trans_B"] else (K, N)
        return [("A", a, dt, "in"), ("B", b, dt, "in"), ("C", (M, N), spec["odt"], "out")]
    if f == "cumsum":
        return [("X", (M, N), dt, "in"), ("Y", (M, N), spec["odt"], "out")]
    if f == "transpose":
        return [("X", (M, N), dt, "in"), ("Y", (N, M), dt, "out")]
    if f == "attn":
        q, kv = (spec["B"], M, spec["H"], spec["D"]), (spec["B"], N, spec.get("HKV", spec["H"]), spec["D"])
        return [("Q", q, dt, "in"), ("K", kv, dt, "in"), ("V", kv, dt, "in"), ("O", q, dt, "out")]
    if f == "atomic":
        if spec["kind"] == "rowsum":
            return [("X", (M, N), dt, "in"), ("Y", (M,), "float32", "acc")]
        return [("X", (spec["B"], M, N), dt, "in"), ("Y", (M, N), "float32", "acc")]
    raise ValueError(f)


def kernel_name(spec: dict) -> str:
    return f"fuzz_{spec['family']}_{spec['seed']}"


class _Lines:
    def __init__(self):
        self.lines: list = []
        self.depth = 0

    def __call__(self, text: str):
        self.lines.append("    " * self.depth + text if text else "")

    def indent(self):
        self.depth += 1

    def dedent(self):
        self.depth -= 1


def dynamic_dims(spec: dict) -> set:
    """(parameter, axis) pairs whose extent is the symbolic M when spec['dyn']."""
    if not spec.get("dyn"):
        return set()
    f = spec["family"]
    if f == "reduce" and spec["dim"] == 0:
        return {("X", 0), ("Z", 0)}
    if f == "atomic" and spec["kind"] == "batch2d":
        return {("X", 1), ("Y", 0)}
    if f == "gemm":
        return {("A", 1 if spec["trans_A"] else 0), ("C", 0)}
    if f == "transpose":
        return {("X", 0), ("Y", 1)}
    return {(p[0], 0) for p in params(spec)}


def _signature(spec: dict, dyn_m: bool) -> str:
    out = []
    dyn = dynamic_dims(spec)
    for name, shape, dtype, _ in params(spec):
        dims = ", ".join("M" if (name, i) in dyn else str(d) for i, d in enumerate(shape))
        out.append(f'{name}: T.Tensor(({dims}{"," if len(shape) == 1 else ""}), "{dtype}")')
    return ", ".join(out)


def render(spec: dict) -> str:
    """The program as a Python module's text."""
    dyn = bool(spec.get("dyn"))
    L = _Lines()
    L("import tilec.language as T")
    L("")
    L("")
    L("def program():")
    L.indent()
    if dyn:
        L('M = T.dynamic("M")')
    L("")
    L("@T.prim_func")
    L(f"def {kernel_name(spec)}({_signature(spec, dyn)}):")
    L.indent()
    Mx = "M" if dyn else str(spec["M"])
    BODIES[spec["family"]](spec, L, Mx)
    L.dedent()
    L("")
    L(f"return {kernel_name(spec)}")
    return "\n".join(L.lines) + "\n"


def _parallel_ops(L: _Lines, shape_args: str, idx: str, buf: str, ops: list, cdt: str, w: str = ""):
    if not ops:
        return
    L(f"for {idx} in T.Parallel({shape_args}):")
    L.indent()
    e = f"{buf}[{idx}]"
    for op in ops:
        L(f"{e} = {op_expr(op, e, f'{w}[{idx}]' if w else '', cdt)}")
    L.dedent()


def _cast(expr: str, src: str, dst: str) -> str:
    return expr if src == dst else f'T.cast({expr}, "{dst}")'


def _body_ew(s: dict, L: _Lines, Mx: str):
    bm, bn, dt, cdt, odt = s["bm"], s["bn"], s["dtype"], s["cdt"], s["odt"]
    L(f"with T.Kernel(T.ceildiv({s['N']}, {bn}), T.ceildiv({Mx}, {bm}), threads={s['threads']}) as (bx, by):")
    L.indent()
    L(f'x = T.alloc_fragment(({bm}, {bn}), "{cdt}")')
    names = [("X", "x")] + ([("W", "w")] if s["use_w"] else [])
    if s["use_w"]:
        L(f'w = T.alloc_fragment(({bm}, {bn}), "{cdt}")')
    for G, f in names:
        if s["stage_in"] == "global":
            L(f"for i, j in T.Parallel({bm}, {bn}):")
            L.indent()
            L(f"{f}[i, j] = {_cast(f'{G}[by * {bm} + i, bx * {bn} + j]', dt, cdt)}")
            L.dedent()
        elif s["stage_in"] == "shared":
            L(f'{f}_s = T.alloc_shared(({bm}, {bn}), "{dt}")')
            L(f"T.copy({G}[by * {bm}, bx * {bn}], {f}_s)")
            L(f"T.copy({f}_s, {f})")
        else:
            L(f"T.copy({G}[by * {bm}, bx * {bn}], {f})")
    for ops in s["loops"]:
        _parallel_ops(L, f"{bm}, {bn}", "i, j", "x", ops, cdt, "w" if s["use_w"] else "")
    if s["stage_out"] == "global":
        L(f"for i, j in T.Parallel({bm}, {bn}):")
        L.indent()
        L(f"Y[by * {bm} + i, bx * {bn} + j] = {_cast('x[i, j]', cdt, odt)}")
        L.dedent()
    elif s["stage_out"] == "shared":
        L(f'y_s = T.alloc_shared(({bm}, {bn}), "{odt}")')
        L("T.copy(x, y_s)")
        L(f"T.copy(y_s, Y[by * {bm}, bx * {bn}])")
    else:
        L(f"T.copy(x, Y[by * {bm}, bx * {bn}])")
    L.dedent()


INIT = {"sum": "0", "max": "-1e30", "min": "1e30"}
INIT_INT = {"sum": "0", "max": "-1000000", "min": "1000000"}


def _body_reduce(s: dict, L: _Lines, Mx: str):
    bm, bn, dim, cdt, op = s["bm"], s["bn"], s["dim"], s["cdt"], s["op"]
    keep, red = (bn, bm) if dim == 0 else (bm, bn)
    grid_extent = str(s["N"]) if dim == 0 else Mx
    red_extent = Mx if dim == 0 else str(s["N"])
    L(f"with T.Kernel(T.ceildiv({grid_extent}, {keep}), threads={s['threads']}) as bx:")
    L.indent()
    L(f'x = T.alloc_fragment(({bm}, {bn}), "{cdt}")')
    L(f'acc = T.alloc_fragment(({keep},), "{cdt}")')
    if s["stage_in"] == "shared":
        L(f'x_s = T.alloc_shared(({bm}, {bn}), "{s["dtype"]}")')
    origin = (lambda k: f"X[{k} * {bm}, bx * {bn}]") if dim == 0 else (lambda k: f"X[bx * {bm}, {k} * {bn}]")

    def load(k: str):
        if s["stage_in"] == "shared":
            L(f"T.copy({origin(k)}, x_s)")
            L("T.copy(x_s, x)")
        else:
            L(f"T.copy({origin(k)}, x)")
        _parallel_ops(L, f"{bm}, {bn}", "i, j", "x", s["pre"], cdt)

    if s["single"]:
        load("0")
        L(f"T.reduce_{op}(x, acc, dim={dim})")
    else:
        init = (INIT_INT if cdt == "int32" else INIT)[op]
        if s["combine"] == "parallel":
            L(f'part = T.alloc_fragment(({keep},), "{cdt}")')
        L(f"T.fill(acc, {init})")
        _open_k_loop(L, s, f"T.ceildiv({red_extent}, {red})")
        load("k")
        if s["combine"] == "clear_false":
            L(f"T.reduce_{op}(x, acc, dim={dim}, clear=False)")
        else:
            L(f"T.reduce_{op}(x, part, dim={dim})")
            L(f"for i in T.Parallel({keep}):")
            L.indent()
            L(f"acc[i] = acc[i] + part[i]" if op == "sum" else f"acc[i] = T.{op}(acc[i], part[i])")
            L.dedent()
        _close_k_loop(L, s)
    _parallel_ops(L, f"{keep}", "i", "acc", s["post"], cdt)
    L(f"T.copy(acc, Y[bx * {keep}])")
    if s["broadcast"]:
        L(f"for i, j in T.Parallel({bm}, {bn}):")
        L.indent()
        L(f"x[i, j] = x[i, j] - acc[{'j' if dim == 0 else 'i'}]")
        L.dedent()
        L(f"T.copy(x, Z[{'0, bx * ' + str(bn) if dim == 0 else 'bx * ' + str(bm) + ', 0'}])")
    L.dedent()


def _open_k_loop(L: _Lines, s: dict, n: str):
    """The loop over k: T.Pipelined / T.serial, or (spec "while") a while over a T.alloc_var counter,
    the same iterations."""
    if s.get("while"):
        L('k = T.alloc_var("int32")')
        L("k = 0")
        L(f"while k < {n}:")
    else:
        head = f"T.Pipelined({n}, num_stages={s['stages']})" if s["loop"] == "pipelined" else f"T.serial({n})"
        L(f"for k in {head}:")
    L.indent()


def _close_k_loop(L: _Lines, s: dict):
    if s.get("while"):
        L("k = k + 1")
    L.dedent()


def _body_gemm(s: dict, L: _Lines, Mx: str):
    bm, bn, bk, dt = s["bm"], s["bn"], s["bk"], s["dtype"]
    tA, tB = s["trans_A"], s["trans_B"]
    L(f"with T.Kernel(T.ceildiv({s['N']}, {bn}), T.ceildiv({Mx}, {bm}), threads={s['threads']}) as (bx, by):")
    L.indent()
    L(f'A_s = T.alloc_shared({(bk, bm) if tA else (bm, bk)}, "{dt}")')
    L(f'B_s = T.alloc_shared({(bn, bk) if tB else (bk, bn)}, "{dt}")')
    if s["a_frag"]:
        L(f'A_f = T.alloc_fragment(({bm}, {bk}), "{dt}")')
    L(f'C_f = T.alloc_fragment(({bm}, {bn}), "float32")')
    if s["clear"] == "clear":
        L("T.clear(C_f)")
    _open_k_loop(L, s, f"T.ceildiv({s['K']}, {bk})")
    L(f"T.copy(A[k * {bk}, by * {bm}], A_s)" if tA else f"T.copy(A[by * {bm}, k * {bk}], A_s)")
    L(f"T.copy(B[bx * {bn}, k * {bk}], B_s)" if tB else f"T.copy(B[k * {bk}, bx * {bn}], B_s)")
    a = "A_s"
    if s["a_frag"]:
        L("T.copy(A_s, A_f)")
        a = "A_f"
    extra = ", clear_accum=(k == 0)" if s["clear"] == "clear_accum" else ""
    L(f"T.gemm({a}, B_s, C_f, transpose_A={tA}, transpose_B={tB}{extra})")
    _close_k_loop(L, s)
    _parallel_ops(L, f"{bm}, {bn}", "i, j", "C_f", s["epilogue"], "float32")
    if s.get("row_reduce"):
        L(f'r = T.alloc_fragment(({bm},), "float32")')
        L(f"T.reduce_{s['row_reduce']}(C_f, r, dim=1)")
        L(f"for i, j in T.Parallel({bm}, {bn}):")
        L.indent()
        L("C_f[i, j] = C_f[i, j] - r[i]")
        L.dedent()
    if s["stage_out"] == "shared":
        L(f'C_s = T.alloc_shared(({bm}, {bn}), "{s["odt"]}")')
        L("T.copy(C_f, C_s)")
        L(f"T.copy(C_s, C[by * {bm}, bx * {bn}])")
    else:
        L(f"T.copy(C_f, C[by * {bm}, bx * {bn}])")
    L.dedent()


def _body_cumsum(s: dict, L: _Lines, Mx: str):
    bm, bn, dim, cdt = s["bm"], s["bn"], s["dim"], s["cdt"]
    keep = bn if dim == 0 else bm
    grid_extent = str(s["N"]) if dim == 0 else Mx
    origin = f"0, bx * {bn}" if dim == 0 else f"bx * {bm}, 0"
    alloc = "T.alloc_shared" if s["scope"] == "shared" else "T.alloc_fragment"
    L(f"with T.Kernel(T.ceildiv({grid_extent}, {keep}), threads={s['threads']}) as bx:")
    L.indent()
    L(f'x = {alloc}(({bm}, {bn}), "{cdt}")')
    L(f"T.copy(X[{origin}], x)")
    _parallel_ops(L, f"{bm}, {bn}", "i, j", "x", s["pre"], cdt)
    if s["inplace"]:
        L(f"T.cumsum(x, dim={dim}, reverse={s['reverse']})")
        out = "x"
    else:
        L(f'y = {alloc}(({bm}, {bn}), "{cdt}")')
        L(f"T.cumsum(x, y, dim={dim}, reverse={s['reverse']})")
        out = "y"
    L(f"T.copy({out}, Y[{origin}])")
    L.dedent()


def _body_atomic(s: dict, L: _Lines, Mx: str):
    bm, bn = s["bm"], s["bn"]
    grid = f"T.ceildiv({s['N']}, {bn}), T.ceildiv({Mx}, {bm})"
    if s["kind"] == "batch2d":
        L(f"with T.Kernel({grid}, {s['B']}, threads={s['threads']}) as (bx, by, bz):")
    else:
        L(f"with T.Kernel({grid}, threads={s['threads']}) as (bx, by):")
    L.indent()
    L(f'x = T.alloc_fragment(({bm}, {bn}), "float32")')
    L(f"T.copy(X[{'bz, ' if s['kind'] == 'batch2d' else ''}by * {bm}, bx * {bn}], x)")
    _parallel_ops(L, f"{bm}, {bn}", "i, j", "x", s["pre"], "float32")
    if s["kind"] == "rowsum":
        L(f'r = T.alloc_fragment(({bm},), "float32")')
        L("T.reduce_sum(x, r, dim=1)")
        if s["form"] == "region":
            L(f"T.atomic_add(Y[by * {bm}], r)")
        else:
            L(f"for i in T.Parallel({bm}):")
            L.indent()
            L(f"T.atomic_add(Y[by * {bm} + i], r[i])")
            L.dedent()
    elif s["form"] == "region":
        L(f"T.atomic_add(Y[by * {bm}, bx * {bn}], x)")
    else:
        L(f"for i, j in T.Parallel({bm}, {bn}):")
        L.indent()
        L(f"T.atomic_add(Y[by * {bm} + i, bx * {bn} + j], x[i, j])")
        L.dedent()
    L.dedent()


def _body_transpose(s: dict, L: _Lines, Mx: str):
    bm, bn, dt = s["bm"], s["bn"], s["dtype"]
    L(f"with T.Kernel(T.ceildiv({s['N']}, {bn}), T.ceildiv({Mx}, {bm}), threads={s['threads']}) as (bx, by):")
    L.indent()
    L(f'tile = T.alloc_shared(({bm}, {bn}), "{dt}")')
    L(f"for i, j in T.Parallel({bm}, {bn}):")
    L.indent()
    e = f"X[by * {bm} + i, bx * {bn} + j]"
    for op in s["pre"]:
        e = f"({op_expr(op, e, '', dt)})"  # one op of the chain after the other
    L(f"tile[i, j] = {e}")
    L.dedent()
    L(f"for j, i in T.Parallel({bn}, {bm}):")
    L.indent()
    L(f"Y[bx * {bn} + j, by * {bm} + i] = tile[i, j]")
    L.dedent()
    L.dedent()


def _body_attn(s: dict, L: _Lines, Mx: str):
    bm, bn, D, dt, N = s["bm"], s["bn"], s["D"], s["dtype"], s["N"]
    scale = (1.0 / D) ** 0.5 * 1.4426950408889634  # log2(e): softmax in base 2
    L(f"with T.Kernel(T.ceildiv({Mx}, {bm}), {s['H']}, {s['B']}, threads={s['threads']}) as (bx, by, bz):")
    L.indent()
    for name, shape, dtype in (("Q_s", (bm, D), dt), ("K_s", (bn, D), dt), ("V_s", (bn, D), dt)):
        L(f'{name} = T.alloc_shared({shape}, "{dtype}")')
    for name, shape, dtype in (("acc_s", (bm, bn), "float32"), ("acc_s_cast", (bm, bn), dt),
                               ("acc_o", (bm, D), "float32")):
        L(f'{name} = T.alloc_fragment({shape}, "{dtype}")')
    for name in ("m", "m_prev", "sc", "sm", "logsum"):
        L(f'{name} = T.alloc_fragment(({bm},), "float32")')
    L(f"hk = by // {s['H'] // s.get('HKV', s['H'])}")  # the key / value head of query head by
    L(f"T.copy(Q[bz, bx * {bm}:(bx + 1) * {bm}, by, :], Q_s)")
    L("T.fill(acc_o, 0)")
    L("T.fill(logsum, 0)")
    L('T.fill(m, -T.infinity("float32"))')
    steps = f"T.ceildiv({N}, {bn})"
    if s["causal"]:  # query i sees keys j <= i (top-left aligned)
        steps = f"T.min({steps}, T.ceildiv((bx + 1) * {bm}, {bn}))"
    L(f"for k in T.Pipelined({steps}, num_stages={s['stages']}):")
    L.indent()
    L(f"T.copy(K[bz, k * {bn}:(k + 1) * {bn}, hk, :], K_s)")
    L(f"for i, j in T.Parallel({bm}, {bn}):")
    L.indent()
    visible = f"k * {bn} + j < {N}" + (f" and bx * {bm} + i >= k * {bn} + j" if s["causal"] else "")
    L(f'acc_s[i, j] = T.if_then_else({visible}, 0, -T.infinity("float32"))')
    L.dedent()
    L("T.gemm(Q_s, K_s, acc_s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)")
    L("T.copy(m, m_prev)")
    L('T.fill(m, -T.infinity("float32"))')
    L("T.reduce_max(acc_s, m, dim=1, clear=False)")
    L(f"for i in T.Parallel({bm}):")
    L.indent()
    L("m[i] = T.max(m[i], m_prev[i])")
    L(f"sc[i] = T.exp2(m_prev[i] * {scale!r} - m[i] * {scale!r})")
    L.dedent()
    L(f"for i, j in T.Parallel({bm}, {bn}):")
    L.indent()
    L(f"acc_s[i, j] = T.exp2(acc_s[i, j] * {scale!r} - m[i] * {scale!r})")
    L.dedent()
    L("T.reduce_sum(acc_s, sm, dim=1)")
    L(f"for i in T.Parallel({bm}):")
    L.indent()
    L("logsum[i] = logsum[i] * sc[i] + sm[i]")
    L.dedent()
    L("T.copy(acc_s, acc_s_cast)")
    L(f"for i, j in T.Parallel({bm}, {D}):")
    L.indent()
    L("acc_o[i, j] *= sc[i]")
    L.dedent()
    L(f"T.copy(V[bz, k * {bn}:(k + 1) * {bn}, hk, :], V_s)")
    L("T.gemm(acc_s_cast, V_s, acc_o, policy=T.GemmWarpPolicy.FullRow)")
    L.dedent()
    L(f"for i, j in T.Parallel({bm}, {D}):")
    L.indent()
    L("acc_o[i, j] /= logsum[i]")
    L.dedent()
    L(f"T.copy(acc_o, O[bz, bx * {bm}:(bx + 1) * {bm}, by, :])")
    L.dedent()


BODIES = {"ew": _body_ew, "reduce": _body_reduce, "gemm": _body_gemm, "cumsum": _body_cumsum, "attn": _body_attn,
          "atomic": _body_atomic, "transpose": _body_transpose}
