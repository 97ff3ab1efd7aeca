"""Compiles the team GEMM (also the peer text with 4 stages: C in column blocks), FlashAttention (forward, and the backward with dQ by TMA reduce-adds), the fp8 GEMM and the fp8 FlashAttention for sm_90a, disassembles them (cuobjdump) and
counts the instructions that show the Hopper path: HGMMA / QGMMA (wgmma, fp8), UTMALDG (TMA loads),
SYNCS (mbarrier waits), and local-memory spills (LDL / STL) inside the main loops."""
import glob
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "examples"))
sys.path.insert(0, os.path.join(HERE, "..", "python"))


# Kernels that spill, with the most LDL + STL their SASS may have (more fails the check): the
# backward at head dim 64 with 128 x 128 blocks reloads loop-invariant shared-memory addresses
# (twentieth session, cuobjdump on the H200: 2 STL before the loop and 2 LDL per step
# non-causal, 19 STL and 19 LDL causal), and runs 1.05-1.14x cuDNN so, against 0.88-0.95x with
# the 128 x 64 blocks that do not spill.
KNOWN_SPILLS = {"bwd_sm90_d64": 4, "bwd_sm90_d64_causal": 40}


def main():
    d = tempfile.mkdtemp()
    os.environ["TILEC_DUMP_DIR"] = d
    os.environ["TILEC_DISABLE_CACHE"] = "1"
    import tilec
    from flash_attention import flash_attention
    from gemm import matmul
    from gemm_fp8 import fp8_gemm
    from flash_attention_fp8 import flash_attention_fp8
    from gemm_streamk import streamk_gemm

    tilec.compile(matmul(4096, 4096, 4096, 128, 256, 64, dtype="bfloat16", threads=256), target="sm_90a")
    tilec.compile(flash_attention(4, 32, 4096, 128, dtype="bfloat16"), target="sm_90a")
    # The forward's sm_90 blocks as tilec.ops.flash_attn compiles them (attention_kernels.PASS_CONFIGS): d64
    # 192 rows on three consumer warpgroups, d128 176 keys, d256 128 keys in one stage (a serial step,
    # O in column blocks: UTMASTG).
    from tilec.ops.attention_kernels import PASS_CONFIGS
    for dim, causal in ((64, False), (128, False), (128, True), (256, False), (256, True)):
        os.environ["TILEC_DUMP_DIR"] = os.path.join(d, f"fa_sm90_d{dim}{'_causal' if causal else ''}")
        tilec.compile(flash_attention(2, 2048 // dim, 8192, dim, causal, dtype="bfloat16", target="sm_90a"),
                      target="sm_90a", pass_configs=PASS_CONFIGS)
    # The peer GEMM text with 4 stages: persistent, C_shared replaced by two 64-column blocks (UTMASTG).
    sys.path.insert(0, os.path.join(HERE, "..", "bench"))
    import tilec.compat  # noqa: F401  (the peer program is written against `tilelang`)
    import tilelang.language as T
    from peer_gemm import program
    os.environ["TILEC_DUMP_DIR"] = os.path.join(d, "peer_gemm_s4_column_blocks")
    tilec.compile(program(T, 8192, 8192, 8192, 128, 256, 64, 4, 256, "bfloat16"), target="sm_90a")
    # The backward's main kernel with dQ by TMA reduce-adds (UTMAREDG), dV / dK by TMA stores.
    from tilec.ops.attention_kernels import BACKWARD_PASS_CONFIGS, flash_attention_bwd
    for dim, causal in ((64, False), (64, True), (128, False), (128, True)):
        os.environ["TILEC_DUMP_DIR"] = os.path.join(d, f"bwd_sm90_d{dim}{'_causal' if causal else ''}")
        tilec.compile(flash_attention_bwd(2, 16, 4096, dim, causal, dtype="bfloat16", target="sm_90a")[1],
                      target="sm_90a", pass_configs=BACKWARD_PASS_CONFIGS)
    os.environ["TILEC_DUMP_DIR"] = d
    tilec.compile(fp8_gemm(4096, 4096, 4096), target="sm_90a")
    tilec.compile(flash_attention_fp8(4, 16, 4096, 128), target="sm_90a")
    os.environ["TILEC_DUMP_DIR"] = os.path.join(d, "p_in_registers")
    tilec.compile(flash_attention_fp8(4, 16, 4096, 128, p_in_registers=True), target="sm_90a")
    os.environ["TILEC_DUMP_DIR"] = d
    # Shown, not checked: the stream-K GEMM's loops are `while` loops, which are not warp-specialized.
    info = tempfile.mkdtemp()
    os.environ["TILEC_DUMP_DIR"] = info
    tilec.compile(streamk_gemm(4096, 4096, 4096, 132), target="sm_90a")
    os.environ["TILEC_DUMP_DIR"] = d
    ok = True
    for cubin in sorted(glob.glob(os.path.join(d, "**", "*.cubin"), recursive=True)):
        sass = subprocess.run(["cuobjdump", "-sass", cubin], capture_output=True, text=True).stdout
        counts = {k: sass.count(k) for k in ("HGMMA", "QGMMA", "UTMALDG", "UTMASTG", "UTMAREDG", "SYNCS", "LDL", "STL",
                                             "HMMA", "LDGSTS")}
        name = os.path.relpath(cubin, d)
        known = next((n for k, n in KNOWN_SPILLS.items() if name.startswith(k + "/")), 0)
        print(name, counts, f"(known spills: at most {known} LDL + STL)" if known else "")
        ok &= (counts["HGMMA"] + counts["QGMMA"]) > 0 and counts["UTMALDG"] > 0 and \
            counts["LDL"] + counts["STL"] <= known
    for cubin in sorted(glob.glob(os.path.join(info, "**", "*.cubin"), recursive=True)):
        sass = subprocess.run(["cuobjdump", "-sass", cubin], capture_output=True, text=True).stdout
        print("(not checked)", os.path.relpath(cubin, info),
              {k: sass.count(k) for k in ("HGMMA", "UTMALDG", "UTMAREDG", "LDL", "STL", "HMMA", "LDGSTS")})
    print("SASS check:", "ok" if ok else "FAILED")


def compare_output_staging(out_dir):
    """Head dim 256 non-causal, O over V's stages against O from the registers: both SASS
    listings go to out_dir, and the main loop's instructions are counted per opcode for each
    (nineteenth session: the staged form ran 5% slower on long loops, with the same PTX loop)."""
    import collections
    import re

    os.environ["TILEC_DISABLE_CACHE"] = "1"
    import tilec
    from tilec.ops.attention_kernels import PASS_CONFIGS, flash_attention

    counts = {}
    for name, staged in (("over_v", True), ("registers", False)):
        d = os.path.join(out_dir, name)
        os.environ["TILEC_DUMP_DIR"] = d
        # 26 steps of 80 keys (2048 keys) stage over V by default (205 do not; the loop's code is
        # the same for any trip count).
        tilec.compile(flash_attention(1, 8, 2048, 256, False, dtype="bfloat16", target="sm_90a"), target="sm_90a",
                      pass_configs=dict(PASS_CONFIGS, **{"tilec.stage_output_tiles": staged}))
        cubin = glob.glob(os.path.join(d, "**", "*.cubin"), recursive=True)[0]
        sass = subprocess.run(["cuobjdump", "-sass", cubin], capture_output=True, text=True).stdout
        with open(os.path.join(out_dir, name + ".sass"), "w") as f:
            f.write(sass)
        ops = [m.group(1) for m in re.finditer(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\d\s+)?([A-Z][A-Z0-9_.]+)", sass)]
        hgmma = [i for i, op in enumerate(ops) if op.startswith("HGMMA")]
        # From the 3rd HGMMA to the last: the main loop and the last step's P V, without the
        # tile's first S gemm (the prologue).
        loop = ops[hgmma[2]:hgmma[-1] + 1] if len(hgmma) > 3 else ops
        counts[name] = collections.Counter(op.split(".")[0] for op in loop)
    keys = sorted(set(counts["over_v"]) | set(counts["registers"]), key=lambda k: -counts["registers"][k])
    print("opcode            over_v  registers")
    for k in keys:
        if counts["over_v"][k] != counts["registers"][k] or counts["registers"][k] > 20:
            print(f"{k:16} {counts['over_v'][k]:7} {counts['registers'][k]:10}")


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--compare-output-staging":
        compare_output_staging(sys.argv[2])
    else:
        main()
