#!/usr/bin/env bash
# The one GPU job (run on the H200 through the device tool, from the repo root):
# builds tilec, runs the C++ tests, the GPU tests, every example against torch,
# compute-sanitizer (memcheck, racecheck, synccheck, initcheck) on every example, the benchmarks,
# and prints a table.
#   scripts/gpu_check.sh [all|build|test|corpus|examples|sanitize|fuzz|bench|candidates|bwdcand|masks|fwdblocks|gemmtiles|compilespeed|recheck|recheck1|recheck2|recheck3|recheck4|recheck5|recheck6|recheck7|recheck8]...   (default:
#   all; candidates — the default-off variants against the defaults — and recheck — what changed since
#   the last GPU run — only when named)
# Results (logs, bench JSON/markdown) go to $OUT when set, else .tilec-out/.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/.tilec-out}
mkdir -p "$OUT"
steps=${*:-all}
want() { [[ " $steps " == *" all "* || " $steps " == *" $1 "* ]]; }
declare -a SUMMARY
record() { SUMMARY+=("$(printf '%-34s %s' "$1" "$2")"); }
run_step() {  # run_step NAME LOGFILE CMD...
  local name=$1 log=$2; shift 2
  local t0=$SECONDS
  if "$@" >"$OUT/$log" 2>&1; then record "$name" "ok ($((SECONDS - t0)) s)"
  else record "$name" "FAILED ($((SECONDS - t0)) s, see $log)"; tail -n 40 "$OUT/$log"; fi
}

PY=$(command -v python3)
export PYTHONPATH=$PWD/python${PYTHONPATH:+:$PYTHONPATH}
export PYTHONUNBUFFERED=1
export TILEC_CACHE_DIR=${TILEC_CACHE_DIR:-$PWD/.tilec-cache}

if want build; then
  build() {
    cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DTILEC_BUILD_PYTHON=ON \
      -DPython_EXECUTABLE="$PY" && ninja -C build-gpu && cp build-gpu/_tilec*.so python/tilec/ &&
      { [ ! -f build-gpu/libtilec_torch_shim.so ] || cp build-gpu/libtilec_torch_shim.so python/tilec/; }
  }
  run_step "build (cmake+ninja)" build.log build
fi
if want test; then
  run_step "C++ tests (ctest)" ctest.log ctest --test-dir build-gpu -j16 --output-on-failure
  run_step "GPU tests (pytest -m gpu)" pytest_gpu.log "$PY" -m pytest -q -m gpu tests/gpu
fi
if want corpus && [ -d "${TILEC_UPSTREAM_DIR:-../shared/upstream}/tilelang/examples" ]; then
  # Upstream TileLang's examples, unmodified, each under 120 s, 8 at a time (docs/COMPAT.md, GPU
  # mode). Writes $OUT/corpus_gpu.json, the table $OUT/corpus_gpu.md and one log per example in
  # $OUT/corpus_gpu_logs/. CORPUS_SHARD=K/N runs every N-th example from the K-th (a full run can
  # exceed one device call); merge the shards here with
  #   python tests/upstream/run_corpus.py --gpu --docs-from-report corpus_gpu*.json
  shard=${CORPUS_SHARD:+--shard $CORPUS_SHARD}
  report="$OUT/corpus_gpu${CORPUS_SHARD:+_$(echo "$CORPUS_SHARD" | tr / -)}.json"
  run_step "upstream corpus (GPU mode)" corpus.log "$PY" tests/upstream/run_corpus.py --gpu --jobs 8 \
    --timeout 120 $shard --report "$report"
  tail -n 3 "$OUT/corpus.log"
elif want corpus; then
  record "upstream corpus (GPU mode)" "SKIPPED (no ../shared/upstream/tilelang/examples; TILEC_UPSTREAM_DIR names a copy)"
fi
if want examples; then
  for ex in examples/[a-z]*.py; do
    run_step "example $(basename "$ex" .py)" "ex_$(basename "$ex" .py).log" "$PY" "$ex"
  done
fi
if want sanitize; then
  # The sanitizer gate: every example (its first case) under all four tools. A full gate is
  # about 14 examples x 4 tools: SANITIZE_EXAMPLES="gemm softmax" / SANITIZE_TOOLS="memcheck"
  # narrow it to fit one device call.
  examples=${SANITIZE_EXAMPLES:-$(for e in examples/[a-z]*.py; do basename "$e" .py; done)}
  for ex in $examples; do
    for tool in ${SANITIZE_TOOLS:-memcheck racecheck synccheck initcheck}; do
      run_step "sanitizer $tool $ex" "san_${tool}_$ex.log" env TILEC_EXAMPLE_QUICK=1 \
        compute-sanitizer --tool "$tool" --error-exitcode 1 "$PY" "examples/$ex.py"
    done
  done
  # And a sample of fuzzed programs (SANITIZE_FUZZ_COUNT from seed 100000, each in its own
  # process under the tool; 0 skips it): a report per tool in $OUT/fuzz_san_<tool>.json.
  if [ "${SANITIZE_FUZZ_COUNT:-24}" -gt 0 ]; then
    for tool in ${SANITIZE_TOOLS:-memcheck racecheck synccheck initcheck}; do
      run_step "sanitizer $tool fuzz sample" "san_${tool}_fuzz.log" "$PY" -m tools.fuzz --mode gpu \
        --sanitize "$tool" --count "${SANITIZE_FUZZ_COUNT:-24}" --seed 100000 --jobs 4 --timeout 240 \
        --no-minimize --report "$OUT/fuzz_san_$tool.json"
    done
  fi
fi
if want fuzz; then
  # The differential fuzz (issue 12, docs/RELIABILITY.md): FUZZ_COUNT random tile programs from
  # FUZZ_SEED on the GPU (NaN-poisoned outputs) against the CPU target, FUZZ_JOBS processes, no new
  # program after FUZZ_TIME_LIMIT s. Report: $OUT/fuzz_gpu.json + .txt; minimized failures as
  # tests in $OUT/fuzz_regressions/ (copy them to tests/fuzz_regressions/).
  run_step "fuzz (GPU vs CPU target)" fuzz.log "$PY" -m tools.fuzz --mode gpu --count "${FUZZ_COUNT:-5000}" \
    --seed "${FUZZ_SEED:-0}" --jobs "${FUZZ_JOBS:-8}" --timeout 60 --time-limit "${FUZZ_TIME_LIMIT:-500}" \
    --report "$OUT/fuzz_gpu.json" --regressions-dir "$OUT/fuzz_regressions"
  tail -n 25 "$OUT/fuzz.log"
fi
if want bench; then
  run_step "benchmarks" bench.log "$PY" bench/run_all.py "$OUT"
  # Issue 10's backward (vs cuDNN) and MLA decoding (vs the roofline, FlashMLA's H800 ratio).
  run_step "attention backward + MLA" attention_more.log "$PY" bench/bench_attention_more.py \
    --json "$OUT/attention_more.json"
  tail -n 20 "$OUT/attention_more.log"
  # Issue 13's transpose: bank-aware shared layout against row-major, torch and a copy.
  run_step "transpose (shared layout)" transpose.log "$PY" bench/bench_transpose.py --json "$OUT/transpose.json"
  tail -n 6 "$OUT/transpose.log"
  # Issue 11's autotune target: upstream's example_gemm_autotune.py --use_autotune (288 configs),
  # unmodified, cold cache: wall time, compile / benchmark split, winner against every config re-timed.
  if [ -f "${TILEC_UPSTREAM_DIR:-../shared/upstream}/tilelang/examples/gemm/example_gemm_autotune.py" ]; then
    run_step "autotune upstream GEMM example" autotune.log "$PY" bench/autotune_upstream_example.py \
      --json "$OUT/autotune.json"
    tail -n 3 "$OUT/autotune.log"
  fi
fi

# What changed since the last GPU run (each session keeps this list current; not part of `all`),
# in parts that each fit one device call: recheck1 .. recheck8 (recheck: all of them).
# Since the thirteenth session's last call (e0079eb): the backward reads its LSE / Delta rows from
# shared memory only where seq_len % 4 == 0 (the example and the op's GPU tests), warp
# specialization declines gemms whose register operand is staged later (upstream's mhc_pre and
# w4a8 GEMM, failing in the last corpus run), the worker-process compiles' progress bar and
# first-job rule (the autotune target, upstream's gemv and kda examples, par_compile scaling).
rc_want() { [[ " $steps " == *" recheck "* || " $steps " == *" recheck$1 "* ]]; }
if rc_want 1; then
  run_step "example flash_attention_bwd" recheck_bwd.log "$PY" examples/flash_attention_bwd.py
  tail -n 3 "$OUT/recheck_bwd.log"
  run_step "GPU tests: flash_attn op, torch op" recheck_tests.log "$PY" -m pytest -q -m gpu \
    tests/gpu/test_flash_attn_op.py tests/gpu/test_torch_op_gpu.py tests/gpu/test_autotune_gpu.py
  run_step "sanitizer racecheck bwd (ragged, in place)" recheck_san_bwd.log env TILEC_EXAMPLE_CASES=2,3 \
    compute-sanitizer --tool racecheck --error-exitcode 1 "$PY" examples/flash_attention_bwd.py
fi
if rc_want 2; then
  up="${TILEC_UPSTREAM_DIR:-../shared/upstream}/tilelang/examples"
  if [ -d "$up" ]; then
    for ex in deepseek_mhc/example_mhc_pre.py dequantize_gemm/example_dequant_gemm_w4a8.py gemv/example_gemv.py \
              kda/chunk_bwd_dqkwg.py; do
      run_step "upstream $ex" "recheck_$(basename "$ex" .py).log" env TILEC_CACHE_DIR=/tmp/tilec-recheck-cache \
        timeout 150 "$PY" -m tilec.run "$up/$ex"
      tail -n 2 "$OUT/recheck_$(basename "$ex" .py).log"
    done
  fi
fi
if rc_want 4; then
  # Changed after the fifteenth session's last device call: the fp8 forward with
  # tilec.defer_row_sums (on by default), causal d128 below 4096 keys back on 128-key blocks
  # (the forward grid's causal d128 rows), the op's GPU tests. (Ran in the sixteenth session's
  # call 1: all pass.)
  run_step "example flash_attention_fp8" recheck_fp8.log "$PY" examples/flash_attention_fp8.py
  tail -n 2 "$OUT/recheck_fp8.log"
  run_step "forward grid d128" recheck_fwd.log "$PY" bench/bench_attention_more.py --part fwd --dims 128 \
    --fwd-block-n 0 --json "$OUT/recheck_fwd.json"
  grep -E "^  fwd|geomean" "$OUT/recheck_fwd.log"
  run_step "GPU tests: flash_attn op" recheck_op.log "$PY" -m pytest -q -m gpu tests/gpu/test_flash_attn_op.py
fi
if rc_want 5; then
  # Changed after the sixteenth session's last device call: MLA decoding with one split is one
  # kernel writing the output (no float32 partials, no combine launch) — the example's two new
  # cases, the MLA grid (split 1 wins the short rows), memcheck on the three-warpgroup forward.
  run_step "example mla_decode" recheck_mla.log "$PY" examples/mla_decode.py
  tail -n 2 "$OUT/recheck_mla.log"
  run_step "MLA grid" recheck_mla_grid.log "$PY" bench/bench_attention_more.py --part mla --json "$OUT/recheck_mla.json"
  grep -E "mla b" "$OUT/recheck_mla_grid.log"
  run_step "sanitizer memcheck fwd (three warpgroups)" recheck_san_fwd3.log env TILEC_EXAMPLE_CASES=13 \
    compute-sanitizer --tool memcheck --error-exitcode 1 "$PY" examples/flash_attention.py
  run_step "sanitizer racecheck mla (one split)" recheck_san_mla.log env TILEC_EXAMPLE_CASES=5 \
    compute-sanitizer --tool racecheck --error-exitcode 1 "$PY" examples/mla_decode.py
fi
if rc_want 6; then
  # Left unrun by the seventeenth session's last device call: the SASS check with the backward's
  # TMA reduce-adds (UTMAREDG, no LDL / STL), the flash_attn op's GPU tests past the first 24, and
  # the forward grid since defer_bulk_read_waits changed its epilogue.
  run_step "SASS (Hopper kernels, backward)" recheck_sass.log "$PY" scripts/gpu_hopper_sass.py
  grep -E "bwd|SASS check" "$OUT/recheck_sass.log"
  run_step "GPU tests: flash_attn op" recheck_op.log "$PY" -m pytest -q -m gpu tests/gpu/test_flash_attn_op.py
  run_step "forward grid" recheck_fwd.log "$PY" bench/bench_attention_more.py --part fwd --json "$OUT/recheck_fwd.json"
  grep -E "^  fwd|geomean" "$OUT/recheck_fwd.log"
fi
if rc_want 7; then
  # Eighteenth session: result tiles in column blocks (the peer GEMM text with 4 stages runs
  # persistent; head dim 256 causal attention), 1-D TMA tiles. The GEMM table against upstream
  # needs its site unpacked at TILELANG_PEER_SITE (default /tmp/tlsite; .peer/tilelang-site.tar.xz).
  # SASS of the column-block GEMM, the d256 causal forward and the staged d128 backward (no LDL / STL).
  run_step "SASS (Hopper kernels)" recheck_sass7.log "$PY" scripts/gpu_hopper_sass.py
  grep -E "peer_gemm|d256_causal|bwd|SASS check" "$OUT/recheck_sass7.log"
  for c in tma_store_column_blocks tma_store_epilogue persistent_tma_store one_dim_tma one_dim_store_boxes; do
    run_step "hopper case $c" "recheck_hc_$c.log" "$PY" tests/gpu/hopper_cases.py "$c"
  done
  for tool in memcheck racecheck synccheck; do
    run_step "sanitizer $tool GEMM column blocks" "recheck_san_cb_$tool.log" compute-sanitizer --tool "$tool" \
      --error-exitcode 1 "$PY" tests/gpu/hopper_cases.py tma_store_column_blocks
  done
  run_step "sanitizer synccheck bwd (dV / dK staged, d128 causal ragged)" recheck_san_bwd_sync.log env \
    TILEC_EXAMPLE_CASES=3 compute-sanitizer --tool synccheck --error-exitcode 1 "$PY" examples/flash_attention_bwd.py
  # Head dim 256 non-causal: 64-key blocks leave room for the output's column blocks (128 x 80,
  # the default, leaves 2 KiB: register stores); both in the same rounds.
  run_step "forward d256, key blocks 80 (default) / 64" recheck_fwd256.log "$PY" bench/bench_attention_more.py \
    --part fwd --dims 256 --fwd-block-n 0,64 --json "$OUT/recheck_fwd256.json"
  grep -E "^  fwd|geomean" "$OUT/recheck_fwd256.log"
  run_step "GEMM table, tilec" recheck_pg_tc.log "$PY" bench/peer_gemm.py --impl tilec --configs team,team_s4,quickstart \
    --json "$OUT/recheck_pg_tc.json"
  if [ -d "${TILELANG_PEER_SITE:-/tmp/tlsite}" ]; then
    run_step "GEMM table, upstream TileLang" recheck_pg_tl.log env PYTHONPATH="${TILELANG_PEER_SITE:-/tmp/tlsite}" \
      TILELANG_PRINT_ON_COMPILATION=0 "$PY" bench/peer_gemm.py --impl tilelang --configs team,team_s4,quickstart \
      --json "$OUT/recheck_pg_tl.json"
    "$PY" bench/peer_gemm.py --table "$OUT/recheck_pg_tc.json" "$OUT/recheck_pg_tl.json"
  fi
fi
if rc_want 8; then
  # Nineteenth session: what the GPU did not run of the final code. The forward grid with O over V's
  # stages only in loops of at most 32 steps (head dim 256 up to 2048 keys) and head dim 128
  # non-causal at 176 keys from 8192 keys (from registers); the forward example (TILEC_EXAMPLE_CASES
  # is 0-based: 16 is head dim 256 over V); the SASS of the final kernels.
  run_step "example flash_attention" recheck8_fwd_ex.log "$PY" examples/flash_attention.py
  tail -n 1 "$OUT/recheck8_fwd_ex.log"
  run_step "SASS (Hopper kernels)" recheck8_sass.log "$PY" scripts/gpu_hopper_sass.py
  grep -E "fa_sm90|bwd|SASS check" "$OUT/recheck8_sass.log"
  # Why O over V's stages loses 5% on long loops: both SASS listings, the main loop's opcodes counted.
  run_step "SASS: O over V against registers" recheck8_sass_staging.log "$PY" scripts/gpu_hopper_sass.py \
    --compare-output-staging "$OUT/sass_staging"
  cat "$OUT/recheck8_sass_staging.log"
  run_step "forward grid" recheck8_fwd.log "$PY" bench/bench_attention_more.py --part fwd --json "$OUT/recheck8_fwd.json"
  grep -E "^  fwd|geomean" "$OUT/recheck8_fwd.log"
fi
if rc_want 3; then
  run_step "compile scaling" recheck_scaling.log "$PY" bench/compile_scaling.py --configs 72 --threads 1,16
  cat "$OUT/recheck_scaling.log"
  run_step "autotune upstream GEMM example" recheck_autotune.log "$PY" bench/autotune_upstream_example.py \
    --json "$OUT/recheck_autotune.json"
  tail -n 3 "$OUT/recheck_autotune.log"
fi

if [[ " $steps " == *" gemmtiles "* ]]; then
  # Issue 8's GEMM shapes with the larger tiles cuBLAS uses on this GPU (256x128, 320x128, 192x192;
  # the two warpgroups side by side along N) against the 128x256 defaults, each next to cuBLAS in
  # its own rounds (seventeenth session: written, not yet timed).
  run_step "GEMM larger tiles" gemmtiles.log "$PY" bench/peer_gemm.py --impl tilec \
    --configs team,team_s4,team_wide_256x128,team_wide_320x128,team_wide_320x128_s2,team_wide_192x192 \
    --json "$OUT/gemmtiles.json"
  grep -E "tilec " "$OUT/gemmtiles.log"
fi

if [[ " $steps " == *" masks "* ]]; then
  # unswitch_uniform_conditions (fourteenth session): attention masks tested once per step, the
  # unmasked steps' S gemm clearing itself at run time. The forward quick rows and (MASKS_BWD) the
  # backward with the pass on and off, each pair back to back (cuDNN in each process; each row
  # checked against SDPA), then the attention examples and the op's GPU tests.
  for variant in '"tilec.unswitch_uniform_conditions": true' '"tilec.unswitch_uniform_conditions": false' \
                 '"tilec.defer_accumulator_updates": true'; do
    label=$(echo "$variant" | tr -dc 'a-z_:' | tr ':' '_')
    run_step "FA quick rows, $variant" "masks_fwd_$label.log" "$PY" bench/peer_attention.py --impl tilec --quick \
      --label "$label" --pass-configs "{$variant}" --json "$OUT/masks_fwd_$label.json"
    tail -n 3 "$OUT/masks_fwd_$label.log"
  done
  if [ -n "${MASKS_BWD:-}" ]; then
    for on in true false; do
      run_step "backward, unswitch $on" "masks_bwd_$on.log" "$PY" bench/bench_attention_more.py --part bwd \
        --pass-configs "{\"tilec.unswitch_uniform_conditions\": $on}" --json "$OUT/masks_bwd_$on.json"
      tail -n 14 "$OUT/masks_bwd_$on.log"
    done
  fi
  for ex in flash_attention flash_attention_bwd flash_attention_varlen; do
    run_step "example $ex" "masks_$ex.log" "$PY" "examples/$ex.py"
    tail -n 2 "$OUT/masks_$ex.log"
  done
  run_step "GPU tests: flash_attn op" masks_op.log "$PY" -m pytest -q -m gpu tests/gpu/test_flash_attn_op.py
  # tilec.defer_accumulator_updates (O *= scale between the S and P V issues; off by default).
  run_step "example flash_attention, deferred rescale" masks_defer_ex.log env \
    TILEC_PASS_CONFIGS=tilec.defer_accumulator_updates=true "$PY" examples/flash_attention.py
  tail -n 2 "$OUT/masks_defer_ex.log"
  if [ -n "${MASKS_SANITIZE:-}" ]; then
    # The changed kernels under the sanitizers: forward causal with more keys than queries, ragged
    # (case 8; FWD_CASES), backward causal ragged (3; BWD_CASES).
    for tool in memcheck racecheck synccheck; do
      run_step "sanitizer $tool fwd masks" "masks_san_fwd_$tool.log" env TILEC_EXAMPLE_CASES=${FWD_CASES:-8} \
        compute-sanitizer --tool "$tool" --error-exitcode 1 "$PY" examples/flash_attention.py
      run_step "sanitizer $tool bwd masks" "masks_san_bwd_$tool.log" env TILEC_EXAMPLE_CASES=${BWD_CASES:-3} \
        compute-sanitizer --tool "$tool" --error-exitcode 1 "$PY" examples/flash_attention_bwd.py
    done
  fi
fi
if [[ " $steps " == *" fwdblocks "* ]]; then
  # The forward's blocks per head dim (fifteenth and sixteenth sessions; FlashAttention-3 uses
  # 192 x 128 on three consumer warpgroups at d64, 128 x 176 at d128 non-causal, 128 x 80 at d256;
  # a candidate is block_N or block_M x block_N x threads): examples/flash_attention.py's program at each candidate against
  # cuDNN in the same rounds (FWD_BLOCKS: bench_attention_more.py --fwd-block-n; FWD_FULL=1: the
  # whole FlashAttention-3 grid instead of the quick rows).
  if [ -n "${FWD_FULL:-}" ]; then rows=(--dims "${FWD_DIMS:-64,128,256}"); else rows=(--quick); fi
  run_step "forward block_N candidates" fwdblocks.log "$PY" bench/bench_attention_more.py --part fwd \
    "${rows[@]}" --fwd-block-n "${FWD_BLOCKS:-64:0,128x128x256,192x192x384;128:0,144;256:0,64}" --json "$OUT/fwdblocks.json"
  tail -n 20 "$OUT/fwdblocks.log"
fi
if [[ " $steps " == *" bwdcand "* ]]; then
  # The backward's options (on by default since the thirteenth session: rows_in_shared, LSE /
  # Delta rows from the producer's tiles read by the consumer threads; overlap_softmax, P
  # computed while dP^T runs) against the earlier form, each in its own process with cuDNN beside
  # it; the example's cases and the sanitizers on two of them.
  run_step "example flash_attention_bwd" bwd_ex.log "$PY" examples/flash_attention_bwd.py
  tail -n 3 "$OUT/bwd_ex.log"
  for tool in racecheck synccheck; do
    run_step "sanitizer $tool bwd" "bwd_san_$tool.log" env TILEC_EXAMPLE_CASES=0,9 \
      compute-sanitizer --tool "$tool" --error-exitcode 1 "$PY" examples/flash_attention_bwd.py
  done
  if [ -n "${BWD_BENCH:-}" ]; then
    run_step "backward, default" bwd_default.log "$PY" bench/bench_attention_more.py --part bwd \
      --json "$OUT/bwd_default.json"
    run_step "backward, earlier form" bwd_earlier.log "$PY" bench/bench_attention_more.py --part bwd \
      --bwd-options '{"rows_in_shared": false, "overlap_softmax": false}' --json "$OUT/bwd_earlier.json"
    tail -n 1 "$OUT/bwd_default.log" "$OUT/bwd_earlier.log"
  fi
fi
if [[ " $steps " == *" compilespeed "* ]]; then
  # Parallel compiles (issue 11): threads against processes and par_compile (worker processes
  # fill the disk cache, threads collect); the autotune target program and upstream's gemv
  # example (720 configurations), unmodified, cold caches.
  run_step "compile scaling" compile_scaling.log "$PY" bench/compile_scaling.py --configs 72 --threads 1,16
  cat "$OUT/compile_scaling.log"
  if [ -f "${TILEC_UPSTREAM_DIR:-../shared/upstream}/tilelang/examples/gemm/example_gemm_autotune.py" ]; then
    run_step "autotune upstream GEMM example" autotune.log env \
      "$PY" bench/autotune_upstream_example.py --json "$OUT/autotune.json"
    tail -n 4 "$OUT/autotune.log"
    run_step "upstream gemv example" gemv.log env TILEC_CACHE_DIR=/tmp/tilec-cache-gemv timeout 150 "$PY" -m tilec.run \
      "${TILEC_UPSTREAM_DIR:-../shared/upstream}/tilelang/examples/gemv/example_gemv.py"
  fi
fi

if [[ " $steps " == *" candidates "* ]]; then
  # Variants against the defaults, each pair in the same step (docs/PERFORMANCE.md). Not part of
  # `all`. Each has been measured; they stay here to re-check after related changes:
  # tilec.ws_indirect_copies (the paged / varlen producer, on since the seventh session) against
  # off, for MLA and paged Flash-Decoding; tilec.defer_gemm_waits on the backward (rejected on
  # 2026-12-02: 0.561 against the default's 0.593x cuDNN, 12 bytes of spill at d128); the
  # backward's default blocks against the small ones; tilec.head_copies_after_first_step (off:
  # no gain in the seventh session's grid).
  run_step "MLA, default" cand_mla.log "$PY" bench/bench_attention_more.py --part mla \
    --json "$OUT/cand_mla.json"
  run_step "MLA, ws_indirect_copies off" cand_mla_off.log "$PY" bench/bench_attention_more.py --part mla \
    --pass-configs '{"tilec.ws_indirect_copies": false}' --json "$OUT/cand_mla_off.json"
  run_step "decode, default" cand_dec.log "$PY" bench/bench_attention_more.py --part decode \
    --json "$OUT/cand_dec.json"
  run_step "decode, ws_indirect_copies off" cand_dec_off.log "$PY" bench/bench_attention_more.py --part decode \
    --pass-configs '{"tilec.ws_indirect_copies": false}' --json "$OUT/cand_dec_off.json"
  tail -n 8 "$OUT"/cand_mla.log "$OUT"/cand_mla_off.log "$OUT"/cand_dec.log "$OUT"/cand_dec_off.log
  run_step "backward, tilec.defer_gemm_waits" cand_bwd_defer.log "$PY" bench/bench_attention_more.py --part bwd \
    --pass-configs '{"tilec.defer_gemm_waits": true}' --json "$OUT/cand_bwd_defer.json"
  # dV issued before dS and left running across it (thirteenth session; compile-checked only).
  run_step "backward, dv_before_ds + defer_gemm_waits" cand_bwd_dv.log "$PY" bench/bench_attention_more.py \
    --part bwd --bwd-options '{"dv_before_ds": true}' --pass-configs '{"tilec.defer_gemm_waits": true}' \
    --json "$OUT/cand_bwd_dv.json"
  tail -n 14 "$OUT/cand_bwd_defer.log"
  run_step "backward blocks default vs 64x32x128" cand_bwd.log "$PY" bench/bench_attention_more.py --part bwd \
    --bwd-blocks default,64x32x128 --json "$OUT/cand_bwd.json"
  tail -n 28 "$OUT/cand_bwd.log"
  # The backward with dS stored to shared memory before the dK gemm (ds_to_shared_first; not yet
  # measured: no spills at d64, 52 bytes at d128 non-causal on sm_90a), against the default above.
  run_step "backward, dS to shared first" cand_bwd_dsfirst.log "$PY" bench/bench_attention_more.py --part bwd \
    --bwd-ds-first --json "$OUT/cand_bwd_dsfirst.json"
  tail -n 14 "$OUT/cand_bwd_dsfirst.log"
  # T.set_max_nreg honored (the default since 2026-12-02: 1.5-1.8x faster on these three): upstream's examples
  # that set their warpgroups' register budgets, as written, then with tilec.honor_set_max_nreg=false, then
  # upstream TileLang (peer), one at a time.
  if [ -d "${TILEC_UPSTREAM_DIR:-../shared/upstream}/tilelang/examples" ] && [ -d "${TILELANG_PEER_SITE:-/tmp/tlsite}" ]; then
    NREG="deepseek_mla/example_mla_decode_ws.py,deepseek_v32/sparse_mla_fwd_pipelined.py,deepseek_v32/sparse_mla_fwd_seesaw.py"
    run_step "set_max_nreg honored (default), with the peer" nreg_on.log \
      "$PY" tests/upstream/run_corpus.py --gpu --jobs 1 --timeout 150 --only "$NREG" --peer "${TILELANG_PEER_SITE:-/tmp/tlsite}" \
      --report "$OUT/nreg_on.json"
    run_step "set_max_nreg ignored" nreg_off.log env TILEC_PASS_CONFIGS=tilec.honor_set_max_nreg=false \
      "$PY" tests/upstream/run_corpus.py --gpu --jobs 1 --timeout 150 --only "$NREG" --report "$OUT/nreg_off.json"
    tail -n 4 "$OUT/nreg_on.log" "$OUT/nreg_off.log"; cat "$OUT/nreg_on_timings.md" 2>/dev/null | tail -n 12
  fi
  if [ -n "${CANDIDATE_FA:-}" ]; then
    run_step "FA grid, head copies after step 1" cand_fa.log "$PY" bench/peer_attention.py --impl tilec \
      --label tilec_head_late --pass-configs '{"tilec.head_copies_after_first_step": true}' --json "$OUT/cand_fa_late.json"
    run_step "FA grid, default" cand_fa_default.log "$PY" bench/peer_attention.py --impl tilec --json "$OUT/cand_fa.json"
  fi
fi

echo
echo "==== summary ===="
printf '%s\n' "${SUMMARY[@]}"
[ -f "$OUT/bench.md" ] && cat "$OUT/bench.md"
exit 0
