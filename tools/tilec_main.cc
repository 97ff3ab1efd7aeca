// tilec: the command-line tool. Each subcommand is one function in the table below;
// main() only dispatches and turns errors into exit codes (1: the user's error, 2: bad
// usage, 3: a tilec bug).
#include <unistd.h>

#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "tilec/ir/example_gemm.h"
#include "tilec/ir/printer.h"
#include "tilec/passes/pass.h"
#include "tilec/pipeline/pipeline.h"
#include "tilec/support/diag.h"
#include "tilec/support/knobs.h"
#include "tilec/target/target.h"

namespace {

using Args = std::vector<std::string>;

struct Command {
  std::string name;
  std::string usage;
  std::string help;
  std::function<int(const Args&)> run;
};

const std::vector<Command>& commands();

int usage_error(const std::string& message) {
  std::cerr << "tilec: " << message << "\nRun 'tilec --help' for usage.\n";
  return 2;
}

int print_help(const Args&) {
  std::cout << "tilec " << TILEC_VERSION << " - a tile-level GPU kernel compiler\n\nUsage:\n";
  for (const auto& c : commands()) std::cout << "  tilec " << c.usage << "\n      " << c.help << "\n";
  std::cout << "\nEnvironment variables: see 'tilec --list-knobs'.\n";
  return 0;
}

int print_version(const Args&) {
  std::cout << "tilec " << TILEC_VERSION << "\n";
  return 0;
}

int list_knobs(const Args& args) {
  if (!args.empty() && args[0] == "--json") {
    std::cout << tilec::knobs::table_json();
    return 0;
  }
  if (!args.empty()) return usage_error("unexpected argument '" + args[0] + "' to --list-knobs");
  for (const auto& k : tilec::knobs::all()) {
    std::cout << k.name << "  (" << tilec::knobs::knob_type_name(k.type);
    if (*k.choices) std::cout << ": " << k.choices;
    std::cout << "; default: " << (*k.default_text ? k.default_text : "unset") << ")\n    " << k.help
              << "\n";
  }
  return 0;
}

int list_configs(const Args&) {
  std::cout << std::boolalpha;
  for (const auto& k : tilec::passes::config_keys()) {
    std::cout << k.name << "  (default: ";
    std::visit([](const auto& v) { std::cout << v; }, k.default_value);
    std::cout << ")\n    " << k.help << "\n";
  }
  return 0;
}

int print_pipeline(const Args& args) {
  if (args.size() > 1) return usage_error("pipeline takes at most one target");
  tilec::target::Target target = tilec::target::parse_target(args.empty() ? "sm_90a" : args[0]);
  std::cout << "# CUDA pipeline for " << target.str() << "\n";
  for (const auto& pass : tilec::pipeline::cuda_pipeline(target)) std::cout << pass.name << "\n";
  return 0;
}

// example-gemm [--pipeline TARGET]: the builder GEMM as T-script, optionally after the
// CUDA pipeline for TARGET (TILEC_DUMP_IR / TILEC_DUMP_DIR show the stages in between).
int example_gemm(const Args& args) {
  std::string pipeline_target;
  if (args.size() == 2 && args[0] == "--pipeline")
    pipeline_target = args[1];
  else if (!args.empty())
    return usage_error("usage: tilec example-gemm [--pipeline TARGET]");
  tilec::ir::PrimFunc f = tilec::ir::build_example_gemm();
  if (!pipeline_target.empty()) {
    tilec::passes::PassContext ctx(tilec::target::parse_target(pipeline_target));
    f = tilec::passes::run_passes(tilec::pipeline::cuda_pipeline(ctx.target()), f, ctx);
  }
  std::cout << tilec::ir::script(f);
  return 0;
}

// compile FILE.py::NAME ...: the kernel is Python, so the Python front end does the work
// (python/tilec/tools/compile_cli.py); this runs it in place of the CLI (TILEC_PYTHON,
// default python3), with the source tree's python/ folder first on its path.
int compile_python(const Args& args) {
  if (args.empty()) return usage_error("usage: tilec compile FILE.py::NAME [--target T] [--args ARGS] [-o DIR]");
  std::string python = tilec::knobs::python();
#ifdef TILEC_PYTHON_DIR
  const std::string dir = TILEC_PYTHON_DIR;
#else
  const std::string dir;
#endif
  std::vector<std::string> argv_s = {
      python, "-c",
      "import sys\nif sys.argv[1]: sys.path.insert(0, sys.argv[1])\ndel sys.argv[1]\n"
      "from tilec.tools.compile_cli import main\nsys.exit(main())",
      dir};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  ::execvp(argv[0], argv.data());
  std::cerr << "tilec compile: cannot run '" << python << "' (set TILEC_PYTHON to a Python 3 that has tilec's "
            << "dependencies)\n";
  return 2;
}

const std::vector<Command>& commands() {
  static const std::vector<Command> table = {
      {"example-gemm", "example-gemm [--pipeline TARGET]",
       "Print the GEMM built with the C++ builder as T-script (after the CUDA pipeline for TARGET).",
       example_gemm},
      {"compile", "compile FILE.py::NAME [--target TARGET] [--args ARGS] [-o DIR]",
       "Compile a kernel of a Python file: NAME is a T.prim_func or a factory that returns one (ARGS: its\n"
       "      arguments, as in a Python call). Prints the CUDA C, or writes DIR/<kernel>.cu/.ptx/.cubin\n"
       "      and the AOT export for C++ (<kernel>.tkc, <kernel>.h: docs/CPP.md).",
       compile_python},
      {"pipeline", "pipeline [TARGET]", "List the passes of the CUDA pipeline (default sm_90a).",
       print_pipeline},
      {"--list-knobs", "--list-knobs [--json]", "List the environment variables tilec reads.",
       list_knobs},
      {"--list-configs", "--list-configs", "List the accepted pass_configs keys.", list_configs},
      {"--version", "--version", "Print the version.", print_version},
      {"--help", "--help", "Print this help.", print_help},
  };
  return table;
}

}  // namespace

int main(int argc, char** argv) {
  Args args(argv + 1, argv + argc);
  if (args.empty()) return print_help(args);
  const std::string name = args[0] == "-h" ? "--help" : args[0];
  args.erase(args.begin());
  for (const auto& c : commands()) {
    if (c.name != name) continue;
    try {
      return c.run(args);
    } catch (const tilec::UserError& e) {
      std::cerr << e.what() << "\n";
      return 1;
    } catch (const std::exception& e) {
      std::cerr << e.what() << "\n";
      return 3;
    }
  }
  return usage_error("unknown command '" + name + "'");
}
