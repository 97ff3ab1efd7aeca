"""python -m tools.fuzz --mode cpu|gpu --count N --seed S [--jobs J] [--time-limit SEC] [--report PATH]
                      [--sanitize memcheck|racecheck|synccheck|initcheck]

Mode cpu (CI, no GPU): every program compiles with NVRTC for sm_80 and sm_90a (or fails with a
clear CompileError) and the CPU target matches the generator's numpy reference.
Mode gpu: every program runs on the GPU (outputs NaN-poisoned) and matches the CPU target.
With --sanitize TOOL (gpu mode) each program is checked in its own process under
compute-sanitizer's TOOL, and errors it reports fail the program (stage 'sanitizer').
Failures are minimized into tests/fuzz_regressions/. Exit status 1 when anything failed.
See docs/RELIABILITY.md."""

import argparse
import sys

from .driver import run, write_report
from .gen import GENERATORS
from .worker import sanitizer_command


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m tools.fuzz", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--mode", choices=["cpu", "gpu"], default="cpu")
    p.add_argument("--count", type=int, default=100)
    p.add_argument("--seed", type=int, default=0, help="program i has seed SEED + i")
    p.add_argument("--jobs", type=int, default=1, help="checking processes")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds per program (then: hang)")
    p.add_argument("--time-limit", type=float, default=0.0, help="stop starting programs after this many seconds")
    p.add_argument("--families", default="", help=f"comma list of {','.join(GENERATORS)} (default all)")
    p.add_argument("--no-minimize", action="store_true")
    p.add_argument("--max-minimize", type=int, default=5, help="failures to minimize (the first by seed)")
    p.add_argument("--regressions-dir", default="", help="default tests/fuzz_regressions")
    p.add_argument("--report", default="", help="write the report as JSON here (and .txt beside it)")
    p.add_argument("--print-source", type=int, metavar="SEED", help="print program SEED's source and exit")
    p.add_argument("--sanitize", choices=["memcheck", "racecheck", "synccheck", "initcheck"],
                   help="gpu mode: check each program in its own process under compute-sanitizer's tool")
    a = p.parse_args(argv)
    families = [f for f in a.families.split(",") if f] or None
    if a.print_source is not None:
        from .gen import generate
        from .render import render

        print(render(generate(a.print_source, families)), end="")
        return 0
    if a.sanitize and a.mode != "gpu":
        print("--sanitize needs --mode gpu", file=sys.stderr)
        return 2
    if a.mode == "gpu":
        import torch

        if not torch.cuda.is_available():
            print("python -m tools.fuzz --mode gpu needs a CUDA GPU (torch.cuda.is_available() is False); "
                  "use --mode cpu here", file=sys.stderr)
            return 2
    result = run(a.mode, a.count, a.seed, jobs=a.jobs, timeout=a.timeout, time_limit=a.time_limit,
                 families=families, minimize_failures=not a.no_minimize, regressions_dir=a.regressions_dir,
                 max_minimize=a.max_minimize, log=lambda m: print(m, file=sys.stderr, flush=True),
                 wrapper=sanitizer_command(a.sanitize) if a.sanitize else None)
    print(result.text())
    if a.report:
        write_report(result, a.report)
    return 1 if result.failed else 0


if __name__ == "__main__":
    sys.exit(main())
