// A unified diff of two texts by lines (TILEC_DUMP_IR=diff prints one per pass).
#pragma once

#include <string>

namespace tilec::support {

// "--- a_name\n+++ b_name\n" then hunks "@@ -l,n +l,n @@" with `context` unchanged lines around
// each change; "" when the texts are equal. The common prefix and suffix are trimmed first; the
// rest is matched by longest common subsequence when it is small enough (a few million line
// pairs), otherwise shown as one replaced block.
std::string unified_diff(const std::string& a, const std::string& b, const std::string& a_name,
                         const std::string& b_name, int context = 3);

}  // namespace tilec::support
