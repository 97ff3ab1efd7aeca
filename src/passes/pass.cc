// The pass manager: PassContext config keys (validated against one registry) and
// run_passes with its instruments.
//
// Instruments, all driven by knobs (support/knobs.h) read once per run_passes call:
//   TILEC_DUMP_IR     after each pass that changed the function (same object: unchanged,
//                     the fast path; else structural_equal decides), print its T-script
//                     to stderr when the kernel or pass name matches the filter.
//   TILEC_DUMP_DIR    write the input and the result of every pass that ran, changed or
//                     not, to <dir>/<kernel>/<NN>_<pass>.py (NN: 00 = input, then the
//                     pass's 1-based position in the list, so names are stable when a
//                     pass is disabled).
//   TILEC_TIME_PASSES print each pass's wall time to stderr when the list is done.
#include "tilec/passes/pass.h"

#include <algorithm>
#include <chrono>
#include <cctype>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "tilec/ir/printer.h"
#include "tilec/ir/structural.h"
#include "tilec/support/diag.h"
#include "tilec/support/dump.h"
#include "tilec/support/knobs.h"
#include "tilec/support/text_diff.h"

namespace tilec::passes {

namespace {

// TileLang's "tl.*" names are accepted so that TileLang programs keep their pass_configs;
// keys that tilec does not act on yet say so in their help.
const std::vector<ConfigKey> kConfigKeys = {
    {"tl.disable_tma_lower", false, "Never lower T.copy to TMA (use cp.async / SIMT copies)."},
    {"tl.disable_warp_specialized", false,
     "Do not warp-specialize pipelined loops on sm_90+ (no producer/consumer warpgroups)."},
    {"tl.enable_fast_math", false, "Compile with fast math (approximate division, exp, ...)."},
    {"tl.disable_vectorize", false, "Do not vectorize loops into wide loads/stores."},
    {"tir.disable_vectorize", false, "Alias of tl.disable_vectorize (TileLang/TVM spelling)."},
    {"tl.disable_vectorize_256", false, "Do not use 256-bit global loads/stores."},
    {"tl.disable_wgmma", false, "Do not use wgmma for T.gemm on sm_90a (use mma.sync)."},
    {"tl.disable_safe_memory_legalize", false,
     "Do not insert bounds guards on global memory accesses (unsafe for partial tiles)."},
    {"tl.disable_dynamic_tail_split", false,
     "Do not split loops with symbolic extents into main and tail parts (accepted; no effect yet)."},
    {"tl.dynamic_alignment", int64_t{16},
     "Alignment in elements assumed for symbolic dimensions (accepted; no effect yet)."},
    {"tl.config_index_bitwidth", int64_t{32},
     "Bit width of tensor offset arithmetic: 32 (the default: int32 wherever the shapes allow, and a launch "
     "whose tensor spans 2^31 elements is refused with this key in the hint) or 64 (every tensor parameter "
     "indexed with int64)."},
    {"tl.disable_gemm_overlap", false,
     "Keep T.gemm main loops as written: no operand fragments carried across iterations "
     "(overlap_gemm_mainloop). Without this key tilec also drops the overlap by itself for a "
     "kernel where it makes ptxas spill registers."},
    {"tl.disable_thread_storage_sync", false,
     "Do not insert __syncthreads between shared memory accesses (unsafe; for debugging)."},
    {"tl.enable_aggressive_shared_memory_merge", false,
     "Let shared buffers with disjoint lifetimes share memory more aggressively."},
    {"tl.enable_ptxas_verbose_output", false, "Print the ptxas report for every compile."},
    {"tl.device_compile_flags", std::string(), "Extra flags for NVRTC/nvcc, separated by spaces."},
    {"tilec.line_directives", false,
     "Emit #line directives pointing back to the kernel source (also TILEC_LINE_DIRECTIVES)."},
    {"tilec.wgmma_partition", std::string(),
     "How wgmma splits a T.gemm with policy Square over warpgroups: \"\" (TileLang's Square), \"FullRow\" or "
     "\"FullCol\". Only speed changes."},
    {"tilec.persistent", true,
     "Warp-specialized loops become persistent kernels (when the shared buffers fit side by side): one block "
     "per SM (two for one consumer warpgroup) loops over the tiles, and the producer loads the next tile during "
     "this one's epilogue. False: one block per tile."},
    {"tilec.persistent_uneven", true,
     "Also when the loop's step count depends on one block index (causal attention): the tiles run in order of "
     "their work and the blocks take them in a snake. False: such kernels keep one block per tile."},
    {"tilec.defer_bulk_read_waits", true,
     "A TMA store (or reduce-add) inside a loop waits for its shared-memory source at the next block barrier "
     "instead of right after it is issued, so the issuing warp goes on. Only speed changes."},
    {"tilec.persistent_clusters", true,
     "Also kernels with a cluster along one grid dimension (T.Kernel(..., cluster_dims=)) of a constant extent it "
     "divides, with even tiles: the clusters take cluster tiles, each block the tile of its rank. False: such kernels "
     "keep one block per tile."},
    {"tilec.producer_head_copies", true,
     "In a warp-specialized kernel, a T.copy global -> shared ahead of the pipelined loop whose tile only the "
     "loop's gemms read (attention's Q) is a TMA load by the producer, once per tile through its own barrier "
     "pair; persistent kernels then load the next tile's Q during this tile's epilogue. Only speed changes."},
    {"tilec.head_copies_after_first_step", false,
     "With tilec.producer_head_copies: the producer issues the first step's copies of a tile before its "
     "head copies (the first step's slots free up during the previous tile, the head's only at its end). "
     "Off by default: not yet measured on the GPU."},
    {"tilec.ws_indirect_copies", true,
     "Warp specialization also takes loops whose copies' regions (or the values the loop depends on) read "
     "global tensors the kernel never writes: a paged cache's block table, varlen offsets (MLA and paged "
     "decoding, varlen attention); the producer thread reads them. Only speed changes."},
    {"tilec.defer_gemm_waits", false,
     "In a warp-specialized consumer step, a gemm whose next statement does not touch its accumulator or "
     "register operand (nor write its shared operands) is left running; its wait goes before the first "
     "statement that does; gemms the program leaves running (wg_wait=-1) are tracked too, and T.wait_wgmma(n) "
     "retires all but the n newest. Off by default (the attention backward: no gain in the eighth session)."},
    {"tilec.stmatrix", false,
     "On sm_90, T.copy of a whole 16-bit fragment into a shared buffer of its dtype (the attention "
     "backward's dS, MLA's P) is one stmatrix.x4 per four register pairs when the fragment's layout holds "
     "8 x 8 matrices (copy_stmatrix), instead of a store per pair. Off: on the H200 (2026-12-03) the "
     "backward ran 1.022x cuDNN with it against 1.039x without (head dim 64 causal +3%, head dim 128 "
     "non-causal -4 to -9%: ptxas spills 32 bytes there with it). Only speed changes."},
    {"tilec.honor_set_max_nreg", true,
     "T.set_max_nreg / T.inc_max_nreg / T.dec_max_nreg set the register budget of the warpgroup that runs "
     "them (setmaxnreg, sm_90a), as upstream TileLang does, and such a kernel is not warp-specialized by "
     "tilec. On by default (measured on the H200, 2026-12-02: upstream's hand-split MLA kernels run 1.5-1.8x "
     "faster than with the budgets ignored); off, they have no effect."},
    {"tilec.pingpong", true,
     "Two consumer warpgroups of a warp-specialized loop whose steps run more than gemms (attention) take "
     "turns at the step's first gemm, so that one's other work overlaps the other's gemm. Only speed changes."},
    {"tilec.intra_wg_overlap", true,
     "A warp-specialized step S = gemm(...); softmax; O += gemm(P, V) (attention) is rotated: step k issues "
     "S_k and P_{k-1} V_{k-1} together and runs the softmax of S_k while P V runs (FlashAttention-3's "
     "intra-warpgroup overlap). Only speed changes."},
    {"tilec.defer_accumulator_updates", false,
     "In that rotated step, statements that only update O (the rescale O *= scale) run in the next step "
     "right after S is issued, while it runs (FlashAttention-3's order), instead of before the next turn. "
     "Only speed changes."},
    {"tilec.tma_multicast", true,
     "In a kernel with clusters, a tile every CTA of the cluster loads alike is loaded in bands, each multicast "
     "to all of them (one L2 read instead of one per CTA). False: each CTA loads its own copy. Only speed "
     "changes."},
    {"tilec.stage_output_tiles", true,
     "sm_90: a GEMM-like kernel's T.copy of a whole fragment to global memory after its pipelined loop goes "
     "through a new shared buffer and one TMA store (stage_output_tiles), when the shared memory fits. Only "
     "speed changes."},
    {"tilec.longest_blocks_first", true,
     "A kernel whose main loop's trip count grows with one block index (causal attention) launches its "
     "blocks in decreasing order of that index, longest first (order_blocks_by_work). Only speed changes."},
    {"tilec.bank_aware_layouts", true,
     "A shared buffer only T.Parallel loops touch gets the layout (row-major, a 16-byte-chunk swizzle or a "
     "4-byte-word XOR swizzle) with the fewest shared-memory bank conflicts for those loops' accesses "
     "(layout inference). False: row-major. Only speed changes."},
    {"tilec.unswitch_uniform_conditions", true,
     "A T.Parallel loop inside a loop that tests a condition on its indices (an attention mask) is tested "
     "once per step: when the condition holds for the whole tile, a copy without the test runs. Only speed "
     "changes."},
    {"tilec.defer_row_sums", true,
     "A loop's running sum of row sums (attention's softmax denominator: l = l * scale + reduce_sum(P)) "
     "keeps each thread's partial sum; the threads are combined once after the loop instead of every step "
     "(no shuffles, and no barrier where rows span warpgroups). The sum is reassociated. Measured on the "
     "H200 (2026-12-03): MLA decoding +2%, FlashAttention forward unchanged."},
    {"tilec.fuse_clear_into_gemm", true,
     "T.clear(C) right before T.gemm(A, B, C) becomes the gemm with clear_accum=True (no zeroing loop; the "
     "gemm's first step writes C). Only speed changes."},
    {"tilec.debug_sync", false,
     "Hang detector: mbarrier waits trap after ~2 s with a message naming the kernel, barrier, parity and block "
     "(also TILEC_DEBUG_SYNC)."},
};

const char* type_name(const ConfigValue& v) {
  switch (v.index()) {
    case 0: return "bool";
    case 1: return "int";
    case 2: return "float";
    default: return "string";
  }
}

std::string value_text(const ConfigValue& v) {
  std::ostringstream os;
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, bool>)
          os << (x ? "True" : "False");
        else if constexpr (std::is_same_v<T, std::string>)
          os << '"' << x << '"';
        else
          os << x;
      },
      v);
  return os.str();
}

const ConfigKey* find_key(const std::string& name) {
  for (const auto& k : kConfigKeys)
    if (k.name == name) return &k;
  return nullptr;
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

std::string valid_keys_hint(const std::string& unknown) {
  std::ostringstream os;
  const ConfigKey* closest = nullptr;
  size_t best = 0;
  for (const auto& k : kConfigKeys) {
    size_t d = edit_distance(unknown, k.name);
    if (closest == nullptr || d < best) closest = &k, best = d;
  }
  if (closest != nullptr && best <= std::max<size_t>(3, unknown.size() / 4))
    os << "did you mean '" << closest->name << "'? ";
  os << "valid keys:";
  for (const auto& k : kConfigKeys)
    os << "\n    " << k.name << " (" << type_name(k.default_value)
       << ", default " << value_text(k.default_value) << ")";
  return os.str();
}

// Kernel and pass names become file names.
std::string file_safe(const std::string& name) {
  std::string out = name.empty() ? "unnamed" : name;
  for (char& c : out)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.') c = '_';
  return out;
}

std::string stage_file_name(size_t position, const std::string& pass_name) {
  std::ostringstream os;
  os << std::setw(2) << std::setfill('0') << position << "_" << file_safe(pass_name) << ".py";
  return os.str();
}

bool changed_by_pass(const ir::PrimFunc& before, const ir::PrimFunc& after) {
  if (after.same_as(before)) return false;
  return !ir::structural_equal(before, after);
}

struct PassTiming {
  std::string name;
  double ms = 0;
  bool disabled = false;
  bool failed = false;
};

void print_timings(const std::string& kernel, const std::vector<PassTiming>& timings) {
  double total = 0;
  size_t width = 4;
  for (const auto& t : timings) total += t.ms, width = std::max(width, t.name.size());
  std::ostringstream os;
  os << "tilec: pass times for kernel '" << kernel << "'\n";
  for (const auto& t : timings) {
    os << "  " << std::left << std::setw(static_cast<int>(width)) << t.name << "  ";
    if (t.disabled) {
      os << "  (disabled)\n";
      continue;
    }
    os << std::right << std::fixed << std::setprecision(3) << std::setw(10) << t.ms << " ms"
       << (t.failed ? "  (failed)" : "") << "\n";
  }
  os << "  " << std::left << std::setw(static_cast<int>(width)) << "total" << "  " << std::right
     << std::fixed << std::setprecision(3) << std::setw(10) << total << " ms\n";
  std::cerr << os.str();
}

}  // namespace

const std::vector<ConfigKey>& config_keys() { return kConfigKeys; }

void PassContext::set(const std::string& key, ConfigValue value) {
  const ConfigKey* spec = find_key(key);
  if (spec == nullptr)
    throw_user_error("unknown pass config key '" + key + "'", {}, valid_keys_hint(key));
  // An integer is a fine value for a float key; every other mismatch is an error.
  if (spec->default_value.index() == 2 && value.index() == 1)
    value = static_cast<double>(std::get<int64_t>(value));
  if (value.index() != spec->default_value.index()) {
    throw_user_error("pass config '" + key + "' expects a " + type_name(spec->default_value) +
                         " value, got a " + type_name(value) + " (" + value_text(value) + ")",
                     {},
                     key + ": " + spec->help + " Default: " + value_text(spec->default_value) + ".");
  }
  values_[key] = std::move(value);
}

const ConfigValue& PassContext::get(const std::string& key) const {
  auto it = values_.find(key);
  if (it != values_.end()) return it->second;
  const ConfigKey* spec = find_key(key);
  TILEC_ICHECK(spec != nullptr) << "pass config key '" << key
                                << "' is read but not registered in src/passes/pass.cc";
  return spec->default_value;
}

bool PassContext::get_bool(const std::string& key) const {
  const ConfigValue& v = get(key);
  TILEC_ICHECK(std::holds_alternative<bool>(v)) << "pass config '" << key << "' is not a bool";
  return std::get<bool>(v);
}

int64_t PassContext::get_int(const std::string& key) const {
  const ConfigValue& v = get(key);
  TILEC_ICHECK(std::holds_alternative<int64_t>(v)) << "pass config '" << key << "' is not an int";
  return std::get<int64_t>(v);
}

std::string PassContext::get_string(const std::string& key) const {
  const ConfigValue& v = get(key);
  TILEC_ICHECK(std::holds_alternative<std::string>(v)) << "pass config '" << key << "' is not a string";
  return std::get<std::string>(v);
}

ir::PrimFunc run_passes(const std::vector<Pass>& passes, ir::PrimFunc f, PassContext& ctx) {
  TILEC_ICHECK(f.defined()) << "run_passes on a null function";
  const std::string kernel = f->name;
  const bool dump_ir = !knobs::dump_ir().empty();
  const bool dump_ir_diff = dump_ir && knobs::dump_ir_diff();
  const bool dump_dir = !knobs::dump_dir().empty();
  const bool time_passes = knobs::time_passes();

  const std::string target = ctx.target().str();
  if (dump_dir) dump::write_file(kernel, target, stage_file_name(0, "input"), ir::script(f));
  std::vector<PassTiming> timings;
  for (size_t i = 0; i < passes.size(); ++i) {
    const Pass& pass = passes[i];
    if (ctx.is_disabled(pass.name)) {
      if (time_passes) timings.push_back({pass.name, 0, true});
      continue;
    }
    auto start = std::chrono::steady_clock::now();
    ir::PrimFunc out;
    try {
      out = pass.run(f, ctx);
    } catch (...) {
      // The times so far still help to see where a failing compile went.
      if (time_passes) {
        auto ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
        timings.push_back({pass.name, ms, false, true});
        print_timings(kernel, timings);
      }
      throw;
    }
    auto stop = std::chrono::steady_clock::now();
    TILEC_ICHECK(out.defined()) << "pass '" << pass.name << "' returned no function";
    if (time_passes)
      timings.push_back({pass.name, std::chrono::duration<double, std::milli>(stop - start).count()});
    if (dump_ir && knobs::dump_ir_matches(kernel, pass.name) && changed_by_pass(f, out)) {
      if (dump_ir_diff)
        std::cerr << "# ---- tilec: IR of '" << kernel << "': what pass '" << pass.name << "' changed ----\n"
                  << support::unified_diff(ir::script(f), ir::script(out), "before " + pass.name,
                                           "after " + pass.name)
                  << std::flush;
      else
        std::cerr << "# ---- tilec: IR of '" << kernel << "' after pass '" << pass.name << "' ----\n"
                  << ir::script(out) << std::flush;
    }
    if (dump_dir) dump::write_file(kernel, target, stage_file_name(i + 1, pass.name), ir::script(out));
    f = std::move(out);
  }
  if (time_passes) print_timings(kernel, timings);
  return f;
}

}  // namespace tilec::passes
