"""How parallel compiles scale with threads (issue 11: the autotuner compiles every config on
every core). Compiles the same set of GEMM configurations (examples/gemm.py, sm_90a unless
--target) on 1, 2, 4, ... threads, each round on source text NVRTC has not seen (a different K),
caches off, and prints configs per second and the speed-up over one thread. Then one round
in worker processes (fork), to tell the threads' limits from the machine's, and one through
tilec.par_compile (worker processes, then threads; a fresh disk cache).

    python bench/compile_scaling.py [--configs 48] [--threads 1,4,8,16] [--target sm_90a]
"""
from __future__ import annotations

import argparse
import concurrent.futures
import itertools
import multiprocessing
import os
import sys
import time

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
os.environ["TILEC_DISABLE_CACHE"] = "1"
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "examples"))


def configs(n):
    grid = itertools.product([64, 128], [64, 128, 256], [32, 64], [2, 3, 4], [128, 256])
    return list(grid)[:n]


def programs(n, k):
    from gemm import matmul

    return [matmul(4096, 4096, k, bm, bn, bk, num_stages=s, threads=t) for bm, bn, bk, s, t in configs(n)]


def compile_all(funcs, target, workers):
    import tilec

    def one(f):
        return tilec.compile(f, target=target)

    t0 = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        list(pool.map(one, funcs))
    return time.perf_counter() - t0


def _compile_slice(args):
    n, k, target, start, step = args
    import tilec

    for f in programs(n, k)[start::step]:
        tilec.compile(f, target=target)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--configs", type=int, default=48)
    ap.add_argument("--threads", default="1,4,8,16")
    ap.add_argument("--target", default="sm_90a")
    args = ap.parse_args()
    import warnings

    warnings.simplefilter("ignore")
    compile_all(programs(1, 4096 - 64), args.target, 1)  # warm-up: NVRTC loaded, headers read
    base = None
    for i, w in enumerate(int(x) for x in args.threads.split(",")):
        funcs = programs(args.configs, 4096 + 64 * i)  # new source text every round
        t = compile_all(funcs, args.target, w)
        rate = len(funcs) / t
        base = base or rate
        print(f"threads {w:3d}: {len(funcs)} configs in {t:6.2f} s, {rate:6.2f} configs/s, x{rate / base:.2f}",
              flush=True)
    w = max(int(x) for x in args.threads.split(","))
    t0 = time.perf_counter()
    with multiprocessing.get_context("fork").Pool(w) as pool:
        pool.map(_compile_slice, [(args.configs, 8192 + 64, args.target, s, w) for s in range(w)])
    t = time.perf_counter() - t0
    print(f"processes {w:3d}: {args.configs} configs in {t:6.2f} s, {args.configs / t:6.2f} configs/s, "
          f"x{args.configs / t / base:.2f}", flush=True)
    # tilec.par_compile as the autotuner runs it: worker processes fill a fresh disk cache, then
    # the threads collect the kernels from it (compile_workers.py).
    import tempfile

    import tilec

    with tempfile.TemporaryDirectory() as cache:
        os.environ["TILEC_CACHE_DIR"], os.environ["TILEC_DISABLE_CACHE"] = cache, "0"
        funcs = programs(args.configs, 8192 + 128)
        t0 = time.perf_counter()
        kernels = tilec.par_compile(funcs, target=args.target, num_workers=w)
        t = time.perf_counter() - t0
        os.environ["TILEC_DISABLE_CACHE"] = "1"
    print(f"par_compile {w:3d}: {len(kernels)} configs in {t:6.2f} s, {len(kernels) / t:6.2f} configs/s, "
          f"x{len(kernels) / t / base:.2f} (workers fill the disk cache, threads collect)", flush=True)


if __name__ == "__main__":
    main()
