"""Host time per call of a cached tiny kernel, broken down, next to torch.add in the same process.

The kernel is examples/elementwise_add.py (symbolic length n, three float32 tensors) on n = 1.
Rows:

- torch.add(a, b, out=c) and torch.add(a, b): the peer (outputs given / allocated);
- kernel(a, b, c) and kernel(a, b) (out_idx=[2]): tilec's full call;
- kernel._dry_run(...): the same call without cuLaunchKernel (validation, output allocation,
  stream lookup), so full - dry run is the driver's launch;
- torch.empty(...) as tilec calls it: the allocation inside the allocating call;
- the six tensor reads tilec makes per tensor (dtype, data_ptr, shape, stride, is_cuda,
  get_device), timed from Python: an upper bound of that part of the dry run;
- where libtilec_torch_shim is in use (outputs allocated and the stream read through libtorch),
  the tilec rows again with it switched off (torch's Python API), in the same rounds.

Calls are timed in batches queued behind a torch.cuda._sleep, so that the host path alone is
measured (see per_call_us). Each row is the median over rounds that alternate between the rows (clocks and the allocator
drift within a run). Prints a table; --json writes it.
"""
import argparse
import contextlib
import json
import os
import statistics
import sys
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, os.path.join(ROOT, "examples"))
sys.path.insert(0, os.path.join(ROOT, "python"))


def per_call_us(fn, calls, batch=400):
    """Host microseconds per call of fn(), with the GPU kept out of the measurement: each batch of
    calls is queued behind a ~20 ms torch.cuda._sleep, so no launch waits for a full queue (a loop
    of tiny kernels otherwise runs at the GPU's kernel throughput, for tilec and torch alike)."""
    import torch

    for _ in range(200):
        fn()
    torch.cuda.synchronize()
    total, done = 0.0, 0
    while done < calls:
        torch.cuda._sleep(40_000_000)
        t0 = time.perf_counter()
        for _ in range(batch):
            fn()
        total += time.perf_counter() - t0
        done += batch
        torch.cuda.synchronize()
    return total / done * 1e6


def measure(rounds: int = 7, calls: int = 4000) -> dict:
    import torch
    import tilec
    from elementwise_add import elementwise_add

    given = tilec.compile(elementwise_add(), target="auto")
    alloc = tilec.compile(elementwise_add(), out_idx=[2], target="auto")
    a, b = torch.randn(1, device="cuda"), torch.randn(1, device="cuda")
    c = torch.full((1,), float("nan"), device="cuda")
    given(a, b, c)
    torch.testing.assert_close(c, a + b)
    torch.testing.assert_close(alloc(a, b), a + b)

    def reads():
        for t in (a, b, c):
            t.dtype, t.data_ptr(), t.shape, t.stride(), t.is_cuda, t.get_device()

    from tilec import _tilec
    from tilec import kernel as tilec_kernel

    @contextlib.contextmanager
    def shim_off():  # calls through torch's Python API instead of the torch shim
        _tilec._set_torch_shim_active(False)
        try:
            yield
        finally:
            _tilec._set_torch_shim_active(True)

    def without_shim(fn):  # a batch of calls with the torch shim switched off
        def timed(calls):
            with shim_off():
                return per_call_us(fn, calls)
        return timed

    shim = tilec_kernel.TORCH_SHIM_STATUS == ""
    rows = {
        "torch.add(a, b, out=c)": lambda: torch.add(a, b, out=c),
        "torch.add(a, b)": lambda: torch.add(a, b),
        "tilec kernel(a, b, c)": lambda: given(a, b, c),
        "tilec kernel(a, b) [out_idx]": lambda: alloc(a, b),
        "tilec dry run (a, b, c)": lambda: given._dry_run(a, b, c),
        "tilec dry run (a, b) [out_idx]": lambda: alloc._dry_run(a, b),
        "torch.empty((1,), dtype=, device=)": lambda: torch.empty((1,), dtype=torch.float32, device=0),
        "a.new_empty((1,))": lambda: a.new_empty((1,)),
        "3 x six tensor reads from Python": reads,
    }
    if shim:  # the same calls through torch's Python API, alternating with the rows above
        rows["tilec kernel(a, b, c), shim off"] = without_shim(lambda: given(a, b, c))
        rows["tilec kernel(a, b) [out_idx], shim off"] = without_shim(lambda: alloc(a, b))
        rows["tilec dry run (a, b) [out_idx], shim off"] = without_shim(lambda: alloc._dry_run(a, b))
        torch.testing.assert_close(alloc(a, b), a + b)
        with shim_off():
            torch.testing.assert_close(alloc(a, b), a + b)
    samples = {name: [] for name in rows}
    for _ in range(rounds):
        for name, fn in rows.items():
            samples[name].append(fn(calls) if name.endswith("shim off") else per_call_us(fn, calls))
    us = {name: statistics.median(v) for name, v in samples.items()}
    us["launch (full - dry run), outputs given"] = us["tilec kernel(a, b, c)"] - us["tilec dry run (a, b, c)"]
    us["launch (full - dry run), allocating"] = us["tilec kernel(a, b) [out_idx]"] - us["tilec dry run (a, b) [out_idx]"]
    return {"us_per_call": us,
            "ratio_outputs_given": us["tilec kernel(a, b, c)"] / us["torch.add(a, b, out=c)"],
            "ratio_allocating": us["tilec kernel(a, b) [out_idx]"] / us["torch.add(a, b)"],
            "torch_shim": "in use" if shim else f"not in use: {tilec_kernel.TORCH_SHIM_STATUS}",
            "rounds": rounds, "calls_per_round": calls, "device": torch.cuda.get_device_name(),
            "torch": torch.__version__}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--calls", type=int, default=4000)
    p.add_argument("--json")
    a = p.parse_args()
    r = measure(a.rounds, a.calls)
    for name, v in r["us_per_call"].items():
        print(f"  {name:42s} {v:6.2f} us")
    print(f"  torch shim: {r['torch_shim']}")
    print(f"  tilec / torch.add: outputs given {r['ratio_outputs_given']:.3f}, allocating {r['ratio_allocating']:.3f} "
          "(lower is better; the target is <= 1)")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(r, f, indent=1)


if __name__ == "__main__":
    main()
