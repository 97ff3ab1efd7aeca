"""Shrinking a failing spec while it still fails the same way, and keeping it as a test.

Greedy: try the simplifications of the current spec in order (drop element ops and loops, turn
features off, fewer stages, smaller shapes and tiles); take the first that still fails with the
same kind (status and stage, e.g. fail:cpu_vs_numpy); repeat until none does or the budget is
spent. Each try runs in a worker process, so crashes and hangs shrink too.
"""

from __future__ import annotations

import copy
import json
import os
import time

from .render import render
from .worker import ROOT

SIMPLER = {  # key -> the simple value
    "use_w": False, "broadcast": False, "dyn": False, "a_frag": False, "trans_A": False, "trans_B": False,
    "reverse": False, "inplace": True, "stage_in": "fragment", "stage_out": "direct", "loop": "serial",
    "stages": 1, "clear": "clear", "threads": 128, "combine": "clear_false", "form": "region", "op": "sum",
    "single": True, "configs": [], "ws_configs": [], "causal": False,
}


def valid(s: dict) -> bool:
    f = s["family"]
    if min(s["M"], s["N"], s.get("K", 1), s.get("B", 1)) < 1:
        return False
    if f in ("reduce", "cumsum"):
        dim = s["dim"]
        red_block, red = (s["bm"], s["M"]) if dim == 0 else (s["bn"], s["N"])
        if (f == "cumsum" or s["single"]) and red_block < red:
            return False
        if f == "reduce" and s["broadcast"] and not s["single"]:
            return False
    if f == "gemm":
        if min(s["bm"], s["bn"], s["bk"]) < 16:
            return False
        if s["a_frag"] and (s["trans_A"] or s["dtype"] == "float32"):
            return False
    if f == "attn" and (s["bm"] < 16 * (s["threads"] // 32) or s["H"] % s.get("HKV", s["H"])):
        return False  # FullRow: 16 rows per warp; whole groups of query heads
    return min(s.get("bm", 1), s.get("bn", 1)) >= 1


def _without_w(s: dict) -> dict:
    s["loops"] = [[op for op in ops if op[0] not in ("add_w", "mul_w")] for ops in s["loops"]]
    return s


def candidates(spec: dict):
    """Simpler variants of `spec`, most aggressive first."""
    if spec["family"] == "ew":
        for i in range(len(spec["loops"])):
            s = copy.deepcopy(spec)
            del s["loops"][i]
            yield s
        for i, ops in enumerate(spec["loops"]):
            for j in range(len(ops)):
                s = copy.deepcopy(spec)
                del s["loops"][i][j]
                yield s
    for key in ("pre", "post", "epilogue"):
        for j in range(len(spec.get(key, []))):
            s = copy.deepcopy(spec)
            del s[key][j]
            yield s
    for key, simple in SIMPLER.items():
        if key in spec and spec[key] != simple:
            s = copy.deepcopy(spec)
            s[key] = simple
            yield _without_w(s) if key == "use_w" else s
    if spec.get("odt") not in (None, spec["dtype"]):
        yield dict(copy.deepcopy(spec), odt=spec["dtype"])
    for key in ("B", "H", "HKV", "K", "M", "N"):
        v = spec.get(key)
        if not v or v == 1:
            continue
        for smaller in sorted({1, v // 2, v - 1, spec.get("b" + key.lower(), v)} - {v}):
            if 1 <= smaller < v:
                yield dict(copy.deepcopy(spec), **{key: smaller})
    for key in ("bm", "bn", "bk"):
        v = spec.get(key)
        if v and v > 1:
            yield dict(copy.deepcopy(spec), **{key: v // 2})


def minimize(spec: dict, still_fails, max_tries: int = 80, max_seconds: float = 300.0) -> dict:
    """The smallest spec found for which still_fails(spec) holds."""
    best, tries, t0 = spec, 0, time.time()
    progress = True
    while progress and tries < max_tries and time.time() - t0 < max_seconds:
        progress = False
        for cand in candidates(best):
            if not valid(cand) or cand == best:
                continue
            tries += 1
            if still_fails(cand):
                best, progress = cand, True
                break
            if tries >= max_tries or time.time() - t0 > max_seconds:
                break
    return best


TEMPLATE = '''"""Fuzzer regression ({family}, seed {seed}): {kind}.

{message}

Found by `python -m tools.fuzz --mode {mode} --seed {seed} --count 1` and minimized; SOURCE is the
program as the fuzzer renders SPEC. Run: PYTHONPATH=python python -m pytest {path}
"""
import json

import pytest

from tools.fuzz.regression import check_regression

SPEC = json.loads({spec_json!r})

SOURCE = """\\
{source}"""


{marker}def test_fuzz_{family}_{seed}():
    check_regression(SPEC, SOURCE, mode="{mode}")
'''


def write_regression(spec: dict, outcome, mode: str, directory: str, xfail_reason: str = "") -> str:
    """Writes the spec as a runnable pytest file; returns its path."""
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, f"test_fuzz_{spec['family']}_{spec['seed']}.py")
    message = "\n".join(outcome.message.strip().splitlines()[:6]).replace('"""', "'''").replace("\\", "/")
    marker = f"@pytest.mark.xfail(strict=True, reason={xfail_reason!r})\n" if xfail_reason else ""
    text = TEMPLATE.format(family=spec["family"], seed=spec["seed"], kind=outcome.kind(), message=message,
                           mode=mode, path=os.path.relpath(path, ROOT), spec_json=json.dumps(spec, sort_keys=True),
                           source=render(spec).replace("\\", "\\\\"), marker=marker)
    with open(path, "w") as fh:
        fh.write(text)
    return path
