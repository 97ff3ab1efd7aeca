"""The upstream-TileLang corpus harness: runs every in-scope example of
`../shared/upstream/tilelang/examples/` unmodified, with `tilelang` resolving to tilec.

    python tests/upstream/run_corpus.py [--jobs 2] [--timeout 150] [--only SUBSTR] [--write-docs]

CPU mode (default): each example runs in its own process through cpu_mode.py — kernels
compiled for sm_90a, launches intercepted, torch's "cuda" on the CPU.

GPU mode (`--gpu`, the `corpus` step of scripts/gpu_check.sh on the H200): each example runs
unmodified with `python -m tilec.run`, with its own checks, under --timeout (120 s, upstream's
limit), --jobs of them at a time (8 by default); pass = exit status 0. Results go to --report
(report/gpu_mode.json by default) and the table beside it (same name, .md); --write-docs also
puts the table into docs/COMPAT.md. `--shard K/N` runs every N-th example from the K-th (to
split a run over several device calls); `--docs-from-report A.json B.json ...` merges reports
fetched from the device into the table of docs/COMPAT.md (add --gpu for GPU reports).

Status per example in CPU mode:

  pass        the program ran to its end; every kernel it built compiled for sm_90a (a
              program that only builds tile functions, e.g. for tilelang.tools.Analyzer,
              passes too; one that builds none is `program`)
  partial     at least one kernel compiled, then the program stopped on an error that is
              not tilec's (CPU-mode limits: a value check on intercepted outputs, ...)
  tilec       stopped on a tilec error (a CompileError / InternalError, a missing tilelang
              API, an unsupported feature) — the ones to fix
  package     needs a Python package that is not installed (triton, fla, flash_attn, ...)
  program     stopped on an error of its own before any kernel compiled (or was killed for
              using more host memory than the machine has: CPU mode keeps "cuda" tensors in RAM)
  timeout     did not finish within --timeout seconds

The in-scope list is the first column of `h200-upstream-2026-12-01.tsv`. Results go to
tests/upstream/report/cpu_mode.json; --write-docs rewrites the CPU table of docs/COMPAT.md.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
# The pinned snapshot beside the checkout; TILEC_UPSTREAM_DIR names another copy (the device
# machine gets only the repository, so the GPU mode carries a copy there).
UPSTREAM = os.environ.get("TILEC_UPSTREAM_DIR") or os.path.normpath(os.path.join(ROOT, "..", "shared", "upstream"))
EXAMPLES = os.path.join(UPSTREAM, "tilelang", "examples")
TSV = os.path.join(UPSTREAM, "h200-upstream-2026-12-01.tsv")
REPORT = os.path.join(HERE, "report", "cpu_mode.json")
COMPAT_MD = os.path.join(ROOT, "docs", "COMPAT.md")
STATUSES = ("pass", "partial", "tilec", "package", "program", "timeout")


def in_scope() -> list:
    with open(TSV) as f:
        rows = [line.rstrip("\n").split("\t") for line in f][1:]
    return [r[0] for r in rows if r and r[0]]


def upstream_passing() -> set:
    path = os.path.join(UPSTREAM, "passing-upstream-h200.txt")
    with open(path) as f:
        return {line.strip() for line in f if line.strip()}


def run_one(example: str, timeout: float) -> dict:
    program = os.path.join(EXAMPLES, example)
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as tmp:
        result_path = tmp.name
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(ROOT, "python") + os.pathsep + env.get("PYTHONPATH", "")
    env.setdefault("TILEC_CACHE_DIR", os.path.join(tempfile.gettempdir(), "tilec-corpus-cache"))
    start = time.time()
    try:
        proc = subprocess.run([sys.executable, os.path.join(HERE, "cpu_mode.py"), result_path, program],
                              cwd=os.path.dirname(program), env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, timeout=timeout)
        output = proc.stdout.decode(errors="replace")
        try:
            with open(result_path) as f:
                result = json.load(f)
        except (OSError, ValueError):
            tail = [ln for ln in output.splitlines() if ln.strip()][-1:] or ["(no output)"]
            if proc.returncode == -9:  # the kernel's OOM killer: the CPU stand-in for "cuda" ran out
                result = {"status": "fail", "kernels": 0, "error": "killed (out of host memory in CPU mode)",
                          "error_kind": "program"}
            else:
                result = {"status": "fail", "kernels": 0,
                          "error": f"crashed (exit {proc.returncode}): {tail[0][:300]}", "error_kind": "tilec"}
    except subprocess.TimeoutExpired:
        result = {"status": "timeout", "kernels": None, "error": f"no result within {timeout:.0f} s",
                  "error_kind": "timeout"}
    finally:
        if os.path.exists(result_path):
            os.unlink(result_path)
    result["example"] = example
    result["seconds"] = round(time.time() - start, 1)
    if result["status"] == "fail":
        kind = result.get("error_kind", "program")
        result["status"] = "partial" if kind == "program" and result.get("kernels") else kind
        if result["status"] == "pass":
            result["status"] = "program"
    elif result["status"] == "pass" and not result.get("kernels") and not result.get("functions"):
        result["status"] = "program"
        result["error"] = result.get("error") or "ran to its end without building a tile function"
    result.pop("error_kind", None)
    return result


def run_one_on_gpu(example: str, timeout: float, log_dir: str = "", peer_site: str = "") -> dict:
    """Runs the example unmodified (`python -m tilec.run`) in its own process group; the whole
    group is killed at the time limit (autotuners and data loaders start children). With
    `peer_site` it runs upstream TileLang instead: plain `python PROGRAM` with only that
    directory (an unpacked upstream TileLang site) on PYTHONPATH."""
    program = os.path.join(EXAMPLES, example)
    env = dict(os.environ)
    if peer_site:
        env["PYTHONPATH"] = peer_site
        env.setdefault("TILELANG_PRINT_ON_COMPILATION", "0")
        command = [sys.executable, program]
    else:
        env["PYTHONPATH"] = os.path.join(ROOT, "python") + os.pathsep + env.get("PYTHONPATH", "")
        command = [sys.executable, "-m", "tilec.run", program]
    start = time.time()
    proc = subprocess.Popen(command, cwd=os.path.dirname(program), env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        timed_out = True
    text = out.decode(errors="replace")
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if timed_out:
        status, last = "timeout", f"no result within {timeout:.0f} s"
    else:
        status = "pass" if proc.returncode == 0 else "fail"
        last = (_error_line(lines) if status == "fail" else "") or (lines[-1] if lines else f"(no output, exit "
                                                                                               f"{proc.returncode})")
        last = last.strip()[:300]
    if log_dir:
        path = os.path.join(log_dir, example.replace("/", "__") + (".upstream" if peer_site else "") + ".log")
        os.makedirs(log_dir, exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
    return {"example": example, "status": status, "last_line": last, "seconds": round(time.time() - start, 1),
            "exit": proc.returncode, "timings": timing_lines(text) if status == "pass" else {}}


# A number, then (optionally) its unit: the figures examples print about themselves.
_NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
_UNIT = re.compile(r"\s*(ms|us|µs|s|tflops|tflop/s|gb/s|tb/s)\b", re.IGNORECASE)
_TIME_WORDS = re.compile(r"latency|time|\bms\b", re.IGNORECASE)
_RATE_WORDS = re.compile(r"tflop|gb/s|tb/s|bandwidth", re.IGNORECASE)


def timing_lines(text: str) -> dict:
    """{label: [value, kind]} of the output lines that report a time or a rate: the label is the
    line with every number replaced by '#' (so the same print matches between two runs), the
    value its first number, kind 'time' (lower is better) or 'rate' (higher is better), from the
    unit after the number or else the words of the line. Lines that are neither are left out."""
    found = {}
    for line in text.splitlines():
        line = line.strip()
        m = _NUMBER.search(line)
        if not m or not (_TIME_WORDS.search(line) or _RATE_WORDS.search(line)):
            continue
        unit = _UNIT.match(line, m.end())
        if unit:
            kind = "rate" if "/" in unit.group(1) or unit.group(1).lower().startswith("tflop") else "time"
        else:
            kind = "time" if _TIME_WORDS.search(line[:m.start()]) else "rate" if _RATE_WORDS.search(line) else ""
        label = _NUMBER.sub("#", line)[:120]
        if kind and label not in found:
            found[label] = [float(m.group()), kind]
    return found


def speed_ratio(ours: list, peer: list) -> float | None:
    """How many times faster tilec's figure is than upstream's (> 1: tilec faster)."""
    (a, kind), (b, _) = ours, peer
    if a <= 0 or b <= 0:
        return None
    return b / a if kind == "time" else a / b


_EXCEPTION = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt|Warning)\b:?")


def _error_line(lines: list) -> str:
    """The exception line of a failed run's output (the last one: what stopped it)."""
    for ln in reversed(lines):
        if _EXCEPTION.match(ln.strip()):
            return ln
    return ""


def gpu_table(results: list, stamp: str = "", commit: str = "") -> str:
    passing = upstream_passing()
    ok = sum(1 for r in results if r["example"] in passing and r["status"] == "pass")
    counts = summarize(results, ("pass", "fail", "timeout"))
    stamp = stamp or time.strftime("%Y-%m-%d")
    commit = commit or _commit()
    lines = ["<!-- gpu-table: written by tests/upstream/run_corpus.py --gpu --write-docs -->",
             f"GPU mode (H200), {stamp}, commit {commit}: {len(results)} examples; "
             + ", ".join(f"{k} {v}" for k, v in counts.items())
             + f". Of the {len(passing)} examples upstream passes on the H200, {ok} pass here "
             f"(target: 95 %, {-(-95 * len(passing) // 100)}).", "",
             "| example | upstream on H200 | tilec | seconds | last line (the error, or the example's own output) |",
             "| --- | --- | --- | --- | --- |"]
    for r in sorted(results, key=lambda r: r["example"]):
        up = "pass" if r["example"] in passing else "fail"
        last = r["last_line"].replace("|", "\\|")
        status = r["status"] + (" (alone)" if r.get("rerun_alone") else "")
        lines.append(f"| {r['example']} | {up} | {status} | {r['seconds']} | {last} |")
    return "\n".join(lines) + "\n"


def timing_table(results: list, meta: dict) -> str:
    """Each figure an example printed about itself, from tilec's run and upstream's run of the same
    example in the same device call (the label is the printed line with its numbers as '#')."""
    runs = [r for r in results if r.get("peer")]
    lines = ["<!-- timing-table: written by tests/upstream/run_corpus.py --gpu --peer ... --write-docs -->",
             f"Same-run timings (H200), {meta.get('date', '')}, commit {meta.get('commit', '')}: {len(runs)} examples "
             f"run by tilec and then by upstream TileLang 0.1.15 in the same slot, {meta.get('jobs', '?')} examples "
             "sharing the GPU at a time (so each figure is taken beside other work: compare ratios, not absolute "
             "values; reference rows such as torch's are a check of that noise). 'tilec / upstream' is how many "
             "times faster tilec's figure is (time: upstream's over tilec's; rate: tilec's over upstream's).", "",
             "| example | figure (printed line, numbers as #) | tilec | upstream | tilec / upstream |",
             "| --- | --- | --- | --- | --- |"]
    for r in sorted(runs, key=lambda r: r["example"]):
        peer = r["peer"]
        if peer["status"] != "pass":
            lines.append(f"| {r['example']} | (upstream: {peer['status']}: {peer['last_line'][:80]}) | | | |")
            continue
        for label, ours in r["timings"].items():
            theirs = peer.get("timings", {}).get(label)
            if not theirs:
                continue
            ratio = speed_ratio(ours, theirs)
            text = label.replace("|", "\\|")
            lines.append(f"| {r['example']} | {text} | {ours[0]:.4g} | {theirs[0]:.4g} | "
                         f"{'' if ratio is None else f'{ratio:.2f}'} |")
    return "\n".join(lines) + "\n"


def write_timing_docs(results: list, meta: dict) -> None:
    with open(COMPAT_MD) as f:
        text = f.read()
    begin, end = text.index("<!-- timing-table"), text.index("<!-- /timing-table -->")
    with open(COMPAT_MD, "w") as f:
        f.write(text[:begin] + timing_table(results, meta) + text[end:])


def write_gpu_docs(results: list, stamp: str = "", commit: str = "") -> None:
    with open(COMPAT_MD) as f:
        text = f.read()
    begin, end = text.index("<!-- gpu-table"), text.index("<!-- /gpu-table -->")
    with open(COMPAT_MD, "w") as f:
        f.write(text[:begin] + gpu_table(results, stamp, commit) + text[end:])


def _commit() -> str:
    if os.environ.get("TILEC_COMMIT"):  # a copy of the tree without its .git (the device machine)
        return os.environ["TILEC_COMMIT"]
    return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL).stdout.decode().strip() or "unknown"


def shard(examples: list, spec: str) -> list:
    """`K/N`: every N-th example from the K-th (1-based)."""
    k, n = (int(x) for x in spec.split("/"))
    if not 1 <= k <= n:
        raise SystemExit(f"--shard {spec}: want K/N with 1 <= K <= N")
    return examples[k - 1::n]


_OUT_OF_MEMORY = re.compile(r"OutOfMemoryError|CUDA out of memory|CUDA_ERROR_OUT_OF_MEMORY|out of device memory")


def ran_out_of_memory(last_line: str) -> bool:
    return bool(_OUT_OF_MEMORY.search(last_line))


def selected(example: str, only: str) -> bool:
    """--only: a comma-separated list of texts; an example is run when its path contains one."""
    return any(part.strip() in example for part in only.split(",")) if only else True


def run_gpu(examples: list, args) -> int:
    args.report = args.report or os.path.join(HERE, "report", "gpu_mode.json")
    report = args.report
    os.makedirs(os.path.dirname(os.path.abspath(report)), exist_ok=True)
    meta = {"date": time.strftime("%Y-%m-%d"), "commit": _commit(), "jobs": args.jobs, "timeout": args.timeout,
            "examples": len(examples), "peer": bool(getattr(args, "peer", ""))}
    results = []

    def write_report():  # after every example: a run stopped from outside keeps what finished
        done = sorted(results, key=lambda r: r["example"])
        with open(report + ".tmp", "w") as f:
            json.dump({"meta": meta, "summary": summarize(done, ("pass", "fail", "timeout")), "results": done}, f,
                      indent=1)
        os.replace(report + ".tmp", report)  # whole reports only, for a reader at any moment

    passing = upstream_passing()

    def run_pair(example: str) -> dict:
        """tilec's run; with --peer, upstream's right after it in the same slot when tilec's run
        printed figures of its own and upstream passes the example (a side-by-side timing)."""
        r = run_one_on_gpu(example, args.timeout, log_dir)
        if getattr(args, "peer", "") and r.get("timings") and example in passing:
            r["peer"] = run_one_on_gpu(example, args.timeout, log_dir, peer_site=args.peer)
        return r

    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        log_dir = os.path.splitext(args.report)[0] + "_logs"
        futures = [pool.submit(run_pair, e) for e in examples]
        for fut in concurrent.futures.as_completed(futures):
            r = fut.result()
            results.append(r)
            write_report()
            print(f"[{len(results):3d}/{len(examples)}] {r['status']:8s} {r['example']}  ({r['seconds']} s) "
                  f"{r['last_line'][:120]}", flush=True)
    # The H200's memory is shared by --jobs examples at once: one that ran out of memory beside the
    # others is run again alone, and that result counts (it says so).
    for i, r in enumerate(results):
        if r["status"] == "fail" and ran_out_of_memory(r["last_line"]):
            again = run_one_on_gpu(r["example"], args.timeout, log_dir)
            again["rerun_alone"] = True
            results[i] = again
            write_report()
            print(f"[again] {again['status']:8s} {again['example']}  ({again['seconds']} s, alone: out of memory "
                  f"beside the others) {again['last_line'][:100]}", flush=True)
    results.sort(key=lambda r: r["example"])
    with open(os.path.splitext(report)[0] + ".md", "w") as f:
        f.write(gpu_table(results, meta["date"], meta["commit"]))
    print("summary:", ", ".join(f"{k} {v}" for k, v in summarize(results, ("pass", "fail", "timeout")).items()),
          f"-> {report}")
    if meta["peer"]:
        with open(os.path.splitext(report)[0] + "_timings.md", "w") as f:
            f.write(timing_table(results, meta))
    if args.write_docs:
        write_gpu_docs(results, meta["date"], meta["commit"])
        if meta["peer"]:
            write_timing_docs(results, meta)
    return 0


def load_reports(paths: list) -> tuple:
    """Results of one or more reports (GPU shards merge), with the first report's meta."""
    results, meta = [], {}
    for path in paths:
        with open(path) as f:
            data = json.load(f)
        if isinstance(data, list):  # an older GPU report: a bare list
            data = {"results": data}
        meta = meta or data.get("meta", {})
        results += data["results"]
    return results, meta


def summarize(results: list, statuses: tuple = STATUSES) -> dict:
    counts = {s: 0 for s in statuses}
    for r in results:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    return counts


def markdown_table(results: list, passing_upstream: set) -> str:
    lines = ["| example | upstream on H200 | CPU mode (sm_90a) | kernels | first error |",
             "| --- | --- | --- | --- | --- |"]
    for r in sorted(results, key=lambda r: r["example"]):
        up = "pass" if r["example"] in passing_upstream else "fail"
        err = (r.get("error") or "").replace(EXAMPLES + os.sep, "").replace("|", "\\|").replace("\n", " ")
        kernels = "" if r.get("kernels") is None else str(r["kernels"])
        lines.append(f"| {r['example']} | {up} | {r['status']} | {kernels} | {err} |")
    return "\n".join(lines)


def write_docs(results: list) -> None:
    counts = summarize(results)
    passing = upstream_passing()
    ok_of_upstream = sum(1 for r in results if r["example"] in passing and r["status"] == "pass")
    stamp = time.strftime("%Y-%m-%d")
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL).stdout.decode().strip()
    head = (f"<!-- cpu-table: written by tests/upstream/run_corpus.py --write-docs -->\n"
            f"CPU mode, {stamp}, commit {commit}: {len(results)} examples; "
            + ", ".join(f"{k} {v}" for k, v in counts.items())
            + f". Of the {len(passing)} that upstream passes on the H200, {ok_of_upstream} pass here.\n\n")
    table = markdown_table(results, passing)
    with open(COMPAT_MD) as f:
        text = f.read()
    begin = text.index("<!-- cpu-table")
    end = text.index("<!-- /cpu-table -->")
    text = text[:begin] + head + table + "\n" + text[end:]
    with open(COMPAT_MD, "w") as f:
        f.write(text)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=None, help="examples at a time (CPU mode: up to 4; GPU mode: 8)")
    ap.add_argument("--timeout", type=float, default=120)
    ap.add_argument("--only", default="", help="run the examples whose path contains this text (several texts: "
                                               "separated by commas, any of them)")
    ap.add_argument("--write-docs", action="store_true", help="rewrite the CPU table in docs/COMPAT.md")
    ap.add_argument("--report", default=None)
    ap.add_argument("--gpu", action="store_true", help="GPU mode: run each example for real (on the H200)")
    ap.add_argument("--shard", default="", help="K/N: run every N-th in-scope example from the K-th")
    ap.add_argument("--peer", default="", metavar="SITE",
                    help="GPU mode: after tilec's run of an example that prints its own figures and that upstream "
                         "passes, run it with upstream TileLang (SITE: its unpacked site directory) in the same slot; "
                         "the figures side by side go to REPORT_timings.md (and with --write-docs to docs/COMPAT.md)")
    ap.add_argument("--docs-from-report", nargs="*", default=None, metavar="REPORT",
                    help="rewrite the CPU (or with --gpu, the GPU) table of docs/COMPAT.md from reports, running "
                         "nothing (default: the last report); a GPU report of a --peer run rewrites the same-run "
                         "timing table instead")
    args = ap.parse_args(argv)
    if args.docs_from_report is not None:
        default = args.report or (os.path.join(HERE, "report", "gpu_mode.json") if args.gpu else REPORT)
        results, meta = load_reports(args.docs_from_report or [default])
        if args.gpu and any(r.get("peer") for r in results):
            write_timing_docs(results, meta)
        elif args.gpu:
            write_gpu_docs(results, meta.get("date", ""), meta.get("commit", ""))
        else:
            write_docs(results)
        return 0
    examples = [e for e in in_scope() if selected(e, args.only)]
    if args.shard:
        examples = shard(examples, args.shard)
    results = []
    if args.gpu:
        args.jobs = args.jobs or 8
        return run_gpu(examples, args)
    args.jobs = args.jobs or max(1, min(4, os.cpu_count() or 1))
    args.report = args.report or REPORT
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        futures = {pool.submit(run_one, e, args.timeout): e for e in examples}
        for fut in concurrent.futures.as_completed(futures):
            r = fut.result()
            results.append(r)
            print(f"[{len(results):3d}/{len(examples)}] {r['status']:8s} {r['example']}  "
                  f"({r['seconds']} s, {r.get('kernels')} kernels) {r.get('error', '')[:160]}", flush=True)
    results.sort(key=lambda r: r["example"])
    os.makedirs(os.path.dirname(args.report), exist_ok=True)
    with open(args.report, "w") as f:
        json.dump({"summary": summarize(results), "results": results}, f, indent=1)
    print("summary:", ", ".join(f"{k} {v}" for k, v in summarize(results).items()))
    if args.write_docs:
        write_docs(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
