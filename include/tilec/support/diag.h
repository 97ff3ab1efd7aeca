// Diagnostics: the two error channels of tilec.
//
//  * UserError      — the program the user wrote is wrong. Carries the kernel's source
//                     location and a hint that says what to do. Everything a user can
//                     trigger must end here.
//  * InternalError  — tilec itself is wrong. The message says "please report".
//
// Use `user_error(loc) << "..." ; ` style through the helpers below, or the
// TILEC_CHECK_USER / TILEC_ICHECK macros.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace tilec {

struct SourceLoc {
  std::string file;
  int line = 0;
  int col = 0;

  bool known() const { return line > 0; }
  std::string str() const;  // "file:line:col" or "<unknown>"
};

class UserError : public std::runtime_error {
 public:
  UserError(std::string message, SourceLoc loc, std::string hint);
  const std::string& message() const { return message_; }
  const SourceLoc& loc() const { return loc_; }
  const std::string& hint() const { return hint_; }

 private:
  std::string message_;
  SourceLoc loc_;
  std::string hint_;
};

class InternalError : public std::logic_error {
 public:
  InternalError(const std::string& message, const char* file, int line);
};

[[noreturn]] void throw_user_error(const std::string& message, const SourceLoc& loc,
                                   const std::string& hint = "");
[[noreturn]] void throw_internal_error(const std::string& message, const char* file, int line);

namespace detail {
// Collects a streamed message and throws when destroyed at the end of the statement.
class UserErrorStream {
 public:
  UserErrorStream(SourceLoc loc, std::string hint) : loc_(std::move(loc)), hint_(std::move(hint)) {}
  template <typename T>
  UserErrorStream& operator<<(const T& v) {
    os_ << v;
    return *this;
  }
  [[noreturn]] ~UserErrorStream() noexcept(false) { throw_user_error(os_.str(), loc_, hint_); }

 private:
  SourceLoc loc_;
  std::string hint_;
  std::ostringstream os_;
};
class InternalErrorStream {
 public:
  InternalErrorStream(const char* file, int line) : file_(file), line_(line) {}
  template <typename T>
  InternalErrorStream& operator<<(const T& v) {
    os_ << v;
    return *this;
  }
  [[noreturn]] ~InternalErrorStream() noexcept(false) {
    throw_internal_error(os_.str(), file_, line_);
  }

 private:
  const char* file_;
  int line_;
  std::ostringstream os_;
};
}  // namespace detail

}  // namespace tilec

// TILEC_USER_CHECK(cond, loc, hint) << "message";
#define TILEC_USER_CHECK(cond, loc, hint) \
  if (cond) {                             \
  } else                                  \
    ::tilec::detail::UserErrorStream((loc), (hint))

// TILEC_ICHECK(cond) << "message";   (an internal invariant)
#define TILEC_ICHECK(cond) \
  if (cond) {              \
  } else                   \
    ::tilec::detail::InternalErrorStream(__FILE__, __LINE__) << "check failed: " #cond ": "

#define TILEC_UNREACHABLE() ::tilec::detail::InternalErrorStream(__FILE__, __LINE__) << "unreachable: "
