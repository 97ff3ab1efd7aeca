"""Inputs and the generator's own numpy reference for a spec, and the comparison.

The reference follows the tile program's meaning, not just the math: a tile read past a
tensor's edge holds zeros (what `legalize_bounds` guarantees on the GPU and the CPU target
models), and element ops apply to those zeros too, so a reduction or a reverse scan over a
ragged tile includes them. Values are float64 (int64 for int32 programs); tolerances cover the
rounding of narrower dtypes.
"""

from __future__ import annotations

import numpy as np

from .render import cdiv, params

# relative tolerance per dtype: generator's numpy vs the CPU target (float64 math, unrounded)
TOL_NUMPY = {"float32": 2e-4, "float16": 1e-2, "bfloat16": 4e-2, "int32": 0}
# GPU vs the CPU target (issue 12): float32 gemms are tf32 on the GPU
TOL_GPU = {"float32": 1e-3, "float16": 1e-2, "bfloat16": 2e-2, "int32": 0}
TOL_GPU_TF32 = 1e-2


def make_inputs(spec: dict, device: str = "cpu") -> list:
    """Every kernel argument (torch tensors): random inputs, NaN-poisoned outputs, zeroed
    accumulators. Seeded by the spec."""
    import torch

    gen = np.random.default_rng(spec["seed"] + 7)
    args = []
    for _, shape, dtype, role in params(spec):
        tdt = getattr(torch, dtype)
        if role == "in":
            if dtype == "int32":
                host = torch.from_numpy(gen.integers(-20, 21, size=shape).astype(np.int32))
            else:
                host = torch.from_numpy(gen.standard_normal(shape)).to(tdt)
        elif role == "acc":
            host = torch.zeros(shape, dtype=tdt)
        else:
            host = torch.full(shape, float("nan"), dtype=tdt) if dtype != "int32" else \
                torch.full(shape, -123456789, dtype=tdt)
        args.append(host.to(device))
    return args


def _round(v, dtype: str):
    import torch

    if dtype == "int32":
        return np.rint(v).astype(np.int64)
    return torch.from_numpy(np.asarray(v, np.float64)).to(getattr(torch, dtype)).double().numpy()


def apply_op(op: list, v, w=None, is_int: bool = False):
    name = op[0]
    if name == "affine":
        r = v * op[1] + op[2]
    elif name == "exp":
        r = np.exp(np.minimum(v, 2.0))
    elif name == "max":
        r = np.maximum(v, op[1])
    elif name == "min":
        r = np.minimum(v, op[1])
    elif name == "reflect":
        r = np.where(v > op[1], v, 2 * op[1] - v)
    elif name == "castrt":
        r = v if is_int else _round(v, op[1])
    elif name == "add_w":
        r = v + w
    elif name == "mul_w":
        r = v * w
    elif name == "abs":
        r = np.abs(v)
    elif name == "sqrt1":
        r = np.sqrt(np.abs(v) + 1.0)
    else:
        raise ValueError(name)
    return r


def _chain(ops: list, v, w=None, is_int=False, mag=None):
    """The ops applied to v, and the magnitude of every value on the way (elementwise): rounding
    in a narrow dtype errs relative to the largest intermediate, not to a small final value."""
    mag = np.abs(v) if mag is None else np.maximum(mag, np.abs(v))
    for op in ops:
        v = apply_op(op, v, w, is_int)
        mag = np.maximum(mag, np.abs(v))
    return v, mag


def _pad(x, shape):
    out = np.zeros(shape, x.dtype)
    out[tuple(slice(0, s) for s in x.shape)] = x
    return out


def reference(spec: dict, inputs: list) -> list:
    """The expected outputs (for the 'out' and 'acc' parameters, in order) as float64/int64
    arrays, each with the magnitude of the values that produced it: [(want, magnitude)]."""
    f = spec["family"]
    is_int = spec["dtype"] == "int32"
    xs = [t.cpu().numpy().astype(np.int64) if is_int else t.cpu().double().numpy() for t in inputs]
    M, N = spec["M"], spec["N"]
    bm, bn = spec.get("bm", 1), spec.get("bn", 1)
    padded = (cdiv(M, bm) * bm, cdiv(N, bn) * bn)
    if f == "ew":
        v, mag = xs[0], None
        w = xs[1] if spec["use_w"] else None
        for ops in spec["loops"]:
            v, mag = _chain(ops, v, w, is_int, mag)
        return [(v, np.abs(v) if mag is None else mag)]
    if f == "reduce":
        x, mx = _chain(spec["pre"], _pad(xs[0], padded), None, is_int)
        red = {"sum": np.sum, "max": np.max, "min": np.min}[spec["op"]]
        dim = spec["dim"]
        r = red(x, axis=dim)
        mr = np.sum(mx, axis=dim) if spec["op"] == "sum" else np.max(mx, axis=dim)
        r, mr = _chain(spec["post"], r, None, is_int, mr)
        keep = N if dim == 0 else M
        outs = [(r[:keep], mr[:keep])]
        if spec["broadcast"]:
            rb, mrb = (r[None, :], mr[None, :]) if dim == 0 else (r[:, None], mr[:, None])
            outs.append(((x - rb)[:M, :N], np.maximum(mx, mrb)[:M, :N]))
        return outs
    if f == "gemm":
        a, b = xs[0], xs[1]
        a = a.T if spec["trans_A"] else a
        b = b.T if spec["trans_B"] else b
        if not spec.get("row_reduce"):
            return [_chain(spec["epilogue"], a @ b, mag=np.abs(a) @ np.abs(b))]
        # the tile's padded columns hold epilogue(0) and take part in the row reduction
        ap, bp = _pad(a, (padded[0], a.shape[1])), _pad(b, (b.shape[0], padded[1]))
        c, mc = _chain(spec["epilogue"], ap @ bp, mag=np.abs(ap) @ np.abs(bp))
        tiles, mtiles = c.reshape(padded[0], padded[1] // bn, bn), mc.reshape(padded[0], padded[1] // bn, bn)
        if spec["row_reduce"] == "max":
            r, mr = tiles.max(axis=2), mtiles.max(axis=2)
        else:
            r, mr = tiles.sum(axis=2), mtiles.sum(axis=2)
        out = (tiles - r[:, :, None]).reshape(padded)[:M, :N]
        return [(out, np.maximum(mtiles, mr[:, :, None]).reshape(padded)[:M, :N])]
    if f == "cumsum":
        x, mx = _chain(spec["pre"], _pad(xs[0], padded), None, is_int)
        dim = spec["dim"]

        def scan(v):
            return np.flip(np.cumsum(np.flip(v, dim), dim), dim) if spec["reverse"] else np.cumsum(v, dim)

        return [(scan(x)[:M, :N], scan(mx)[:M, :N])]
    if f == "transpose":
        x, mx = _chain(spec["pre"], xs[0], None, is_int)
        return [(x.T, mx.T)]
    if f == "attn":
        q, k, v = (np.transpose(x, (0, 2, 1, 3)) for x in xs[:3])  # (B, heads, seq, D)
        group = spec["H"] // spec.get("HKV", spec["H"])  # query head h reads key / value head h // group
        k, v = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
        s = q @ np.swapaxes(k, -1, -2) / np.sqrt(spec["D"])
        if spec["causal"]:  # query i sees keys j <= i
            s = np.where(np.arange(N)[None, :] <= np.arange(M)[:, None], s, -np.inf)
        p = np.exp(s - s.max(axis=-1, keepdims=True))
        p /= p.sum(axis=-1, keepdims=True)
        o, mag = p @ v, p @ np.abs(v)
        return [(np.transpose(o, (0, 2, 1, 3)), np.transpose(mag, (0, 2, 1, 3)))]
    if f == "atomic":
        if spec["kind"] == "rowsum":
            x, mx = _chain(spec["pre"], _pad(xs[0], padded))
            return [(x.sum(axis=1)[:M], mx.sum(axis=1)[:M])]
        x, mx = _chain(spec["pre"], xs[0])
        return [(x.sum(axis=0), mx.sum(axis=0))]
    raise ValueError(f)


def dtypes_used(spec: dict) -> set:
    used = {spec["dtype"], spec.get("cdt", "float32"), spec.get("odt", "float32")}
    for k in ("loops",):
        used |= {op[1] for ops in spec.get(k, []) for op in ops if op[0] == "castrt"}
    used |= {op[1] for k in ("pre", "post", "epilogue") for op in spec.get(k, []) if op[0] == "castrt"}
    return used


def tolerance(spec: dict, against: str) -> float:
    """Relative tolerance: against 'numpy' (the generator's reference) or 'gpu'."""
    table = TOL_NUMPY if against == "numpy" else TOL_GPU
    tol = max(table.get(d, 0) for d in dtypes_used(spec))
    if against == "gpu" and spec["family"] == "gemm" and spec["dtype"] == "float32":
        tol = max(tol, TOL_GPU_TF32)
    return tol


def compare(name: str, got, want, tol: float, magnitude=None):
    """None when `got` matches `want`, else a one-paragraph description of the mismatch.
    Error of an element: |got - want| / (max(|want|, magnitude) + scale), scale = mean |want|
    (>= 1e-2), magnitude = the largest value that went into the element (reference() gives it);
    NaN where `want` is finite means an element the kernel never wrote (outputs are poisoned)."""
    got = np.asarray(got, np.float64)
    want = np.asarray(want, np.float64)
    mag = np.abs(want) if magnitude is None else np.maximum(np.abs(want), np.asarray(magnitude, np.float64))
    if got.shape != want.shape:
        return f"{name}: shape {got.shape}, expected {want.shape}"
    if tol == 0:
        bad = got != want
        err = np.abs(got - want)
    else:
        finite = np.isfinite(want)
        scale = max(float(np.mean(np.abs(want[finite]))) if finite.any() else 1.0, 1e-2)
        with np.errstate(invalid="ignore"):
            err = np.abs(got - want) / (mag + scale)
            same_inf = np.isinf(want) & (got == want)
            err = np.where(same_inf, 0.0, err)
            bad = ~(err <= tol)  # NaN counts as bad
    if not bad.any():
        return None
    idx = np.argwhere(bad)
    first = tuple(int(i) for i in idx[0])
    unwritten = int(np.sum(np.isnan(got) & ~np.isnan(want)))
    return (f"{name}: {int(bad.sum())} of {bad.size} elements differ (tolerance {tol:g}); first at {first}: "
            f"got {float(got[first])!r}, expected {float(want[first])!r}; max error {float(np.nanmax(err)):.3g}"
            + (f"; {unwritten} never written (NaN)" if unwritten else ""))
