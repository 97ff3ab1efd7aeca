#include "tilec/support/diag.h"

namespace tilec {

std::string SourceLoc::str() const {
  if (!known()) return "<unknown>";
  std::ostringstream os;
  os << (file.empty() ? "<kernel>" : file) << ":" << line;
  if (col > 0) os << ":" << col;
  return os.str();
}

namespace {
std::string format_user_error(const std::string& message, const SourceLoc& loc,
                              const std::string& hint) {
  std::ostringstream os;
  if (loc.known()) os << loc.str() << ": ";
  os << "error: " << message;
  if (!hint.empty()) os << "\n  hint: " << hint;
  return os.str();
}
}  // namespace

UserError::UserError(std::string message, SourceLoc loc, std::string hint)
    : std::runtime_error(format_user_error(message, loc, hint)),
      message_(std::move(message)),
      loc_(std::move(loc)),
      hint_(std::move(hint)) {}

InternalError::InternalError(const std::string& message, const char* file, int line)
    : std::logic_error("tilec internal error at " + std::string(file) + ":" +
                       std::to_string(line) + ": " + message +
                       "\n  This is a bug in tilec, please report it with the kernel that "
                       "triggered it.") {}

void throw_user_error(const std::string& message, const SourceLoc& loc, const std::string& hint) {
  throw UserError(message, loc, hint);
}

void throw_internal_error(const std::string& message, const char* file, int line) {
  throw InternalError(message, file, line);
}

}  // namespace tilec
