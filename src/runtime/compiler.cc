// compile(): PrimFunc -> CompiledArtifact through the caches.
//
//   key = sha256(canonical IR text, target, out_idx, pass configs, compiler identity,
//                line directives, tilec version + build stamp, device library hash)
//   memory cache -> disk cache -> lower_to_cuda -> NVRTC / nvcc -> store in both.
//   (A kernel whose overlapped GEMM main loop makes ptxas spill is built once more without
//   the overlap, and the variant that spills less is stored; a one-line note says so.)
//
// A hit skips the lowering as well, since the entry holds the source and the plan. The
// build stamp (size and mtime of the binary tilec is linked into) makes a rebuilt tilec
// miss the entries of the previous build, so developers never run stale code.
#include <climits>
#include <cstdlib>
#include <dlfcn.h>
#include <sys/stat.h>

#include <atomic>
#include <cstdio>
#include <sstream>

#include "tilec/ir/printer.h"
#include "tilec/ir/visitor.h"
#include "tilec/pipeline/pipeline.h"
#include "tilec/runtime/cache.h"
#include "tilec/target/cuda/explain.h"
#include "tilec/runtime/device_headers.h"
#include "tilec/runtime/nvrtc.h"
#include "tilec/runtime/plan_text.h"
#include "tilec/runtime/sha256.h"
#include "tilec/support/dump.h"
#include "tilec/support/diag.h"
#include "tilec/support/knobs.h"
#include "tilec/support/strings.h"
#include "tilec/support/warnings.h"
#include "tilec/target/cuda/lower.h"
#include "tilec/target/target.h"

namespace tilec::runtime {
namespace {

std::string build_stamp() {
  static const std::string stamp = [] {
    std::string s = std::string("tilec ") + TILEC_VERSION;
    Dl_info info;
    if (::dladdr(reinterpret_cast<void*>(&build_stamp), &info) && info.dli_fname) {
      // The canonical path: the loader keeps the path as the importer spelled it, and a
      // sys.path entry with '..' in it (tests/gpu/../../python) named another cache key.
      char canonical[PATH_MAX];
      const char* path = ::realpath(info.dli_fname, canonical) ? canonical : info.dli_fname;
      struct stat st;
      if (::stat(path, &st) == 0) {
        s += " " + std::string(path) + ":" + std::to_string(st.st_size) + ":" + std::to_string(st.st_mtime);
      }
    }
    return s + " device-lib " + embedded_device_headers_digest();
  }();
  return stamp;
}

std::string config_value_text(const passes::ConfigValue& v) {
  std::ostringstream os;
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, bool>) os << "bool:" << (x ? "true" : "false");
        else if constexpr (std::is_same_v<T, int64_t>) os << "int:" << x;
        else if constexpr (std::is_same_v<T, double>) os << "float:" << x;
        else os << "str:" << x.size() << ":" << x;
      },
      v);
  return os.str();
}

// The options part of every key: everything but the program itself.
std::string options_text(const std::string& arch, const std::string& compiler, const CompileOptions& opts) {
  std::ostringstream os;
  os << "target " << arch << "\nout_idx";
  for (int i : opts.out_idx) os << ' ' << i;
  os << "\npass_configs";
  for (const auto& [k, v] : opts.pass_configs) os << ' ' << k << '=' << config_value_text(v);  // std::map: sorted
  os << "\ncompile_flags";
  for (const auto& flag : opts.compile_flags) os << ' ' << flag.size() << ':' << flag;
  os << "\ncompiler " << compiler << ' ' << compiler_identity(compiler) << "\nline_directives "
     << (opts.line_directives || knobs::line_directives()) << "\ndebug_sync " << knobs::debug_sync() << "\n"
     << build_stamp() << "\n";
  return os.str();
}

void mark_outputs(LaunchPlan& plan, const std::vector<int>& out_idx, const std::string& func_name) {
  const int n = static_cast<int>(plan.param_order.size());
  for (int idx : out_idx) {
    int pos = idx < 0 ? n + idx : idx;
    TILEC_USER_CHECK(pos >= 0 && pos < n, SourceLoc{}, "out_idx counts the function's parameters from 0 (or from -1 at the end)")
        << "out_idx " << idx << " is out of range for '" << func_name << "', which has " << n << " parameters";
    auto [is_tensor, index] = plan.param_order[pos];
    TILEC_USER_CHECK(is_tensor, SourceLoc{}, "only tensor parameters can be outputs")
        << "out_idx " << idx << " refers to the scalar parameter '" << plan.scalars[index].name << "' of '" << func_name << "'";
    plan.tensors[index].is_output = true;
  }
}

struct Resolved {
  std::string arch;
  std::string compiler;
};

Resolved resolve(const CompileOptions& opts) {
  return {target::parse_target(opts.target).str(), resolve_compiler(opts.compiler)};
}

// Looks the key up in memory then on disk; stores disk hits in memory.
std::optional<CompiledArtifact> lookup(const std::string& key, const CompileOptions& opts) {
  // TILEC_DISABLE_CACHE turns off both caches (every compile is cold), use_cache=False too.
  if (!opts.use_cache || !disk_cache_enabled()) return std::nullopt;
  if (auto hit = memory_cache_get(key)) {
    CompiledArtifact a = *hit;
    a.from_cache = true;
    return a;
  }
  if (!disk_cache_enabled()) return std::nullopt;
  DiskCache disk(opts.cache_dir.empty() ? default_cache_dir() : opts.cache_dir);
  std::string why;
  auto a = disk.load(key, &why);  // a broken entry is a miss; store() overwrites it
  if (!a && why.rfind("untrusted", 0) == 0) {
    static std::atomic<bool> warned{false};
    if (!warned.exchange(true)) {
      std::fprintf(stderr, "tilec: warning: kernel disk cache entry not used (%s); recompiling\n", why.c_str());
    }
  }
  if (a) memory_cache_put(key, std::make_shared<const CompiledArtifact>(*a));
  return a;
}

void store(const std::string& key, const CompiledArtifact& a, const CompileOptions& opts) {
  if (!opts.use_cache || !disk_cache_enabled()) return;
  memory_cache_put(key, std::make_shared<const CompiledArtifact>(a));
  if (!disk_cache_enabled()) return;
  DiskCache disk(opts.cache_dir.empty() ? default_cache_dir() : opts.cache_dir);
  std::string why;
  if (!disk.store(key, a, &why)) {
    static std::atomic<bool> warned{false};
    if (!warned.exchange(true)) {
      std::fprintf(stderr, "tilec: warning: kernel disk cache not written (%s); set TILEC_CACHE_DIR to a writable directory\n",
                   why.c_str());
    }
  }
}

CompiledArtifact build(std::string source, LaunchPlan plan, const Resolved& r, const std::string& key,
                       const CompileOptions& opts) {
  CudaCompileRequest req;
  req.extra_options = opts.compile_flags;
  req.source = source;
  req.kernel_name = plan.kernel_name;
  req.arch = r.arch;
  req.compiler = r.compiler;
  CudaBinary bin = compile_cuda(req);
  CompiledArtifact a;
  a.cuda_source = std::move(source);
  a.ptx = std::move(bin.ptx);
  a.cubin = std::move(bin.cubin);
  a.ptxas = std::move(bin.ptxas);
  a.plan = std::move(plan);
  a.target = r.arch;
  a.cache_key = key;
  a.from_cache = false;
  return a;
}

std::vector<std::string> split_flags(const std::string& text) {
  std::vector<std::string> flags;
  std::istringstream in(text);
  for (std::string flag; in >> flag;) flags.push_back(flag);
  return flags;
}

// ptxas counts only static shared memory; tilec's shared arena is dynamic (launch plan).
std::string shared_memory_line(const CompiledArtifact& a) {
  return "tilec: shared memory: " + std::to_string(a.plan.dynamic_shared_bytes) + " bytes dynamic (tilec's arena, " +
         "set at launch) + " + std::to_string(a.ptxas.static_shared_bytes) + " bytes static (ptxas)\n";
}

void report_ptxas(const CompiledArtifact& a) {
  std::fprintf(stderr, "tilec: ptxas report for '%s' (%s%s):\n%s%s", a.plan.kernel_name.c_str(), a.target.c_str(),
               a.from_cache ? ", from the cache" : "", a.ptxas.log.c_str(), shared_memory_line(a).c_str());
}

// One TILEC_PASS_CONFIGS value, typed by its key's default (an unknown key keeps the text:
// PassContext::set then names it with the keys it could have meant).
passes::ConfigValue env_config_value(const std::string& key, const std::string& text) {
  const std::string hint = "TILEC_PASS_CONFIGS takes key=value pairs separated by commas, e.g. "
                           "TILEC_PASS_CONFIGS=tilec.intra_wg_overlap=false,tl.disable_tma_lower=true";
  for (const auto& k : passes::config_keys()) {
    if (k.name != key) continue;
    try {
      switch (k.default_value.index()) {
        case 0:
          if (text == "1" || text == "true" || text == "True" || text == "on") return true;
          if (text == "0" || text == "false" || text == "False" || text == "off") return false;
          break;
        case 1: {
          size_t used = 0;
          int64_t v = std::stoll(text, &used);
          if (used == text.size()) return v;
          break;
        }
        case 2: {
          size_t used = 0;
          double v = std::stod(text, &used);
          if (used == text.size()) return v;
          break;
        }
        default: return text;
      }
    } catch (const std::exception&) {
    }
    throw_user_error("TILEC_PASS_CONFIGS: '" + text + "' is not a value of pass config '" + key + "'", {},
                     key + ": " + k.help);
  }
  if (key.empty()) throw_user_error("TILEC_PASS_CONFIGS: an entry has no key", {}, hint);
  return text;
}

// The options with TILEC_PASS_CONFIGS added under the program's own pass configs (which win).
CompileOptions with_env_pass_configs(const CompileOptions& opts) {
  const std::string text = knobs::pass_configs();
  if (text.empty()) return opts;
  CompileOptions out = opts;
  std::stringstream items(text);
  for (std::string item; std::getline(items, item, ',');) {
    item = support::trim(item);
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    if (eq == std::string::npos)
      throw_user_error("TILEC_PASS_CONFIGS: '" + item + "' is not key=value", {},
                       "e.g. TILEC_PASS_CONFIGS=tilec.intra_wg_overlap=false");
    const std::string key = support::trim(item.substr(0, eq));
    if (!out.pass_configs.count(key)) out.pass_configs[key] = env_config_value(key, support::trim(item.substr(eq + 1)));
  }
  return out;
}

// Everything compile() decides before lowering: target, compiler, pass context, the
// effective options (device flags from the pass configs) and the cache key.
struct Prepared {
  Resolved resolved;
  passes::PassContext ctx;
  CompileOptions effective;
  std::string key;
  bool print_ptxas = false;
};

Prepared prepare(const ir::PrimFunc& f, const CompileOptions& given) {
  const CompileOptions opts = with_env_pass_configs(given);
  Prepared p{resolve(opts), passes::PassContext(target::parse_target(opts.target)), opts, "", false};
  // Unknown or ill-typed pass configs are errors even when the cache would hit.
  for (const auto& [k, v] : opts.pass_configs) p.ctx.set(k, v);
  if (opts.line_directives) p.ctx.set("tilec.line_directives", true);
  for (const auto& flag : split_flags(p.ctx.get_string("tl.device_compile_flags"))) p.effective.compile_flags.push_back(flag);
  p.print_ptxas = p.ctx.get_bool("tl.enable_ptxas_verbose_output");
  Sha256 h;
  h.update("tilec-kernel-key 1\nir\n");
  h.update(ir::script(f));
  h.update("\n");
  h.update(options_text(p.resolved.arch, p.resolved.compiler, p.effective));
  p.key = h.hex_digest();
  return p;
}

}  // namespace

std::string compile_cache_key(const ir::PrimFunc& f, const CompileOptions& opts) { return prepare(f, opts).key; }

std::string explain_program(const ir::PrimFunc& f, const CompileOptions& opts) {
  Prepared p = prepare(f, opts);
  return cuda::format_explain(cuda::explain(f, p.ctx));
}

std::vector<layout::InferredLayout> program_layouts(const ir::PrimFunc& f, const CompileOptions& opts) {
  Prepared p = prepare(f, opts);
  std::vector<passes::Pass> through_inference;
  for (auto& pass : pipeline::cuda_pipeline(p.ctx.target())) {
    const bool last = pass.name == "layout_inference";
    through_inference.push_back(std::move(pass));
    if (last) break;
  }
  return layout::inferred_layouts(passes::run_passes(through_inference, f, p.ctx));
}

namespace {
// TILEC_DUMP_DIR: the device-side stages next to the pass manager's IR dumps (a cache hit
// dumps too, so a dump is complete whether or not the kernel was compiled this time).
void dump_artifact(const CompiledArtifact& a) {
  if (!dump::enabled()) return;
  const std::string& kernel = a.plan.kernel_name;
  dump::write_file(kernel, a.target, kernel + ".cu", a.cuda_source);
  if (!a.ptx.empty()) dump::write_file(kernel, a.target, kernel + ".ptx", a.ptx);
  dump::write_file(kernel, a.target, kernel + "." + a.target + ".cubin", std::string_view(a.cubin.data(), a.cubin.size()));
  dump::write_file(kernel, a.target, kernel + ".ptxas.log", a.ptxas.log + shared_memory_line(a));
}
}  // namespace

namespace {
constexpr const char* kGemmOverlapConfig = "tl.disable_gemm_overlap";

int64_t spill_bytes(const CompiledArtifact& a) { return a.ptxas.spill_stores_bytes + a.ptxas.spill_loads_bytes; }

// Whether overlap_gemm_mainloop rewrote a loop of this kernel.
bool uses_gemm_overlap(const ir::PrimFunc& lowered) {
  bool found = false;
  ir::for_each_node(lowered->body, [&](const ir::Node* n) {
    auto* c = dynamic_cast<const ir::CallNode*>(n);
    found |= c && c->op == "tl.gemm_ss_overlap";
  });
  return found;
}
}  // namespace

CompiledArtifact compile(const ir::PrimFunc& f, const CompileOptions& opts) {
  TILEC_ICHECK(f.defined()) << "compile() of a null function";
  Prepared p = prepare(f, opts);
  if (auto hit = lookup(p.key, p.effective)) {
    if (p.print_ptxas) report_ptxas(*hit);
    dump_artifact(*hit);
    return std::move(*hit);
  }
  bool overlapped = false;
  auto lower_and_build = [&](passes::PassContext& ctx) {
    cuda::DeviceModule m = cuda::lower_to_cuda(f, ctx);
    overlapped = uses_gemm_overlap(m.lowered);
    mark_outputs(m.plan, opts.out_idx, f->name);
    check_launch_plan(m.plan);
    return build(std::move(m.source), std::move(m.plan), p.resolved, p.key, p.effective);
  };
  CompiledArtifact a = lower_and_build(p.ctx);
  // overlap_gemm_mainloop keeps a tile's operand fragments live across the loop's barrier:
  // more registers for less stall. Where that makes ptxas spill (and the user left the
  // choice to tilec), the kernel is built again without it and the one that spills less is
  // kept (the overlapped one on a tie). Deterministic, so the cache key stays the same.
  if (overlapped && spill_bytes(a) > 0 && !opts.pass_configs.count(kGemmOverlapConfig)) {
    passes::PassContext plain = p.ctx;
    plain.set(kGemmOverlapConfig, true);
    CompiledArtifact b = lower_and_build(plain);
    const bool keep_plain = spill_bytes(b) < spill_bytes(a);
    note(f->loc, "kernel '" + a.plan.kernel_name + "' (" + a.target + ") built twice: with the GEMM main loop " +
                     "overlapped ptxas spills " + std::to_string(spill_bytes(a)) + " bytes, without it " +
                     std::to_string(spill_bytes(b)) + "; kept the " + (keep_plain ? "plain" : "overlapped") +
                     " one (pass_configs={'" + kGemmOverlapConfig + "': True} builds only the plain one)");
    if (keep_plain) a = std::move(b);
  }
  store(p.key, a, p.effective);
  if (p.print_ptxas) report_ptxas(a);
  dump_artifact(a);
  return a;
}

CompiledArtifact compile_source(const std::string& cuda_source, const LaunchPlan& plan, const CompileOptions& opts) {
  Resolved r = resolve(opts);
  LaunchPlan marked = plan;
  mark_outputs(marked, opts.out_idx, plan.kernel_name);
  Sha256 h;
  h.update("tilec-source-key 1\nsource\n");
  h.update(cuda_source);
  h.update("\nplan\n");
  h.update(launch_plan_to_text(marked));  // also checks the plan
  h.update(options_text(r.arch, r.compiler, opts));
  std::string key = h.hex_digest();
  if (auto hit = lookup(key, opts)) return std::move(*hit);
  CompiledArtifact a = build(cuda_source, std::move(marked), r, key, opts);
  store(key, a, opts);
  return a;
}

}  // namespace tilec::runtime
