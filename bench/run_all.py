"""Runs every benchmark, writes bench/results/<date>.json and a markdown table, prints the table."""
import datetime
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def main(out_dir):
    import torch

    import bench_attention
    import bench_compile
    import bench_gemm
    import bench_memory

    rows = []
    for name, mod in (("gemm", bench_gemm), ("attention", bench_attention), ("memory", bench_memory),
                      ("compile", bench_compile)):
        print(f"== {name}")
        try:
            rows += mod.run()
        except Exception as e:  # keep going: one failing benchmark must not hide the others
            print(f"  {name} benchmarks failed: {e}")
    meta = {"date": datetime.date.today().isoformat(), "gpu": torch.cuda.get_device_name(),
            "torch": torch.__version__}
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "bench.json"), "w") as f:
        json.dump({"meta": meta, "rows": rows}, f, indent=1)
    lines = [f"GPU: {meta['gpu']}, torch {meta['torch']}, {meta['date']}", "",
             "| benchmark | config | ours | peer | ratio (peer time / ours, or ours/peer bandwidth) |",
             "|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['bench']} | {r.get('config', '')} | {r['ours']} | {r['peer']} | {r['ratio']:.2f} |")
    table = "\n".join(lines)
    with open(os.path.join(out_dir, "bench.md"), "w") as f:
        f.write(table + "\n")
    print(table)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "results"))
