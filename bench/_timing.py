"""Timing helpers for the benchmarks: CUDA events, median of many runs, L2 flushed
between runs when asked. Benchmarks are not tests: they print and save numbers."""
import statistics


def bench(fn, warmup=10, rep=50, flush_l2=False):
    """Median milliseconds of fn() over `rep` timed runs (CUDA events)."""
    import torch

    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda") if flush_l2 else None
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(rep):
        if flush is not None:
            flush.zero_()
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def bench_rounds(fns, rounds=5, warmup=3, rep=20):
    """{name: median ms} for the callables in `fns` ({name: fn}), timed in `rounds` rounds that
    alternate between them (the GPU's clocks drift within a run: each sees the same conditions);
    each takes the median of its rounds' medians."""
    times = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            times[name].append(bench(fn, warmup=warmup, rep=rep))
    return {name: statistics.median(ts) for name, ts in times.items()}
