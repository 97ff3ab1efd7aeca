"""Runs every case of hopper_cases.py in its own process (several at a time), each under a
time limit and with the hang detector on (TILEC_DEBUG_SYNC=1), and prints a table.
    python tests/gpu/hopper_check.py [--jobs 4] [--timeout 180] [CASE ...]
Exit status 1 when a case fails."""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def run_case(name: str, timeout: float) -> dict:
    env = dict(os.environ, TILEC_DEBUG_SYNC="1", PYTHONUNBUFFERED="1")
    t0 = time.time()
    try:
        p = subprocess.run([sys.executable, os.path.join(HERE, "hopper_cases.py"), name], env=env,
                           capture_output=True, text=True, timeout=timeout)
        out = p.stdout + p.stderr
    except subprocess.TimeoutExpired as e:
        return {"case": name, "ok": False, "error": f"timed out after {timeout:.0f} s", "secs": timeout,
                "log": (e.stdout or b"").decode(errors="replace")[-1500:] if isinstance(e.stdout, bytes) else ""}
    result = None
    for line in out.splitlines():
        if line.startswith("RESULT "):
            result = json.loads(line[7:])
    if result is None:
        result = {"case": name, "ok": False, "error": f"no result (exit {p.returncode})"}
    if name == "hang_detector":
        # The trap's message must name the barrier (device printf reaches stdout).
        result["ok"] = bool(result.get("ok")) and "mbarrier wait timed out" in out
        result["message"] = next((l for l in out.splitlines() if "timed out" in l), "")[:300]
    result["secs"] = round(time.time() - t0, 1)
    result["log"] = out[-1500:]
    return result


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=4)
    ap.add_argument("--timeout", type=float, default=180)
    ap.add_argument("--json", default="")
    ap.add_argument("cases", nargs="*")
    args = ap.parse_args()
    names = args.cases or subprocess.run([sys.executable, os.path.join(HERE, "hopper_cases.py"), "--list"],
                                         capture_output=True, text=True, check=True).stdout.split()
    with cf.ThreadPoolExecutor(args.jobs) as ex:
        results = list(ex.map(lambda n: run_case(n, args.timeout), names))
    failed = 0
    for r in results:
        status = "ok" if r.get("ok") else "FAIL"
        failed += status != "ok"
        detail = {k: v for k, v in r.items() if k not in ("case", "ok", "log", "trace")}
        print(f"{status:4} {r['case']:28} {json.dumps(detail)[:400]}")
        if status != "ok":
            print("     " + (r.get("trace") or r.get("log") or "").replace("\n", "\n     ")[-1500:])
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    print(f"{len(results) - failed} of {len(results)} Hopper cases passed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
