"""FlashAttention programs in `T` (pure tile language; no torch): the forward and the backward.

These are the one copy of the programs behind `examples/flash_attention.py`,
`examples/flash_attention_bwd.py` and `tilec.ops.flash_attn`.

Layout: Q, O, dO are (batch, seq_len, heads, dim); K, V are (batch, seq_len_kv, heads_kv, dim)
with heads_kv dividing heads (GQA: query head h reads key/value head h // (heads // heads_kv));
fp16 or bf16; accumulation in float32. LSE and Delta are (batch, heads, seq_len) float32, LSE the
natural-log log-sum-exp of each row of scaled scores. Causal masking is top-left aligned, as
torch's scaled_dot_product_attention(is_causal=True): query i sees keys j <= i. `sm_scale`
defaults to 1/sqrt(dim).

Forward (`flash_attention`): one block of `threads` threads owns `block_M` query rows of one
head: Q is staged in shared memory once, then a software-pipelined loop walks the keys `block_N`
at a time:
  S = Q K^T                 (T.gemm, both operands in shared memory, S in registers); S starts
                            at 0 or -inf per element: -inf masks keys past seq_len_kv and, when
                            causal, keys after the query (the gemm accumulates onto it)
  online softmax            (T.reduce_max / T.reduce_sum on the register fragments, exp2)
  O = O * rescale + P V     (P = S cast to 16 bits, a register fragment fed straight to
                             T.gemm as its A operand: tl::gemm_rs / wgmma with A in registers)
Both GEMMs use policy FullRow (every warp along M) so that S and P share one fragment layout.
Partial key blocks are masked (their out-of-range rows of K and V are loaded as zeros), partial
query blocks are guarded. On sm_90a the loop is warp-specialized (a TMA producer warpgroup, wgmma
consumers): the mask is a fill of S, which does not read the pipelined K/V tiles, so it keeps the
loop in the form that pass takes.

Backward (`flash_attention_bwd`), three kernels:
  preprocess   Delta = rowsum(dO * O)
  main         one block per `block_M` keys of one query head; K, V stay in shared memory while
               a pipelined loop walks the queries `block_N` at a time and recomputes
                 P^T  = exp(K Q^T * scale - LSE)       (0 where masked: causal, rows past the end)
                 dP^T = V dO^T
                 dS^T = P^T * (dP^T - Delta) * scale
                 dV += P^T dO,  dK += dS^T Q           (P^T, dS^T straight from registers)
                 dQ += dS K                            (float32, T.atomic_add: blocks share rows)
               dK and dV are per query head, (batch, seq_len_kv, heads, dim): with GQA the caller
               sums each group of `heads // heads_kv` heads.
  postprocess  dQ float32 -> dtype
"""
import tilec.language as T

LOG2E = 1.44269504088896340736
HEAD_DIMS = (64, 128, 256)
DTYPES = ("float16", "bfloat16")
# The shortest sequences `tilec.ops.flash_attn` takes: the forward's smallest query block (64 rows,
# forward_blocks) and the backward's key block (block_M 64).
MIN_SEQ_LEN = 64


# The pass configs the attention programs compile with, in tilec.ops.flash_attn, the examples
# (FlashAttention forward, backward, varlen, fp8, Flash-Decoding, MLA) and the benchmarks: the softmax's T.exp2 is one MUFU.EX2
# (ex2.approx.ftz; results below 2^-126 flush to zero, as FlashAttention's -use_fast_math and
# cuDNN do) instead of exp2f's subnormal handling around it, and T.log2 (the log-sum-exp) is
# __log2f. A flushed term is below 2^-126 of the row's largest, which contributes 1.
PASS_CONFIGS = {"tl.enable_fast_math": True}
# The backward's programs (flash_attention_bwd): its dV / dK gemms stay in flight (dkv_in_flight)
# when the consumer step releases their slots after the dQ gemm's wait.
BACKWARD_PASS_CONFIGS = {**PASS_CONFIGS, "tilec.defer_gemm_waits": True}


# The forward's key block (block_N) per head dim. On sm_90 (measured on the H200, 2026-12-03,
# docs/PERFORMANCE.md, bench_attention_more.py --part fwd, against cuDNN in the same rounds): d64
# 128 keys (0.79x cuDNN, against 0.66x with 64), d128 176 keys, causal from 4096 keys (1.02x
# against 0.92x), non-causal from 8192 (603 / 607 TFLOP/s against 575 / 585 with 128 at 8192 /
# 16384 keys, nineteenth session; at 4096 within 1-2% either way): fewer, longer steps per tile,
# FlashAttention-3's choice for non-causal; d256 128 keys in one stage (cuDNN's block there; two
# stages do not fit beside Q), whose step runs serially, not rotated (its fragments leave too few
# registers: warp_specialize decides), 1.003x cuDNN over 12 rows against 0.928x with 80 keys in two
# stages (twentieth session). Elsewhere (sm_80 and the CPU target) the sizes that fit sm_80's
# registers and shared memory: 64 / 128 / 32.
HOPPER_BLOCK_N = {(64, False): 128, (64, True): 128, (128, False): 176, (128, True): 176, (256, False): 128,
                  (256, True): 128}
PORTABLE_BLOCK_N = {64: 64, 128: 128, 256: 32}


def _is_hopper(target):
    """Whether `target` ("auto": this machine's GPU) compiles for sm_90; False for None and when it
    names no GPU."""
    from tilec.errors import CompileError
    from tilec.jit import normalize_target, resolve_target

    if target is None:
        return False
    try:
        return resolve_target(target).startswith("sm_90")
    except CompileError:
        if normalize_target(target) in ("auto", "cuda"):  # no GPU here: the portable sizes
            return False
        raise


def default_block_N(dim, is_causal, seq_len_kv, target=None):
    """The forward's key block for this head dim on `target` (None: the portable sizes); 64 when
    there are fewer keys. d128 takes 176 keys, causal from 4096 keys on (1.01-1.10x cuDNN there;
    below, the diagonal blocks' waste grows: 0.67x at 512 keys against 0.80x with 128), non-causal
    from 8192 (+4-5% against 128 there; 0.89-0.91x against 0.95x with 128 below 4096 keys)."""
    return _key_block(dim, is_causal, seq_len_kv, _is_hopper(target))


def _key_block(dim, is_causal, seq_len_kv, hopper):
    block_N = HOPPER_BLOCK_N[(dim, bool(is_causal))] if hopper else PORTABLE_BLOCK_N[dim]
    if block_N == 176 and seq_len_kv < (4096 if is_causal else 8192):
        block_N = 128
    return block_N if seq_len_kv >= block_N else 64


# Shared memory a Hopper block may have (227 KiB); the forward's K and V stages must fit beside Q.
HOPPER_SHARED_BYTES = 227 * 1024


def forward_stages(block_M, block_N, dim):
    """The forward's pipeline stages: two (K and V of the next step load while this one runs)
    where two of each fit beside Q in a Hopper block's shared memory, else one (head dim 256 with
    128-key blocks: the producer still loads the next K while this step's P V runs). 16-bit
    elements (DTYPES)."""
    two = (block_M + 4 * block_N) * dim * 2
    return 2 if two <= HOPPER_SHARED_BYTES else 1


def forward_blocks(seq_len, seq_len_kv, dim, is_causal=False, target=None):
    """(block_M, block_N, threads) of the forward for these lengths on `target`: 64-row query blocks
    (128 threads) below 128 queries, the key block of default_block_N. On sm_90 at head dim 64,
    192-row query blocks on three consumer warpgroups (384 threads; FlashAttention-3's block there)
    from 2048 queries, causal from 8192 (measured on the H200, 2026-12-03: 0.93-0.99x cuDNN against
    0.84-0.90x with 128 rows; shorter, the ragged last block of 192 rows costs more than it buys).
    Needs seq_len, seq_len_kv >= MIN_SEQ_LEN."""
    hopper = _is_hopper(target)  # asked once ("auto" asks the driver)
    block_M, threads = (128, 256) if seq_len >= 128 else (64, 128)
    if dim == 64 and seq_len >= (8192 if is_causal else 2048) and hopper:
        block_M, threads = 192, 384
    return block_M, _key_block(dim, is_causal, seq_len_kv, hopper), threads


def backward_blocks(seq_len, seq_len_kv, dim, target=None):
    """(block_M, block_N, threads) of the backward's main kernel: 128 keys x 64 queries on 256
    threads (two consumer warpgroups; no spills on sm_90a at head dim 128, half the dQ atomics per
    FLOP of the small blocks: 0.34 -> 0.50x cuDNN on the H200, docs/PERFORMANCE.md) where the
    lengths allow it, else 64 keys x 32 queries on 128 threads (head dim 256, short sequences).
    Head dim 64 on sm_90 (`target`): 128 keys x 128 queries (FlashAttention-3's block there; half
    the steps, wgmma N 128 for the P^T and dP^T gemms): 1.067x cuDNN over 6 rows against 0.918x
    with 64 queries (H200, 2026-12-03, same rounds)."""
    if dim in (64, 128) and seq_len >= 128 and seq_len_kv >= 128:
        return (128, 128, 256) if dim == 64 and _is_hopper(target) else (128, 64, 256)
    return 64, 32, 128


def flash_attention(batch, heads, seq_len, dim, is_causal=False, block_M=None, block_N=None, dtype="float16",
                    num_stages=None, threads=None, heads_kv=None, seq_len_kv=None, return_lse=False, sm_scale=None,
                    target=None):
    """The forward program: (Q, K, V, Output[, LSE]) -> writes Output (and LSE when return_lse).
    Blocks left out (None) come from forward_blocks for `target`, the target the program will be
    compiled for ("auto": this machine's GPU; None: sizes that fit every target, as on sm_80);
    threads left out with an explicit block_M: 256; num_stages left out: forward_stages."""
    heads_kv = heads if heads_kv is None else heads_kv
    seq_len_kv = seq_len if seq_len_kv is None else seq_len_kv
    if heads % heads_kv != 0:
        raise ValueError(f"flash_attention: heads_kv ({heads_kv}) must divide heads ({heads})")
    if dim not in HEAD_DIMS:
        raise ValueError(f"flash_attention: head dim {dim} is not supported (64, 128 or 256)")
    default_M, default_N, default_threads = forward_blocks(seq_len, seq_len_kv, dim, is_causal, target)
    if block_M is None:
        block_M, threads = default_M, threads or default_threads
    threads = threads or 256
    block_N = block_N or default_N
    num_stages = num_stages or forward_stages(block_M, block_N, dim)
    if seq_len < block_M or seq_len_kv < block_N:
        raise ValueError(f"flash_attention: seq_len ({seq_len}) and seq_len_kv ({seq_len_kv}) must be at least "
                         f"block_M ({block_M}) and block_N ({block_N}); pass smaller blocks")
    groups = heads // heads_kv
    sm_scale = (1.0 / dim) ** 0.5 if sm_scale is None else float(sm_scale)
    scale = sm_scale * LOG2E  # softmax in base 2
    q_shape, kv_shape = (batch, seq_len, heads, dim), (batch, seq_len_kv, heads_kv, dim)
    accum_dtype = "float32"
    ragged_kv = seq_len_kv % block_N != 0

    @T.macro
    def body(Q, K, V, Output, LSE):  # LSE is read only when return_lse
        with T.Kernel(T.ceildiv(seq_len, block_M), heads, batch, threads=threads) as (bx, by, bz):
            Q_shared = T.alloc_shared((block_M, dim), dtype)
            K_shared = T.alloc_shared((block_N, dim), dtype)
            V_shared = T.alloc_shared((block_N, dim), dtype)
            acc_s = T.alloc_fragment((block_M, block_N), accum_dtype)
            acc_s_cast = T.alloc_fragment((block_M, block_N), dtype)
            acc_o = T.alloc_fragment((block_M, dim), accum_dtype)
            scores_max = T.alloc_fragment((block_M,), accum_dtype)
            scores_max_prev = T.alloc_fragment((block_M,), accum_dtype)
            scores_scale = T.alloc_fragment((block_M,), accum_dtype)
            scores_sum = T.alloc_fragment((block_M,), accum_dtype)
            logsum = T.alloc_fragment((block_M,), accum_dtype)
            hk = by // groups

            T.copy(Q[bz, bx * block_M:(bx + 1) * block_M, by, :], Q_shared)
            T.fill(acc_o, 0)
            T.fill(logsum, 0)
            T.fill(scores_max, -T.infinity(accum_dtype))

            loop_range = (T.min(T.ceildiv(seq_len_kv, block_N), T.ceildiv((bx + 1) * block_M, block_N))
                          if is_causal else T.ceildiv(seq_len_kv, block_N))
            for k in T.Pipelined(loop_range, num_stages=num_stages):
                T.copy(K[bz, k * block_N:(k + 1) * block_N, hk, :], K_shared)
                if is_causal:
                    for i, j in T.Parallel(block_M, block_N):
                        acc_s[i, j] = T.if_then_else((bx * block_M + i >= k * block_N + j) and
                                                     (k * block_N + j < seq_len_kv), 0, -T.infinity(accum_dtype))
                elif ragged_kv:
                    for i, j in T.Parallel(block_M, block_N):
                        acc_s[i, j] = T.if_then_else(k * block_N + j < seq_len_kv, 0, -T.infinity(accum_dtype))
                else:
                    T.clear(acc_s)
                T.gemm(Q_shared, K_shared, acc_s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                # Online softmax: running row max, rescale of what was accumulated so far.
                T.copy(scores_max, scores_max_prev)
                T.fill(scores_max, -T.infinity(accum_dtype))
                T.reduce_max(acc_s, scores_max, dim=1, clear=False)
                for i in T.Parallel(block_M):
                    scores_max[i] = T.max(scores_max[i], scores_max_prev[i])
                for i in T.Parallel(block_M):
                    scores_scale[i] = T.exp2(scores_max_prev[i] * scale - scores_max[i] * scale)
                for i, j in T.Parallel(block_M, block_N):
                    acc_s[i, j] = T.exp2(acc_s[i, j] * scale - scores_max[i] * scale)
                T.reduce_sum(acc_s, scores_sum, dim=1)
                for i in T.Parallel(block_M):
                    logsum[i] = logsum[i] * scores_scale[i] + scores_sum[i]
                T.copy(acc_s, acc_s_cast)  # float32 -> 16 bits, register to register
                for i, j in T.Parallel(block_M, dim):
                    acc_o[i, j] *= scores_scale[i]
                T.copy(V[bz, k * block_N:(k + 1) * block_N, hk, :], V_shared)
                T.gemm(acc_s_cast, V_shared, acc_o, policy=T.GemmWarpPolicy.FullRow)
            for i, j in T.Parallel(block_M, dim):
                acc_o[i, j] /= logsum[i]
            T.copy(acc_o, Output[bz, bx * block_M:(bx + 1) * block_M, by, :])
            if return_lse:  # natural log: (log2(sum) + max * scale) / log2(e)
                for i in T.Parallel(block_M):
                    logsum[i] = (T.log2(logsum[i]) + scores_max[i] * scale) / LOG2E
                T.copy(logsum, LSE[bz, by, bx * block_M:(bx + 1) * block_M])

    if not return_lse:
        @T.prim_func
        def flash_fwd(Q: T.Tensor(q_shape, dtype), K: T.Tensor(kv_shape, dtype), V: T.Tensor(kv_shape, dtype),
                      Output: T.Tensor(q_shape, dtype)):
            body(Q, K, V, Output, Output)
        return flash_fwd

    @T.prim_func
    def flash_fwd_lse(Q: T.Tensor(q_shape, dtype), K: T.Tensor(kv_shape, dtype), V: T.Tensor(kv_shape, dtype),
                      Output: T.Tensor(q_shape, dtype), LSE: T.Tensor((batch, heads, seq_len), accum_dtype)):
        body(Q, K, V, Output, LSE)
    return flash_fwd_lse


def flash_attention_bwd(batch, heads, seq_len, dim, is_causal=False, dtype="float16", block_M=None, block_N=None,
                        threads=None, num_stages=2, heads_kv=None, seq_len_kv=None, sm_scale=None,
                        ds_to_shared_first=False, overlap_softmax=True, rows_in_shared=None, dv_before_ds=False,
                        dq_by_tma=None, dkv_in_flight=None, target="auto"):
    """The three programs (preprocess, main, postprocess) of the backward pass:
      preprocess(O, dO, Delta); main(Q, K, V, dO, LSE, Delta, dQ_f32, dK, dV); postprocess(dQ_f32, dQ)
    dQ_f32 is accumulated with atomics: it must start at zero. Blocks left out come from
    backward_blocks(seq_len, seq_len_kv, dim); they do not spill registers on sm_90a.
    ds_to_shared_first (a candidate, off): dS goes to shared memory before the dK gemm reads it
    from registers, not after, so nothing waits for the dK gemm before the dQ gemm's operand
    is in place (bench_attention_more.py --bwd-ds-first times it against the default).
    overlap_softmax (on): the P^T = K Q^T and dP^T = V dO^T gemms are issued together and P^T
    is computed while the second runs (T.wait_wgmma on sm_90a; elsewhere the gemms complete in
    order and the program means the same).
    rows_in_shared (None: on when seq_len % 4 == 0): each step copies its block_N values of LSE
    and Delta to shared memory (the producer's TMA loads on sm_90a, read by the consumer
    threads) instead of reading them from global memory per element. TMA needs the rows' stride
    (seq_len float32 values) to be a multiple of 16 bytes; where it is not, the copies would
    keep the whole loop off the warp-specialized path, so the default reads in place there.
    The two together: 0.59 -> 0.76x cuDNN on the H200 (docs/PERFORMANCE.md, thirteenth
    session); both off, the program is the earlier default.
    dv_before_ds (a candidate, off; needs overlap_softmax): the dV gemm is issued before dS is
    computed and left running (wg_wait=-1, then T.wait_wgmma(1) for dP^T), so the tensor cores
    work while the threads compute dS; the gemm's slot is released after the dK gemm's wait
    only under tilec.defer_gemm_waits (without it, right after the gemm). Not measured yet:
    gpu_check.sh candidates (no spills at d64; 36 bytes at d128 non-causal on sm_90a).
    dkv_in_flight (None: on when `target` compiles for sm_90 and the block has more than one
    consumer warpgroup; with one, two blocks share an SM's registers and it spills): the order of
    FlashAttention-3's backward. The dV gemm is issued as soon as P is cast; dS is cast and goes to
    shared memory; then the dQ gemm (dS^T K, once both warpgroups' dS are there) and the dK gemm,
    all left running (wg_wait=-1), and T.wait_wgmma(1) waits for dV and dQ only: the dK gemm runs
    while the threads store dQ and meet at the barrier its TMA reduce-add needs. Compile the main
    kernel with BACKWARD_PASS_CONFIGS (tilec.defer_gemm_waits: the slots of dO and Q are released
    after the waits that cover their gemms). Measured on the H200 (2026-12-03, same rounds): with
    the dQ gemm last (its wait covering dV and dK) 0.907 -> 0.965x cuDNN over 12 rows; dQ before dK,
    0.956 -> 0.988x at head dim 128 (6 rows, twentieth session).
    dq_by_tma (None: on when `target` compiles for sm_90; "auto", the default target, asks this
    machine's GPU): each step's dQ block goes to shared memory and is added to dQ_f32 with one
    T.atomic_add of the whole tile, which sm_90a issues as TMA reduce-adds from one thread
    (FlashAttention-3's dQ) instead of an atomic per element from every thread; rows past seq_len
    are dropped by TMA as the per-element form skips them. Measured on the H200 (2026-12-03, same
    call): 0.824 -> 0.923x cuDNN over the 12 backward rows (with defer_bulk_read_waits; waiting
    for each reduce-add right after issuing it, 0.800 -> 0.758x). Elsewhere the per-element
    atomics from registers stay (a shared tile would add a round trip there)."""
    if rows_in_shared is None:
        rows_in_shared = seq_len % 4 == 0
    if dq_by_tma is None:
        dq_by_tma = _is_hopper(target)
    if dv_before_ds and not overlap_softmax:
        raise ValueError("flash_attention_bwd: dv_before_ds needs overlap_softmax=True")
    heads_kv = heads if heads_kv is None else heads_kv
    seq_len_kv = seq_len if seq_len_kv is None else seq_len_kv
    if heads % heads_kv != 0:
        raise ValueError(f"flash_attention_bwd: heads_kv ({heads_kv}) must divide heads ({heads})")
    if dim not in HEAD_DIMS:
        raise ValueError(f"flash_attention_bwd: head dim {dim} is not supported (64, 128 or 256)")
    default_M, default_N, default_threads = backward_blocks(seq_len, seq_len_kv, dim, target)
    block_M, block_N, threads = block_M or default_M, block_N or default_N, threads or default_threads
    if dkv_in_flight is None:  # one consumer warpgroup (two blocks per SM, 232 registers) would spill
        dkv_in_flight = not (dv_before_ds or ds_to_shared_first) and threads > 128 and _is_hopper(target)
    if dkv_in_flight and (dv_before_ds or ds_to_shared_first):
        raise ValueError("flash_attention_bwd: dkv_in_flight orders the dV / dK gemms itself (no dv_before_ds, "
                         "ds_to_shared_first)")
    if seq_len < max(block_M, block_N) or seq_len_kv < block_M:
        raise ValueError(f"flash_attention_bwd: seq_len ({seq_len}) must be at least block_M ({block_M}) "
                         f"and block_N ({block_N}), seq_len_kv ({seq_len_kv}) at least block_M")
    groups = heads // heads_kv
    sm_scale = (1.0 / dim) ** 0.5 if sm_scale is None else float(sm_scale)
    scale = sm_scale * LOG2E  # exponentials in base 2
    shape, row_shape = (batch, seq_len, heads, dim), (batch, heads, seq_len)
    kv_shape, dkv_shape = (batch, seq_len_kv, heads_kv, dim), (batch, seq_len_kv, heads, dim)
    accum_dtype = "float32"
    blk = 32

    @T.prim_func
    def preprocess(O: T.Tensor(shape, dtype), dO: T.Tensor(shape, dtype), Delta: T.Tensor(row_shape, accum_dtype)):
        with T.Kernel(heads, T.ceildiv(seq_len, blk), batch, threads=128) as (bx, by, bz):
            o = T.alloc_fragment((blk, dim), dtype)
            do = T.alloc_fragment((blk, dim), dtype)
            prod = T.alloc_fragment((blk, dim), accum_dtype)
            delta = T.alloc_fragment((blk,), accum_dtype)
            T.copy(O[bz, by * blk:(by + 1) * blk, bx, :], o)
            T.copy(dO[bz, by * blk:(by + 1) * blk, bx, :], do)
            for i, j in T.Parallel(blk, dim):
                prod[i, j] = T.cast(o[i, j], accum_dtype) * T.cast(do[i, j], accum_dtype)
            T.reduce_sum(prod, delta, dim=1)
            T.copy(delta, Delta[bz, bx, by * blk:(by + 1) * blk])

    @T.prim_func
    def flash_bwd(Q: T.Tensor(shape, dtype), K: T.Tensor(kv_shape, dtype), V: T.Tensor(kv_shape, dtype),
                  dO: T.Tensor(shape, dtype), LSE: T.Tensor(row_shape, accum_dtype),
                  Delta: T.Tensor(row_shape, accum_dtype), dQ: T.Tensor(shape, accum_dtype),
                  dK: T.Tensor(dkv_shape, dtype), dV: T.Tensor(dkv_shape, dtype)):
        with T.Kernel(T.ceildiv(seq_len_kv, block_M), heads, batch, threads=threads) as (bx, by, bz):
            K_shared = T.alloc_shared((block_M, dim), dtype)
            V_shared = T.alloc_shared((block_M, dim), dtype)
            q = T.alloc_shared((block_N, dim), dtype)
            do = T.alloc_shared((block_N, dim), dtype)
            dsT_shared = T.alloc_shared((block_M, block_N), dtype)
            if rows_in_shared:
                lse_shared = T.alloc_shared((1, block_N), accum_dtype)
                delta_shared = T.alloc_shared((1, block_N), accum_dtype)
            qkT = T.alloc_fragment((block_M, block_N), accum_dtype)
            dpT = T.alloc_fragment((block_M, block_N), accum_dtype)
            pT_cast = T.alloc_fragment((block_M, block_N), dtype)
            dsT_cast = T.alloc_fragment((block_M, block_N), dtype)
            dv = T.alloc_fragment((block_M, dim), accum_dtype)
            dk = T.alloc_fragment((block_M, dim), accum_dtype)
            dq = T.alloc_fragment((block_N, dim), accum_dtype)
            if dq_by_tma:
                dq_shared = T.alloc_shared((block_N, dim), accum_dtype)
            hk = by // groups

            T.copy(K[bz, bx * block_M:(bx + 1) * block_M, hk, :], K_shared)
            T.copy(V[bz, bx * block_M:(bx + 1) * block_M, hk, :], V_shared)
            T.clear(dv)
            T.clear(dk)
            # Causal: queries before this key block see none of it. The start is clamped so that the
            # loop runs at least once (all masked) for key blocks past the last query.
            loop_end = T.ceildiv(seq_len, block_N)
            loop_st = T.min(T.floordiv(bx * block_M, block_N), loop_end - 1) if is_causal else 0
            for k in T.Pipelined(loop_st, loop_end, num_stages=num_stages):
                T.copy(Q[bz, k * block_N:(k + 1) * block_N, by, :], q)
                T.copy(dO[bz, k * block_N:(k + 1) * block_N, by, :], do)
                if rows_in_shared:
                    T.copy(LSE[bz, by:by + 1, k * block_N:(k + 1) * block_N], lse_shared)
                    T.copy(Delta[bz, by:by + 1, k * block_N:(k + 1) * block_N], delta_shared)
                wait = -1 if overlap_softmax else 0
                T.clear(qkT)
                T.gemm(K_shared, q, qkT, transpose_B=True, policy=T.GemmWarpPolicy.FullRow, wg_wait=wait)
                T.clear(dpT)
                T.gemm(V_shared, do, dpT, transpose_B=True, policy=T.GemmWarpPolicy.FullRow, wg_wait=wait)
                # P^T[i, j] for key bx*block_M + i, query k*block_N + j; LSE and Delta read in place
                # (clamped index: masked entries read a valid row they then ignore) or from shared.
                if overlap_softmax:
                    T.wait_wgmma(1)
                    for i, j in T.Parallel(block_M, block_N):
                        key, query = bx * block_M + i, k * block_N + j
                        live = (key < seq_len_kv) and (query < seq_len) and ((key <= query) if is_causal else True)
                        lse = lse_shared[0, j] if rows_in_shared else LSE[bz, by, T.min(query, seq_len - 1)]
                        qkT[i, j] = T.if_then_else(live, T.exp2(qkT[i, j] * scale - lse * LOG2E), 0)
                    if dv_before_ds:
                        T.copy(qkT, pT_cast)
                        T.gemm(pT_cast, do, dv, policy=T.GemmWarpPolicy.FullRow, wg_wait=-1)
                        T.wait_wgmma(1)  # dP^T done; dV may still run
                    else:
                        T.wait_wgmma(0)
                    for i, j in T.Parallel(block_M, block_N):
                        row = T.min(k * block_N + j, seq_len - 1)
                        delta = delta_shared[0, j] if rows_in_shared else Delta[bz, by, row]
                        dpT[i, j] = qkT[i, j] * (dpT[i, j] - delta) * sm_scale
                else:
                    for i, j in T.Parallel(block_M, block_N):
                        key, query = bx * block_M + i, k * block_N + j
                        row = T.min(query, seq_len - 1)
                        live = (key < seq_len_kv) and (query < seq_len) and ((key <= query) if is_causal else True)
                        qkT[i, j] = T.if_then_else(live, T.exp2(qkT[i, j] * scale - (
                            lse_shared[0, j] if rows_in_shared else LSE[bz, by, row]) * LOG2E), 0)
                        dpT[i, j] = qkT[i, j] * (dpT[i, j] - (
                            delta_shared[0, j] if rows_in_shared else Delta[bz, by, row])) * sm_scale
                if dkv_in_flight:  # FlashAttention-3's order: the dK gemm runs while dQ is stored
                    T.copy(qkT, pT_cast)
                    T.gemm(pT_cast, do, dv, policy=T.GemmWarpPolicy.FullRow, wg_wait=-1)
                    T.copy(dpT, dsT_cast)
                    T.copy(dsT_cast, dsT_shared)
                    T.clear(dq)
                    T.gemm(dsT_shared, K_shared, dq, transpose_A=True, wg_wait=-1)
                    T.gemm(dsT_cast, q, dk, policy=T.GemmWarpPolicy.FullRow, wg_wait=-1)
                    T.wait_wgmma(1)  # dV and dQ done; dK still runs
                else:
                    if not dv_before_ds:
                        T.copy(qkT, pT_cast)
                        T.gemm(pT_cast, do, dv, policy=T.GemmWarpPolicy.FullRow)
                    T.copy(dpT, dsT_cast)
                    if ds_to_shared_first:
                        T.copy(dsT_cast, dsT_shared)
                    T.gemm(dsT_cast, q, dk, policy=T.GemmWarpPolicy.FullRow)
                    if not ds_to_shared_first:
                        T.copy(dsT_cast, dsT_shared)
                if not dkv_in_flight:
                    T.clear(dq)  # its gemm waits for every gemm in flight (wg_wait 0)
                    T.gemm(dsT_shared, K_shared, dq, transpose_A=True)
                if dq_by_tma:
                    T.copy(dq, dq_shared)
                    T.atomic_add(dQ[bz, k * block_N:(k + 1) * block_N, by, :], dq_shared)
                else:
                    for i, j in T.Parallel(block_N, dim):
                        if k * block_N + i < seq_len:
                            T.atomic_add(dQ[bz, k * block_N + i, by, j], dq[i, j])
            T.copy(dv, dV[bz, bx * block_M:(bx + 1) * block_M, by, :])
            T.copy(dk, dK[bz, bx * block_M:(bx + 1) * block_M, by, :])

    @T.prim_func
    def postprocess(dQ: T.Tensor(shape, accum_dtype), dQ_out: T.Tensor(shape, dtype)):
        with T.Kernel(T.ceildiv(seq_len, 64), heads, batch, threads=128) as (bx, by, bz):
            dq = T.alloc_fragment((64, dim), accum_dtype)
            T.copy(dQ[bz, bx * 64:(bx + 1) * 64, by, :], dq)
            T.copy(dq, dQ_out[bz, bx * 64:(bx + 1) * 64, by, :])

    return preprocess, flash_bwd, postprocess
