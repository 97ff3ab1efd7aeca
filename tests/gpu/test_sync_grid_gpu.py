"""T.sync_grid() on the GPU: a two-phase kernel launched cooperatively against a torch reference
(phase 2 of every block reads what other blocks wrote in phase 1, many times over, so a missing
or leaky barrier shows), the clear error for a grid that does not fit on the GPU at once (never a
hang), and upstream's persistent MLA decode example as written.

    pytest -m gpu tests/gpu/test_sync_grid_gpu.py
"""
import os
import runpy
import sys

import pytest

torch = pytest.importorskip("torch")
import tilec  # noqa: E402
import tilec.language as T  # noqa: E402
from tilec.kernel import KernelLaunchError  # noqa: E402

pytestmark = pytest.mark.gpu

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def _rounds(blocks, threads=256, rounds=8):
    """`rounds` grid barriers: in round r every block adds the value its mirrored block wrote in
    round r - 1; the result after all rounds is known in closed form from the input."""
    n = blocks * threads

    @T.prim_func
    def rounds_kernel(X: T.Tensor((rounds + 1, n), "float32")):
        with T.Kernel(blocks, threads=threads) as bx:
            for r in T.serial(rounds):
                T.sync_grid()
                for i in T.Parallel(threads):
                    X[r + 1, bx * threads + i] = X[r, (blocks - 1 - bx) * threads + i] + X[r, bx * threads + i]

    return rounds_kernel


def _rounds_ref(x0, blocks, threads, rounds):
    x = [x0]
    for _ in range(rounds):
        prev = x[-1].view(blocks, threads)
        x.append((prev.flip(0) + prev).reshape(-1))
    return torch.stack(x)


def _sms():
    return torch.cuda.get_device_properties(0).multi_processor_count


@pytest.mark.parametrize("per_sm", [1, 2])
def test_rounds_of_grid_barriers_match_the_reference(per_sm):
    blocks, threads, rounds = _sms() * per_sm, 256, 8
    kernel = tilec.compile(_rounds(blocks, threads, rounds), target="auto")
    assert "\ncooperative 1\n" in kernel.launch_plan_text
    x = torch.zeros((rounds + 1, blocks * threads), device="cuda", dtype=torch.float32)
    x[0] = torch.randn(blocks * threads, device="cuda")
    expected = _rounds_ref(x[0].clone(), blocks, threads, rounds)
    for _ in range(3):  # the driver's barrier workspace is reused by every launch
        x[1:] = float("nan")
        kernel(x)
        torch.cuda.synchronize()
        torch.testing.assert_close(x, expected, rtol=1e-5, atol=1e-5)


def test_cpu_target_agrees():
    blocks, threads, rounds = 6, 64, 4
    x = torch.zeros((rounds + 1, blocks * threads), dtype=torch.float32)
    x[0] = torch.randn(blocks * threads)
    expected = _rounds_ref(x[0].clone(), blocks, threads, rounds)
    tilec.compile(_rounds(blocks, threads, rounds), target="cpu")(x)
    torch.testing.assert_close(x, expected)


def test_a_grid_too_large_to_be_resident_is_a_clear_error():
    blocks = _sms() * 64  # more than 32 resident blocks per SM: never co-resident
    kernel = tilec.compile(_rounds(blocks, 256, 1), target="auto")
    x = torch.zeros((2, blocks * 256), device="cuda", dtype=torch.float32)
    with pytest.raises(KernelLaunchError) as e:  # raised before the launch: nothing is queued
        kernel(x)
    msg = str(e.value)
    assert "rounds_kernel" in msg and f"has {blocks} blocks" in msg and "holds at most" in msg, msg
    assert "loop over the work in waves" in msg, msg
    torch.cuda.synchronize()  # nothing was launched, nothing hangs


def test_upstream_cooperative_test_barrier_inside_parallel():
    """TileLang's own grid-barrier test (its second T.sync_grid() inside a T.Parallel body, which
    tilec splits the loop at): every element ends as n - 1."""
    sys.path.insert(0, os.path.join(ROOT, "tests", "python"))
    from test_sync_grid import _upstream_cooperative_test

    kernel = tilec.compile(_upstream_cooperative_test(), target="auto")
    a = torch.rand(1024, device="cuda")
    kernel(a)
    torch.cuda.synchronize()
    torch.testing.assert_close(a, torch.full_like(a, 1023.0), rtol=0, atol=0)


UPSTREAM = os.path.normpath(os.path.join(os.environ.get("TILEC_UPSTREAM_DIR") or os.path.join(ROOT, "..", "shared",
                                                                                            "upstream"),
                                         "tilelang", "examples", "deepseek_mla", "example_mla_decode_persistent.py"))


@pytest.mark.skipif(not os.path.exists(UPSTREAM), reason="no upstream snapshot (../shared/upstream or TILEC_UPSTREAM_DIR)")
def test_upstream_persistent_mla_decode_runs_as_written():
    import tilec.compat  # noqa: F401

    saved = sys.argv
    sys.argv = [UPSTREAM]
    try:
        runpy.run_path(UPSTREAM, run_name="__main__")  # its own assert_allclose against torch
    finally:
        sys.argv = saved
