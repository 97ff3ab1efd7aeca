// Small string helpers shared across the library.
#pragma once

#include <string>

namespace tilec::support {

// `s` without leading and trailing blanks (spaces, tabs, newlines).
std::string trim(const std::string& s);

}  // namespace tilec::support
