"""Random valid tile programs, as specs: plain JSON-able dicts that `render.py` prints as T
source and `reference.py` evaluates with numpy.

A spec names a family and its knobs; the families cover the tile surface issue 12 asks for:
  ew      chained T.Parallel loops of element math over a 2-D tile (inputs through global
          indexing, T.copy to a fragment, or shared -> fragment; output direct, via shared or
          global stores); a second input W for binary ops
  reduce  T.reduce_sum/max/min along either axis, single tile (+ a broadcast-back second output)
          or a T.Pipelined / T.serial loop over tiles (clear=False or combine in T.Parallel)
  gemm    T.gemm with transposes, A from shared or from a fragment, T.Pipelined 1-4 stages or
          T.serial, T.clear or clear_accum=(k == 0), element epilogue, a row reduction of the
          accumulator broadcast back (C - rowmax / rowsum, as attention does), output direct or via shared
  cumsum  T.cumsum along either axis, forward or reverse, in shared or fragment, in place or not
  atomic  T.atomic_add: row sums from split blocks (region or element form) or a 2-D tile
          summed over a batch axis (region form)
  transpose  a tile written to shared memory by one T.Parallel loop (element ops on the way)
          and read transposed by another (Y = ops(X)^T): the shared layout layout inference picks
          for such a buffer (bank-aware: row-major, chunk or word XOR swizzles), and the
          barrier-free element-wise store loop. Drawn from its own random stream (about 1 in
          12 seeds), so the other seeds keep the programs they always had.
  attn    FlashAttention forward (the examples' program): Q K^T, a masked online softmax in base
          2, P V from registers, over ragged query and key lengths, MHA / GQA / MQA, causal or not, head dims
          32-128, 1-3 stages, 128 or 256 threads, with the warp-specialization variants'
          configs (producer head copies, uneven persistence, rotation, ping-pong) switched at
          random. Its own stream too (about 1 in 10 seeds, after transpose's).
Shapes and tile sizes are drawn independently, so tiles are often ragged (partial) at the edges.
Element ops are continuous functions (so float rounding differences stay small differences).
"""

from __future__ import annotations

import random

FLOATS = ["float16", "bfloat16", "float32"]
COMMON_THREADS = [128, 128, 256]
ODD_THREADS = [32, 64, 96, 160, 192, 224, 384, 512, 48]

# op name -> allowed for ints?
ELEMENT_OPS = {"affine": True, "exp": False, "max": True, "min": True, "reflect": True, "castrt": True,
               "add_w": True, "mul_w": True, "abs": True, "sqrt1": False}


def _threads(rng: random.Random, allow_odd: bool = True) -> int:
    if allow_odd and rng.random() < 0.25:
        return rng.choice(ODD_THREADS)
    return rng.choice(COMMON_THREADS)


def _extent(rng: random.Random, lo: int, hi: int) -> int:
    """A size: often a power of two or a multiple of 16, often neither (ragged)."""
    r = rng.random()
    if r < 0.3:
        return rng.choice([v for v in (16, 32, 64, 128, 256) if lo <= v <= hi] or [lo])
    if r < 0.5:
        return rng.choice([v for v in range(lo, hi + 1) if v % 16 == 0] or [lo])
    return rng.randint(lo, hi)


def random_op(rng: random.Random, is_int: bool, have_w: bool) -> list:
    names = [n for n, ok in ELEMENT_OPS.items() if ok or not is_int]
    if not have_w:
        names = [n for n in names if n not in ("add_w", "mul_w")]
    name = rng.choice(names)
    if name == "affine":
        if is_int:
            return [name, rng.choice([1, 2, 3, -1]), rng.randint(-5, 5)]
        return [name, rng.choice([0.5, 0.75, -1.5, 2.0, 1.25]), rng.choice([0.0, 0.5, -1.0, 0.25])]
    if name in ("max", "min", "reflect"):
        return [name, rng.randint(-3, 3) if is_int else rng.choice([-1.0, -0.5, 0.0, 0.5, 1.0])]
    if name == "castrt":
        return [name, "float32" if is_int else rng.choice(["float16", "bfloat16"])]
    return [name]


def _ops(rng: random.Random, is_int: bool, have_w: bool, lo: int, hi: int) -> list:
    ops, multiplicative = [], 0
    for _ in range(rng.randint(lo, hi)):
        op = random_op(rng, is_int, have_w)
        if is_int and op[0] in ("mul_w", "affine"):
            multiplicative += 1
            if multiplicative > 2:  # keep int32 values far from wrapping
                continue
        ops.append(op)
    return ops


def _loops(rng: random.Random, is_int: bool, have_w: bool) -> list:
    """Element ops grouped into 1-3 chained T.Parallel loops (some loops with several statements)."""
    return [_ops(rng, is_int, have_w, 1, 3) for _ in range(rng.randint(1, 3))]


def gen_ew(rng: random.Random) -> dict:
    is_int = rng.random() < 0.15
    dtype = "int32" if is_int else rng.choice(FLOATS)
    cdt = dtype if is_int or rng.random() < 0.4 else "float32"
    odt = dtype if is_int or rng.random() < 0.7 else rng.choice(FLOATS)
    use_w = rng.random() < 0.5
    return {"family": "ew", "dtype": dtype, "cdt": cdt, "odt": odt,
            "M": _extent(rng, 1, 160), "N": _extent(rng, 1, 200),
            "bm": rng.choice([1, 2, 4, 8, 16, 32, 64, 3, 6, 24]), "bn": rng.choice([16, 32, 64, 128, 8, 24, 48, 96]),
            "threads": _threads(rng), "stage_in": rng.choice(["global", "fragment", "shared"]),
            "stage_out": rng.choice(["direct", "shared", "global"]), "use_w": use_w,
            "dyn": rng.random() < 0.2, "loops": _loops(rng, is_int, use_w)}


def gen_reduce(rng: random.Random) -> dict:
    is_int = rng.random() < 0.15
    dtype = "int32" if is_int else rng.choice(FLOATS)
    dim = rng.choice([0, 1])
    single = rng.random() < 0.5
    M, N = _extent(rng, 1, 128), _extent(rng, 1, 160)
    red = M if dim == 0 else N  # the reduced extent
    keep_block = rng.choice([1, 2, 4, 8, 16, 32, 3, 12])
    if single:
        red_block = 1 << max(0, (red - 1).bit_length())  # one tile covers the axis (padded)
        red_block = max(red_block, 4)
    else:
        red_block = rng.choice([8, 16, 32, 64, 24, 48])
    bm, bn = (red_block, keep_block) if dim == 0 else (keep_block, red_block)
    return {"family": "reduce", "dtype": dtype, "cdt": "int32" if is_int else "float32",
            "odt": "int32" if is_int else rng.choice(["float32", dtype]), "M": M, "N": N, "bm": bm, "bn": bn,
            "dim": dim, "op": rng.choice(["sum", "max", "min"]), "threads": _threads(rng),
            "single": single, "stage_in": rng.choice(["fragment", "shared"]),
            "loop": rng.choice(["pipelined", "serial"]), "stages": rng.randint(1, 4),
            "combine": rng.choice(["clear_false", "parallel"]), "broadcast": single and rng.random() < 0.5,
            "pre": _ops(rng, is_int, False, 0, 2), "post": _ops(rng, is_int, False, 0, 2),
            "dyn": rng.random() < 0.2}


def gen_gemm(rng: random.Random) -> dict:
    dtype = rng.choice(["float16", "float16", "bfloat16", "float32"])
    threads = rng.choice([128, 128, 256, 64, 32])
    warps = threads // 32
    a_frag = dtype != "float32" and rng.random() < 0.3
    trans_A = (not a_frag) and rng.random() < 0.3
    bm = rng.choice([16, 32, 64, 128])
    if a_frag:
        bm = max(bm, 16 * warps)
    bn = rng.choice([16, 32, 64, 128, 48, 96])
    bk = rng.choice([16, 32, 64, 48] if dtype != "float32" else [16, 32])
    limit = 64 if dtype == "float32" else 96
    return {"family": "gemm", "dtype": dtype, "odt": rng.choice([dtype, "float32"]),
            "M": _extent(rng, 1, 160), "N": _extent(rng, 1, 160), "K": _extent(rng, 1, limit * 2),
            "bm": bm, "bn": bn, "bk": bk, "threads": threads, "trans_A": trans_A,
            "trans_B": rng.random() < 0.4, "a_frag": a_frag, "loop": rng.choice(["pipelined"] * 3 + ["serial"]),
            "stages": rng.randint(1, 4), "clear": rng.choice(["clear", "clear_accum"]),
            "stage_out": rng.choice(["direct", "shared"]), "epilogue": _ops(rng, False, False, 0, 2),
            "dyn": rng.random() < 0.15, "row_reduce": rng.choice(["", "", "max", "sum"])}


def gen_cumsum(rng: random.Random) -> dict:
    is_int = rng.random() < 0.2
    dtype = "int32" if is_int else rng.choice(FLOATS)
    dim = rng.choice([0, 1])
    M, N = _extent(rng, 1, 96), _extent(rng, 1, 128)
    scan = M if dim == 0 else N
    scan_block = max(4, 1 << max(0, (scan - 1).bit_length()))
    keep_block = rng.choice([1, 2, 4, 8, 16])
    bm, bn = (scan_block, keep_block) if dim == 0 else (keep_block, scan_block)
    return {"family": "cumsum", "dtype": dtype, "cdt": "int32" if is_int else "float32", "odt": dtype,
            "M": M, "N": N, "bm": bm, "bn": bn, "dim": dim, "reverse": rng.random() < 0.4,
            "scope": rng.choice(["shared", "fragment"]), "inplace": rng.random() < 0.6,
            "threads": _threads(rng), "pre": _ops(rng, is_int, False, 0, 1), "dyn": rng.random() < 0.2}


def gen_atomic(rng: random.Random) -> dict:
    dtype = rng.choice(FLOATS)
    kind = rng.choice(["rowsum", "batch2d"])
    return {"family": "atomic", "dtype": dtype, "kind": kind, "form": rng.choice(["region", "element"]),
            "B": rng.randint(1, 4), "M": _extent(rng, 1, 128), "N": _extent(rng, 1, 160),
            "bm": rng.choice([1, 4, 8, 16, 32]), "bn": rng.choice([16, 32, 64]),
            "threads": _threads(rng), "pre": _ops(rng, False, False, 0, 2), "dyn": rng.random() < 0.2}


def gen_transpose(rng: random.Random) -> dict:
    is_int = rng.random() < 0.1
    dtype = "int32" if is_int else rng.choice(FLOATS)
    return {"family": "transpose", "dtype": dtype, "M": _extent(rng, 1, 200), "N": _extent(rng, 1, 200),
            "bm": rng.choice([8, 16, 32, 64, 24, 48]), "bn": rng.choice([8, 16, 32, 64, 128, 24]),
            "threads": _threads(rng), "pre": _ops(rng, is_int, False, 0, 2), "dyn": rng.random() < 0.2}


# attn: the warp-specialization variants a program may switch (name=value; see check.pass_configs)
ATTN_CONFIGS = ["tilec.producer_head_copies=false", "tilec.persistent_uneven=false", "tilec.persistent=false",
                "tilec.head_copies_after_first_step=true", "tilec.intra_wg_overlap=false", "tilec.pingpong=false",
                "tilec.defer_gemm_waits=true", "tilec.defer_bulk_read_waits=false"]


def gen_attn(rng: random.Random) -> dict:
    dim = rng.choice([64, 64, 128, 128, 32])
    threads = rng.choice([128, 256, 256])
    bm = 128 if threads == 256 else rng.choice([64, 128])
    # fragments per thread (S, O, P as 32-bit words) within ~200 registers
    bns = [bn for bn in (32, 64, 128) if (bm * bn * 2.5 + bm * dim) / threads <= 200]
    if not bns:  # 128 threads, 128 rows of 128 dims: half the rows
        bm, bns = 64, [32, 64, 128]
    heads = rng.randint(1, 4)
    return {"family": "attn", "dtype": rng.choice(["float16", "bfloat16"]), "B": rng.randint(1, 2),
            "H": heads, "HKV": rng.choice([h for h in range(1, heads + 1) if heads % h == 0]),  # GQA / MQA
            "M": _extent(rng, 1, 300), "N": _extent(rng, 1, 300), "D": dim,
            "bm": bm, "bn": rng.choice(bns), "threads": threads, "stages": rng.choice([1, 2, 2, 3]),
            "causal": rng.random() < 0.5,
            "ws_configs": sorted(rng.sample(ATTN_CONFIGS, rng.randint(0, 2))) if rng.random() < 0.5 else []}


GENERATORS = {"ew": gen_ew, "reduce": gen_reduce, "gemm": gen_gemm, "cumsum": gen_cumsum, "atomic": gen_atomic,
              "transpose": gen_transpose, "attn": gen_attn}
WEIGHTS = {"ew": 3, "reduce": 3, "gemm": 3, "cumsum": 1.5, "atomic": 1.5}


# pass configs that switch a CUDA path off (the GPU targets get them; the CPU target ignores them)
PASS_CONFIGS = ["tl.disable_warp_specialized", "tl.disable_wgmma", "tl.disable_tma_lower", "tl.disable_vectorize",
                "tl.disable_gemm_overlap", "tl.disable_shared_memory_reuse"]


def generate(seed: int, families=None) -> dict:
    """The spec of program `seed` (deterministic)."""
    rng = random.Random(seed)
    names = [f for f in GENERATORS if not families or f in families]
    if "transpose" in names and (names == ["transpose"] or random.Random(seed * 31 + 5).random() < 1 / 12):
        spec = gen_transpose(random.Random(seed * 131 + 3))
    elif "attn" in names and (names == ["attn"] or random.Random(seed * 37 + 11).random() < 1 / 10):
        spec = gen_attn(random.Random(seed * 151 + 7))
    else:
        names = [f for f in names if f not in ("transpose", "attn")]
        family = rng.choices(names, weights=[WEIGHTS[f] for f in names])[0]
        spec = GENERATORS[family](rng)
    spec["seed"] = seed
    configs = random.Random(seed * 7919 + 1)  # its own stream: the programs above stay as they were
    spec["configs"] = sorted(configs.sample(PASS_CONFIGS, configs.randint(1, 2))) if configs.random() < 0.3 else []
    # Half the serial k loops as `while k < n:` over a T.alloc_var counter (its own stream too).
    if spec.get("loop") == "serial" and not spec.get("single") and random.Random(seed * 104729 + 17).random() < 0.5:
        spec["while"] = True
    return spec


def features(spec: dict) -> list:
    """Feature tags of a spec, for the run's mix table."""
    f = spec["family"]
    tags = [f, "dtype:" + spec["dtype"]]
    if spec.get("threads") not in (128, 256):
        tags.append("odd_threads")
    extents = [("M", "bm"), ("N", "bn")] + ([("K", "bk")] if f == "gemm" else [])
    if any(spec[e] % spec[b] for e, b in extents):
        tags.append("ragged")
    if any(spec[b] & (spec[b] - 1) for _, b in extents):
        tags.append("non_pow2_tile")
    if spec.get("dyn"):
        tags.append("dynamic_shape")
    if spec.get("while"):
        tags.append("while_loop")
    tags += ["config:" + c.replace("tl.disable_", "no_") for c in spec.get("configs", [])]
    if f == "ew":
        tags += ["parallel_chain", "stage_in:" + spec["stage_in"], "stage_out:" + spec["stage_out"]]
    if f == "reduce":
        tags += [f"reduce_{spec['op']}_dim{spec['dim']}", "single_tile" if spec["single"] else
                 spec["loop"] + (f"_s{spec['stages']}" if spec["loop"] == "pipelined" else "")]
        if spec.get("broadcast"):
            tags.append("broadcast")
    if f == "gemm":
        tags += [spec["loop"] + (f"_s{spec['stages']}" if spec["loop"] == "pipelined" else ""),
                 "A_fragment" if spec["a_frag"] else "A_shared"]
        tags += [t for t, on in (("trans_A", spec["trans_A"]), ("trans_B", spec["trans_B"])) if on]
        if spec.get("row_reduce"):
            tags.append("gemm_then_reduce_" + spec["row_reduce"])
    if f == "cumsum":
        tags += [f"cumsum_dim{spec['dim']}", "reverse" if spec["reverse"] else "forward", spec["scope"]]
    if f == "atomic":
        tags += ["atomic_" + spec["kind"], "atomic_" + spec["form"]]
    if f == "transpose":
        tags.append("shared_transpose")
    if f == "attn":
        tags += ["attn_causal" if spec["causal"] else "attn_full", f"attn_d{spec['D']}", f"attn_s{spec['stages']}"]
        if spec.get("HKV", spec["H"]) != spec["H"]:
            tags.append("attn_gqa")
        tags += ["config:" + c.split("=")[0].replace("tilec.", "") for c in spec["ws_configs"]]
    ops = [op[0] for loop in spec.get("loops", []) for op in loop]
    ops += [op[0] for k in ("pre", "post", "epilogue") for op in spec.get(k, [])]
    tags += sorted({"op:" + o for o in ops})
    return tags
