"""tests/upstream/run_corpus.py's GPU mode without a GPU: the report is rewritten after every
example (a run stopped from outside keeps what finished), the table counts upstream's passes,
and TILEC_UPSTREAM_DIR / TILEC_COMMIT name the snapshot and the commit on a machine that has
neither beside the tree."""
import importlib
import json
import os
import sys
import time
import types

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "tests", "upstream"))


def _load(monkeypatch, upstream):
    monkeypatch.setenv("TILEC_UPSTREAM_DIR", str(upstream))
    monkeypatch.setenv("TILEC_COMMIT", "abc1234")
    import run_corpus

    return importlib.reload(run_corpus)


def test_gpu_report_is_written_after_each_example(tmp_path, monkeypatch):
    upstream = tmp_path / "upstream"
    upstream.mkdir()
    (upstream / "passing-upstream-h200.txt").write_text("a/one.py\nb/two.py\n")
    rc = _load(monkeypatch, upstream)
    assert rc.UPSTREAM == str(upstream) and rc._commit() == "abc1234"
    report = tmp_path / "out" / "corpus_gpu.json"
    seen = []

    def fake_run(example, timeout, log_dir=""):
        # The examples finished before this one reach the report while this one runs.
        want, deadline = ["a/one.py", "b/two.py", "c/three.py"].index(example), time.time() + 10
        while want and time.time() < deadline:
            if os.path.exists(report) and len(json.loads(report.read_text())["results"]) >= want:
                seen.append(want)
                break
            time.sleep(0.01)
        return {"example": example, "status": "pass" if example != "b/two.py" else "fail", "seconds": 1.0,
                "last_line": "ok | done"}

    monkeypatch.setattr(rc, "run_one_on_gpu", fake_run)
    args = types.SimpleNamespace(report=str(report), jobs=1, timeout=5.0, write_docs=False)
    assert rc.run_gpu(["a/one.py", "b/two.py", "c/three.py"], args) == 0
    assert seen == [1, 2]
    data = json.loads(report.read_text())
    assert data["meta"]["commit"] == "abc1234" and data["meta"]["examples"] == 3
    assert [r["status"] for r in data["results"]] == ["pass", "fail", "pass"]
    table = (tmp_path / "out" / "corpus_gpu.md").read_text()
    assert "Of the 2 examples upstream passes on the H200, 1 pass here" in table
    assert "ok \\| done" in table
    monkeypatch.undo()
    importlib.reload(rc)  # the module's paths back to the snapshot beside the checkout


def test_an_example_out_of_memory_beside_others_runs_again_alone(tmp_path, monkeypatch):
    upstream = tmp_path / "upstream"
    upstream.mkdir()
    (upstream / "passing-upstream-h200.txt").write_text("a/big.py\nb/wrong.py\n")
    rc = _load(monkeypatch, upstream)
    runs = []

    def fake_run(example, timeout, log_dir=""):
        runs.append(example)
        first = runs.count(example) == 1
        last = {"a/big.py": "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB" if first else "ok",
                "b/wrong.py": "AssertionError: Tensor-likes are not close!"}[example]
        return {"example": example, "status": "pass" if last == "ok" else "fail", "seconds": 1.0, "last_line": last}

    monkeypatch.setattr(rc, "run_one_on_gpu", fake_run)
    report = tmp_path / "corpus_gpu.json"
    args = types.SimpleNamespace(report=str(report), jobs=2, timeout=5.0, write_docs=False)
    assert rc.run_gpu(["a/big.py", "b/wrong.py"], args) == 0
    assert sorted(runs) == ["a/big.py", "a/big.py", "b/wrong.py"]  # a wrong result is not retried
    results = json.loads(report.read_text())["results"]
    assert [(r["status"], r.get("rerun_alone", False)) for r in results] == [("pass", True), ("fail", False)]
    monkeypatch.undo()
    importlib.reload(rc)


def test_only_takes_several_texts():
    import run_corpus

    assert run_corpus.selected("gemm/example_gemm.py", "")
    assert run_corpus.selected("gemm/example_gemm.py", "act_quant, gemm/")
    assert not run_corpus.selected("gemm/example_gemm.py", "act_quant,mamba")


TILEC_OUT = """Testing mhc_pre with n=8192
Ref latency: 0.2374
tilelang Latency: 0.0178ms
latency: 2.3281 ms  (944.57 fp8 TFLOPS)
Tile-lang: 145.36 TFlops
Expected FLOPs: 2147483648
bwd  tilelang: 0.1702 ms   ref: 0.1953 ms
"""


def test_timing_lines_read_the_figures_examples_print():
    import run_corpus

    t = run_corpus.timing_lines(TILEC_OUT)
    assert t == {"Ref latency: #": [0.2374, "time"], "tilelang Latency: #ms": [0.0178, "time"],
                 "latency: # ms  (# fp# TFLOPS)": [2.3281, "time"], "Tile-lang: # TFlops": [145.36, "rate"],
                 "bwd  tilelang: # ms   ref: # ms": [0.1702, "time"]}  # a FLOP count is not a figure
    assert run_corpus.speed_ratio([1.0, "time"], [1.5, "time"]) == 1.5  # tilec's time 1.5x shorter
    assert run_corpus.speed_ratio([300.0, "rate"], [200.0, "rate"]) == 1.5
    assert run_corpus.speed_ratio([0.0, "time"], [1.0, "time"]) is None


def test_peer_mode_runs_upstream_after_tilec_where_it_can_compare(tmp_path, monkeypatch):
    upstream = tmp_path / "upstream"
    upstream.mkdir()
    (upstream / "passing-upstream-h200.txt").write_text("a/timed.py\nb/silent.py\n")
    rc = _load(monkeypatch, upstream)
    runs = []

    def fake_run(example, timeout, log_dir="", peer_site=""):
        runs.append((example, peer_site))
        text = {"a/timed.py": "Tile-lang: 300 TFlops\nRef latency: 1.0" if not peer_site
                else "Tile-lang: 200 TFlops\nRef latency: 1.1",
                "b/silent.py": "ok", "c/upstream_fails.py": "Latency: 2.0 ms"}[example]
        return {"example": example, "status": "pass", "seconds": 1.0, "last_line": text.splitlines()[-1],
                "timings": rc.timing_lines(text)}

    monkeypatch.setattr(rc, "run_one_on_gpu", fake_run)
    report = tmp_path / "corpus_gpu.json"
    args = types.SimpleNamespace(report=str(report), jobs=2, timeout=5.0, write_docs=False, peer="/site")
    assert rc.run_gpu(["a/timed.py", "b/silent.py", "c/upstream_fails.py"], args) == 0
    # upstream runs only where tilec printed figures and upstream passes the example
    assert sorted(runs) == [("a/timed.py", ""), ("a/timed.py", "/site"), ("b/silent.py", ""),
                            ("c/upstream_fails.py", "")]
    table = (tmp_path / "corpus_gpu_timings.md").read_text()
    assert "| a/timed.py | Tile-lang: # TFlops | 300 | 200 | 1.50 |" in table
    assert "| a/timed.py | Ref latency: # | 1 | 1.1 | 1.10 |" in table
    assert "b/silent.py" not in table and "c/upstream_fails.py" not in table
    monkeypatch.undo()
    importlib.reload(rc)
