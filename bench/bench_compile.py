"""Compile and launch overheads:
- cold compile of the GEMM example (empty disk cache, fresh process): wall time of tilec.compile
- disk-cache hit (fresh process, warm disk cache): wall time of tilec.compile
- host overhead of launching a cached tiny kernel from Python: wall time per call over many
  back-to-back calls (the GPU work is tiny, so the host is the bottleneck), next to torch's
  own launch of a tiny op measured the same way."""
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SNIPPET = r"""
import sys, time, json
sys.path.insert(0, {examples!r}); sys.path.insert(0, {python!r})
import tilec
from gemm import matmul
f = matmul(4096, 4096, 4096, 128, 256, 32, dtype="bfloat16", num_stages=3, threads=256)
t0 = time.perf_counter()
k = tilec.compile(f, target={target!r})
print(json.dumps({{"seconds": time.perf_counter() - t0}}))
"""


def compile_in_fresh_process(cache_dir, target):
    env = dict(os.environ, TILEC_CACHE_DIR=cache_dir)
    code = SNIPPET.format(examples=os.path.join(HERE, "..", "examples"), python=os.path.join(HERE, "..", "python"),
                          target=target)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])["seconds"]


def launch_overhead():
    import torch
    import tilec
    from elementwise_add import elementwise_add

    k = tilec.compile(elementwise_add(), target="auto")
    a = torch.randn(256, device="cuda")
    b = torch.randn(256, device="cuda")
    c = torch.empty(256, device="cuda")
    for _ in range(100):
        k(a, b, c)
    torch.cuda.synchronize()
    n = 20000
    t0 = time.perf_counter()
    for _ in range(n):
        k(a, b, c)
    t_ours = (time.perf_counter() - t0) / n
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        torch.add(a, b, out=c)
    t_torch = (time.perf_counter() - t0) / n
    torch.cuda.synchronize()
    return t_ours, t_torch


def run(target="auto"):
    rows = []
    with tempfile.TemporaryDirectory() as cache:
        cold = compile_in_fresh_process(cache, target)
        hit = min(compile_in_fresh_process(cache, target) for _ in range(3))
    print(f"  cold compile (GEMM): {cold * 1e3:.0f} ms; disk-cache hit: {hit * 1e3:.1f} ms")
    rows.append({"bench": "cold compile, GEMM example", "ours": f"{cold * 1e3:.0f} ms", "peer": "target < 1000 ms",
                 "ratio": 1.0 / cold if cold else 0.0})
    rows.append({"bench": "disk-cache hit, GEMM example", "ours": f"{hit * 1e3:.1f} ms", "peer": "target < 20 ms",
                 "ratio": 0.020 / hit if hit else 0.0})
    t_ours, t_torch = launch_overhead()
    print(f"  launch overhead: tilec {t_ours * 1e6:.2f} us/call, torch.add {t_torch * 1e6:.2f} us/call")
    rows.append({"bench": "launch from Python, tiny kernel", "ours": f"{t_ours * 1e6:.2f} us",
                 "peer": f"{t_torch * 1e6:.2f} us (torch.add)", "ratio": t_torch / t_ours})
    return rows


if __name__ == "__main__":
    for r in run():
        print(r)
