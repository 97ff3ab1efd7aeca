"""The upstream-TileLang corpus harness: runs every in-scope example of
`../shared/upstream/tilelang/examples/` unmodified, with `tilelang` resolving to tilec.

    python tests/upstream/run_corpus.py [--jobs 2] [--timeout 150] [--only SUBSTR] [--write-docs]

CPU mode (default): each example runs in its own process through cpu_mode.py — kernels
compiled for sm_90a, launches intercepted, torch's "cuda" on the CPU.

GPU mode (`--gpu`, in scripts/gpu_check.sh on the H200): each example runs unmodified with
`python -m tilec.run`, with its own checks, under --timeout (120 s, upstream's limit); pass =
exit status 0. Results go to report/gpu_mode.json and, with --write-docs, the GPU table of
docs/COMPAT.md (with the last line each example printed, where its timing usually is).

Status per example in CPU mode:

  pass        the program ran to its end; every kernel it built compiled for sm_90a
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
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
UPSTREAM = os.path.normpath(os.path.join(ROOT, "..", "shared", "upstream"))
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
    elif result["status"] == "pass" and not result.get("kernels"):
        result["status"] = "program"
        result["error"] = result.get("error") or "ran to its end without compiling a kernel"
    result.pop("error_kind", None)
    return result


def run_one_on_gpu(example: str, timeout: float) -> dict:
    program = os.path.join(EXAMPLES, example)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(ROOT, "python") + os.pathsep + env.get("PYTHONPATH", "")
    start = time.time()
    try:
        proc = subprocess.run([sys.executable, "-m", "tilec.run", program], cwd=os.path.dirname(program), env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout)
        lines = [ln for ln in proc.stdout.decode(errors="replace").splitlines() if ln.strip()]
        status = "pass" if proc.returncode == 0 else "fail"
        last = lines[-1][:300] if lines else ""
    except subprocess.TimeoutExpired:
        status, last = "timeout", f"no result within {timeout:.0f} s"
    return {"example": example, "status": status, "last_line": last, "seconds": round(time.time() - start, 1)}


def write_gpu_docs(results: list) -> None:
    passing = upstream_passing()
    ok = sum(1 for r in results if r["example"] in passing and r["status"] == "pass")
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL).stdout.decode().strip()
    lines = [f"<!-- gpu-table: written by tests/upstream/run_corpus.py --gpu --write-docs -->",
             f"GPU mode, {time.strftime('%Y-%m-%d')}, commit {commit}: {ok} of the {len(passing)} examples upstream "
             f"passes on the H200 pass here.", "",
             "| example | upstream on H200 | tilec | seconds | last line |", "| --- | --- | --- | --- | --- |"]
    for r in sorted(results, key=lambda r: r["example"]):
        up = "pass" if r["example"] in passing else "fail"
        last = r["last_line"].replace("|", "\\|")
        lines.append(f"| {r['example']} | {up} | {r['status']} | {r['seconds']} | {last} |")
    with open(COMPAT_MD) as f:
        text = f.read()
    begin, end = text.index("<!-- gpu-table"), text.index("<!-- /gpu-table -->")
    with open(COMPAT_MD, "w") as f:
        f.write(text[:begin] + "\n".join(lines) + "\n" + text[end:])


def summarize(results: list) -> dict:
    counts = {s: 0 for s in STATUSES}
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
    ap.add_argument("--jobs", type=int, default=max(1, min(4, os.cpu_count() or 1)))
    ap.add_argument("--timeout", type=float, default=120)
    ap.add_argument("--only", default="", help="run the examples whose path contains this text")
    ap.add_argument("--write-docs", action="store_true", help="rewrite the CPU table in docs/COMPAT.md")
    ap.add_argument("--report", default=None)
    ap.add_argument("--gpu", action="store_true", help="GPU mode: run each example for real (on the H200)")
    ap.add_argument("--docs-from-report", action="store_true",
                    help="rewrite the CPU table of docs/COMPAT.md from the last report, running nothing")
    args = ap.parse_args(argv)
    if args.docs_from_report:
        with open(args.report or REPORT) as f:
            write_docs(json.load(f)["results"])
        return 0
    examples = [e for e in in_scope() if args.only in e]
    results = []
    if args.gpu:
        for e in examples:  # one at a time: they time themselves
            results.append(run_one_on_gpu(e, args.timeout))
            r = results[-1]
            print(f"[{len(results):3d}/{len(examples)}] {r['status']:8s} {e}  ({r['seconds']} s) {r['last_line'][:120]}",
                  flush=True)
        report = args.report or os.path.join(HERE, "report", "gpu_mode.json")
        os.makedirs(os.path.dirname(report), exist_ok=True)
        with open(report, "w") as f:
            json.dump(results, f, indent=1)
        if args.write_docs:
            write_gpu_docs(results)
        return 0
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
