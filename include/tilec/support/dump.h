// TILEC_DUMP_DIR output: every compilation stage of a kernel goes to
// <TILEC_DUMP_DIR>/<kernel>/<target>/<file>, one folder per target (sm_80, sm_90a, ...), so
// compiling one kernel for two targets keeps both. The pass manager writes the IR after
// each pass (NN_<pass>.py); the runtime adds the CUDA source, PTX, cubin and ptxas log.
// Everything here does nothing when TILEC_DUMP_DIR is unset.
#pragma once

#include <string>
#include <string_view>

namespace tilec::dump {

// True when TILEC_DUMP_DIR is set.
bool enabled();
// "<TILEC_DUMP_DIR>/<kernel>/<target>" (created on demand), or "" when dumping is off. The
// names are made file-safe (characters outside [A-Za-z0-9_.-] become '_').
std::string kernel_dir(const std::string& kernel, const std::string& target);
// Writes `content` to <kernel_dir>/<file_name>, replacing an older file. A directory that
// cannot be created or written is a UserError naming the path.
void write_file(const std::string& kernel, const std::string& target, const std::string& file_name,
                std::string_view content);

}  // namespace tilec::dump
