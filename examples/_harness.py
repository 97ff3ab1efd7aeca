"""Shared driver for the examples: run-and-check on a GPU, compile-only without one.

Every example defines `build(**sizes)` returning a prim_func (or jit object) and a
`reference(*inputs)` in torch, and calls `main(...)` from this module. With a GPU, the
example runs at several sizes (including sizes that are not multiples of the block) on
fresh random inputs, with the outputs poisoned before the call, and compares against the
reference computed in float64. Without a GPU it compiles for sm_80 and sm_90a with NVRTC
and prints what it made.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

import tilec  # noqa: E402

COMPILE_TARGETS = ("sm_80", "sm_90a")

# Relative-error bounds by output dtype (vs a float64 reference).
TOLERANCE = {
    "float32": (1e-4, 1e-4),
    "float16": (1e-2, 1e-2),
    "bfloat16": (2e-2, 2e-2),
}


def cases(items):
    """All test cases, or only the first when TILEC_EXAMPLE_QUICK=1 (used under
    compute-sanitizer, where every launch is slow), or the ones numbered in TILEC_EXAMPLE_CASES
    ("5,8": the sixth and ninth). Example-only settings, not tilec knobs."""
    items = list(items)
    picked = os.environ.get("TILEC_EXAMPLE_CASES", "")
    if picked:
        return [items[int(i)] for i in picked.split(",")]
    return items[:1] if os.environ.get("TILEC_EXAMPLE_QUICK") == "1" else items


def run_cases(case_list, run_case):
    """Runs `run_case(*case)` for each case (all of them, or the first under TILEC_EXAMPLE_QUICK=1),
    prints PASS or FAIL (with the error) per case, and exits with status 1 when any failed."""
    failed = 0
    for case in cases(case_list):
        try:
            run_case(*case)
            print(f"PASS {case}")
        except Exception as e:  # report every case, then fail the run
            failed += 1
            print(f"FAIL {case}: {type(e).__name__}: {e}")
    print(f"{len(cases(case_list)) - failed} passed, {failed} failed")
    if failed:
        sys.exit(1)


def have_gpu() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def have_hopper() -> bool:
    """A GPU of compute capability 9.0 (the sm_90a examples run only there)."""
    if not have_gpu():
        return False
    import torch

    return torch.cuda.get_device_capability() == (9, 0)


def compile_only(func, out_idx, targets=COMPILE_TARGETS, show_source=False):
    """Compiles `func` for each target; returns {target: kernel}."""
    kernels = {}
    for target in targets:
        t0 = time.perf_counter()
        kernel = tilec.compile(func, out_idx=out_idx, target=target)
        dt = time.perf_counter() - t0
        info = getattr(kernel, "ptxas_info", {})
        info = info() if callable(info) else info
        info = {k: v for k, v in dict(info).items() if k != "log"}
        print(f"  compiled for {target} in {dt * 1e3:.0f} ms  {info}")
        if show_source:
            print(kernel.get_kernel_source())
        kernels[target] = kernel
    return kernels


def poisoned(shape, dtype):
    """An output buffer filled with NaN (or a sentinel for integers) so a kernel that
    skips an element cannot pass by accident."""
    import torch

    if dtype.is_floating_point:
        return torch.full(shape, float("nan"), dtype=dtype, device="cuda")
    return torch.full(shape, -12345, dtype=dtype, device="cuda")


def check(kernel, inputs, outputs, reference, out_dtype, label):
    """Runs `kernel(*inputs, *outputs)` (outputs poisoned by the caller) and compares the
    outputs with `reference(*inputs)` computed in float64."""
    import torch

    kernel(*inputs, *outputs)
    torch.cuda.synchronize()
    outs = list(outputs)
    refs = reference(*[x.double() if x.is_floating_point() else x for x in inputs])
    refs = refs if isinstance(refs, (list, tuple)) else [refs]
    rtol, atol = TOLERANCE.get(out_dtype, (1e-2, 1e-2))
    for o, r in zip(outs, refs):
        if not torch.isfinite(o).all():
            raise AssertionError(f"{label}: output has non-finite values (poison not overwritten?)")
        torch.testing.assert_close(o.double(), r.double(), rtol=rtol, atol=atol)
    print(f"  {label}: ok")


def hopper_main(what, build_for_compile, out_idx, case_list, run_case):
    """main() of an sm_90a-only example: runs `run_case(*case)` for each case on a Hopper GPU,
    else (or with --compile-only) compiles `build_for_compile()` for sm_90a and prints it."""
    args = parse_args()
    if args.compile_only or not have_hopper():
        print(f"no Hopper GPU (or --compile-only): compiling the {what} for sm_90a")
        compile_only(build_for_compile(), out_idx=out_idx, targets=("sm_90a",), show_source=args.show_source)
        return
    for case in cases(case_list):
        run_case(*case)


def parse_args(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--compile-only", action="store_true", help="compile for sm_80 and sm_90a, do not run")
    p.add_argument("--show-source", action="store_true")
    return p.parse_args(argv)
