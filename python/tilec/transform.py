"""`tilelang.transform`: TileLang's pass-config keys (`tilec.PassConfigKey`).

Every upstream key is accepted, so programs keep their `pass_configs`. The keys tilec acts on
are validated and applied by the C++ pass context (`tilec --list-configs`); the others have
no counterpart in tilec's pipeline (TVM simplifier switches, debug dumps, layout plots) and
are dropped when a kernel is compiled, with a debug log line naming them (docs/COMPAT.md).
"""

from __future__ import annotations

import enum
import logging

__all__ = ["PassConfigKey", "split_pass_configs"]

_log = logging.getLogger("tilec.transform")


class PassConfigKey(str, enum.Enum):
    """Pass-config keys by their TileLang names; each value is the key string."""

    TL_SIMPLIFY = "tl.Simplify"
    TL_DISABLE_BUFFER_INIT_CHECK = "tl.disable_buffer_init_check"
    TL_DISABLE_DATA_RACE_CHECK = "tl.disable_data_race_check"
    TL_DISABLE_PRELOWER_SEMANTIC_CHECK = "tl.disable_prelower_semantic_check"
    TL_DISABLE_WARP_SPECIALIZED = "tl.disable_warp_specialized"
    TL_ENABLE_FAST_MATH = "tl.enable_fast_math"
    TL_DISABLE_FAST_MATH = "tl.disable_fast_math"  # older TileLang; tilec's default already
    TL_PTXAS_REGISTER_USAGE_LEVEL = "tl.ptxas_register_usage_level"
    TL_DEVICE_COMPILE_FLAGS = "tl.device_compile_flags"
    TL_EMIT_LINE_DIRECTIVES = "tl.emit_line_directives"
    TL_CONFIG_INDEX_BITWIDTH = "tl.config_index_bitwidth"
    TL_ENABLE_REDUCER_PLAN_VERBOSE = "tl.enable_reducer_plan_verbose"
    TL_LAYOUT_COST_MODEL = "tl.layout_cost_model"
    TL_REDUCER_FORCE_BASELINE = "tl.reducer_force_baseline"
    TL_DISABLE_TMA_LOWER = "tl.disable_tma_lower"
    TL_DISABLE_SAFE_MEMORY_ACCESS = "tl.disable_safe_memory_legalize"
    TL_DISABLE_VECTORIZE_256 = "tl.disable_vectorize_256"
    TL_ENABLE_ASYNC_COPY = "tl.enable_async_copy"
    TL_ENABLE_LOWER_LDGSTG = "tl.enable_lower_ldgstg"
    TL_ENABLE_LOWER_LDGSTG_PREDICATED = "tl.enable_lower_ldgstg_predicated"
    TL_ENABLE_VECTORIZE_PLANNER_VERBOSE = "tl.enable_vectorize_planner_verbose"
    TL_DISABLE_WGMMA = "tl.disable_wgmma"
    TL_DEBUG_MERGE_SHARED_MEMORY_ALLOCATIONS = "tl.debug_merge_shared_memory_allocations"
    TL_ENABLE_AGGRESSIVE_SHARED_MEMORY_MERGE = "tl.enable_aggressive_shared_memory_merge"
    TL_DISABLE_SHARED_MEMORY_REUSE = "tl.disable_shared_memory_reuse"
    TL_DISABLE_SHUFFLE_ELECT = "tl.disable_shuffle_elect"
    TL_DISABLE_LOOP_UNSWITCHING = "tl.disable_loop_unswitching"
    TL_DISABLE_THREAD_STORAGE_SYNC = "tl.disable_thread_storage_sync"
    TL_FORCE_LET_INLINE = "tl.force_let_inline"
    TL_AST_PRINT_ENABLE = "tl.ast_print_enable"
    TL_LAYOUT_VISUALIZATION_ENABLE = "tl.layout_visualization_enable"
    TL_LAYOUT_VISUALIZATION_FORMATS = "tl.layout_visualization_formats"
    TL_STORAGE_REWRITE_DETECT_INPLACE = "tl.storage_rewrite_detect_inplace"
    TL_ENABLE_PTXAS_VERBOSE_OUTPUT = "tl.enable_ptxas_verbose_output"
    TL_DISABLE_OUT_OF_BOUND_WARNING = "tl.disable_out_of_bound_warning"
    TL_ENABLE_DUMP_IR = "tl.enable_dump_ir"
    TL_DUMP_IR_DIR = "tl.dump_ir_path"
    TL_PASS_PROFILE = "tl.pass_profile"
    TL_PASS_PROFILE_THRESHOLD_MS = "tl.pass_profile_threshold_ms"
    TIR_ENABLE_EQUIV_TERMS_IN_CSE = "tir.enable_equiv_terms_in_cse_tir"
    TIR_DISABLE_CSE = "tirx.disable_cse_tir"
    TIR_SIMPLIFY = "tirx.Simplify"
    TIR_DISABLE_STORAGE_REWRITE = "tirx.disable_storage_rewrite"
    TIR_DISABLE_VECTORIZE = "tirx.disable_vectorize"
    TIR_USE_ASYNC_COPY = "tirx.use_async_copy"
    TIR_ENABLE_DEBUG = "tirx.enable_debug"
    TIR_MERGE_STATIC_SMEM = "tirx.merge_static_smem"
    TIR_NOALIAS = "tirx.noalias"
    CUDA_KERNELS_OUTPUT_DIR = "cuda.kernels_output_dir"

    def __str__(self) -> str:
        return self.value


# TileLang spellings of keys tilec knows under another name.
_RENAMED = {"tirx.disable_vectorize": "tir.disable_vectorize"}


def _known_keys() -> set:
    from . import _tilec

    keys = getattr(_tilec, "config_keys", None)
    if keys is None:
        return set()
    return {k if isinstance(k, str) else k[0] for k in keys()}


def split_pass_configs(configs: dict) -> dict:
    """The configs tilec acts on (keys as strings); keys of PassConfigKey that tilec has no
    counterpart for are dropped (logged). Unknown strings stay, so the C++ side reports them."""
    known = _known_keys()
    kept = {}
    upstream_only = {k.value for k in PassConfigKey}
    for key, value in configs.items():
        name = str(getattr(key, "value", key))
        name = _RENAMED.get(name, name)
        if known and name not in known and name in upstream_only:
            _log.debug("pass config %s has no counterpart in tilec; ignored", name)
            continue
        kept[name] = value
    return kept
