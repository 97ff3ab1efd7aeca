"""Saves or checks the generated CUDA source of every example and peer program, byte for byte.

    python bench/snapshot_sources.py save  DIR     # write DIR/<program>.<target>.cu
    python bench/snapshot_sources.py check DIR     # compile again, compare with DIR, exit 1 on a difference
    python bench/snapshot_sources.py check DIR --only gemm   # programs whose name contains 'gemm'

For compiler work that must not change the generated code (speed-ups of the passes, refactors):
save before the change, check after every step. The programs are the compile-only paths of
examples/*.py (each example's main() with --compile-only, so the list follows the examples), the
GEMM examples' 128x256 tile, and the peer programs of bench/peer_gemm.py and bench/peer_attention.py,
for sm_80 and sm_90a. Caches are off (TILEC_DISABLE_CACHE=1): every program goes through the passes.
Needs NVRTC (no GPU).
"""
from __future__ import annotations

import argparse
import difflib
import glob
import importlib
import os
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
os.environ["TILEC_DISABLE_CACHE"] = "1"
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "examples"))
sys.path.insert(0, os.path.join(ROOT, "bench"))

TARGETS = ("sm_80", "sm_90a")


def example_programs():
    """(name, build, out_idx, targets) of every example's --compile-only path."""
    import _harness

    progs = []
    for path in sorted(glob.glob(os.path.join(ROOT, "examples", "*.py"))):
        mod_name = os.path.splitext(os.path.basename(path))[0]
        if mod_name.startswith("_"):
            continue
        mod = importlib.import_module(mod_name)
        if not hasattr(mod, "main"):
            continue
        calls = []

        def record(func, out_idx, targets=TARGETS, show_source=False, _calls=calls):
            _calls.append((func, out_idx, tuple(targets)))
            return {}

        saved = (_harness.compile_only, sys.argv)
        _harness.compile_only, sys.argv = record, [path, "--compile-only"]
        try:
            mod.main()
        finally:
            _harness.compile_only, sys.argv = saved
        for i, (func, out_idx, targets) in enumerate(calls):
            progs.append((f"{mod_name}.{i}", func, out_idx, targets))
    return progs


def extra_programs():
    """The tiles the compile-speed targets are about, and the peer programs."""
    import tilec.compat  # noqa: F401  (tilelang -> tilec, for the peer programs)
    import tilec.language as T
    import gemm
    import peer_attention
    import peer_gemm
    from tilec.ops.attention_kernels import flash_attention

    progs = [("gemm_128x256x32", gemm.matmul(4096, 4096, 4096, 128, 256, 32, dtype="bfloat16", threads=256), [2],
              TARGETS)]
    for name, (bm, bn, bk, st, th) in peer_gemm.CONFIGS.items():
        progs.append((f"peer_gemm.{name}", peer_gemm.program(T, 8192, 8192, 8192, bm, bn, bk, st, th, "bfloat16"),
                      [2], TARGETS))
    progs.append(("peer_gemm.team_cluster2", peer_gemm.program(T, 8192, 8192, 8192, 128, 256, 64, 3, 256, "bfloat16",
                                                               swizzle=False, cluster=(2, 1, 1)), [2], ("sm_90a",)))
    for dim in (64, 128):
        for causal in (False, True):
            progs.append((f"peer_attention.d{dim}{'_causal' if causal else ''}",
                          peer_attention.program(T, 4, 2048 // dim, 4096, dim, causal, "bfloat16"), [3], TARGETS))
    progs.append(("flash_attention_4_32_4096_128", flash_attention(4, 32, 4096, 128), [3], TARGETS))
    return progs


def sources(only):
    import tilec

    for name, func, out_idx, targets in example_programs() + extra_programs():
        if only and only not in name:
            continue
        for target in targets:
            try:
                text = tilec.compile(func, out_idx=out_idx, target=target).get_kernel_source()
            except tilec.errors.CompileError as e:  # an expected error (e.g. too much shared memory) is kept too
                text = "compile error:\n" + str(e)
            yield f"{name}.{target}", text


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("mode", choices=["save", "check"])
    p.add_argument("dir")
    p.add_argument("--only", default="", help="programs whose name contains this")
    args = p.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    differ = same = 0
    for key, src in sources(args.only):
        path = os.path.join(args.dir, key + ".cu")
        if args.mode == "save":
            with open(path, "w") as f:
                f.write(src)
            print("saved", key, flush=True)
            continue
        if not os.path.exists(path):
            print("MISSING", key)
            differ += 1
            continue
        with open(path) as f:
            ref = f.read()
        if ref == src:
            same += 1
            print("same   ", key, flush=True)
        else:
            differ += 1
            print("DIFFERS", key)
            sys.stdout.writelines(list(difflib.unified_diff(ref.splitlines(True), src.splitlines(True), "saved",
                                                            "now", n=1))[:40])
    if args.mode == "check":
        print(f"{same} identical, {differ} different")
        sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
