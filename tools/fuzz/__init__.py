"""tilec's differential fuzzer (issue 12): random valid tile programs (gen.py) printed as T
source (render.py), checked against the generator's numpy reference and the CPU target
(reference.py, check.py) in worker processes (worker.py), minimized into regression tests
(minimize.py). Entry point: python -m tools.fuzz (see __main__.py, docs/RELIABILITY.md).

It lives in tools/, not in the tilec package: it is a developer and CI tool over the public API
(tilec.compile with target="cpu" / a CUDA target), and ships nothing users import."""
