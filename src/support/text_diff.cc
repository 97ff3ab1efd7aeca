// Unified line diff (include/tilec/support/text_diff.h).
#include "tilec/support/text_diff.h"

#include <algorithm>
#include <cstdint>
#include <sstream>
#include <vector>

namespace tilec::support {

namespace {

std::vector<std::string> split_lines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream is(s);
  std::string line;
  while (std::getline(is, line)) out.push_back(line);
  return out;
}

// One line of the edit script: ' ' kept, '-' only in a, '+' only in b; with its line numbers.
struct Edit {
  char op;
  size_t a, b;  // 0-based positions in a and b (the next line of each side)
};

// The edit script of a[lo_a, hi_a) -> b[lo_b, hi_b) by LCS, or replace-all when too large.
void middle_edits(const std::vector<std::string>& a, const std::vector<std::string>& b, size_t lo_a, size_t hi_a,
                  size_t lo_b, size_t hi_b, std::vector<Edit>* out) {
  const size_t n = hi_a - lo_a, m = hi_b - lo_b;
  if (n * m > (size_t{1} << 22)) {
    for (size_t i = lo_a; i < hi_a; ++i) out->push_back({'-', i, lo_b});
    for (size_t j = lo_b; j < hi_b; ++j) out->push_back({'+', hi_a, j});
    return;
  }
  // lcs[i][j]: LCS length of a[lo_a+i ..] and b[lo_b+j ..].
  std::vector<uint32_t> lcs((n + 1) * (m + 1), 0);
  auto at = [&](size_t i, size_t j) -> uint32_t& { return lcs[i * (m + 1) + j]; };
  for (size_t i = n; i-- > 0;)
    for (size_t j = m; j-- > 0;)
      at(i, j) = a[lo_a + i] == b[lo_b + j] ? at(i + 1, j + 1) + 1 : std::max(at(i + 1, j), at(i, j + 1));
  size_t i = 0, j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && a[lo_a + i] == b[lo_b + j]) {
      out->push_back({' ', lo_a + i, lo_b + j});
      ++i, ++j;
    } else if (i < n && (j == m || at(i + 1, j) >= at(i, j + 1))) {
      out->push_back({'-', lo_a + i, lo_b + j});  // deletions before insertions, as diff -u
      ++i;
    } else {
      out->push_back({'+', lo_a + i, lo_b + j});
      ++j;
    }
  }
}

}  // namespace

std::string unified_diff(const std::string& a_text, const std::string& b_text, const std::string& a_name,
                         const std::string& b_name, int context) {
  if (a_text == b_text) return "";
  const std::vector<std::string> a = split_lines(a_text), b = split_lines(b_text);
  size_t pre = 0;
  while (pre < a.size() && pre < b.size() && a[pre] == b[pre]) ++pre;
  size_t suf = 0;
  while (suf < a.size() - pre && suf < b.size() - pre && a[a.size() - 1 - suf] == b[b.size() - 1 - suf]) ++suf;
  std::vector<Edit> edits;
  for (size_t i = 0; i < pre; ++i) edits.push_back({' ', i, i});
  middle_edits(a, b, pre, a.size() - suf, pre, b.size() - suf, &edits);
  for (size_t k = 0; k < suf; ++k) edits.push_back({' ', a.size() - suf + k, b.size() - suf + k});

  std::ostringstream os;
  os << "--- " << a_name << "\n+++ " << b_name << "\n";
  const size_t ctx = static_cast<size_t>(std::max(context, 0));
  size_t k = 0;
  while (k < edits.size()) {
    if (edits[k].op == ' ') {
      ++k;
      continue;
    }
    // A hunk: from ctx kept lines before the change to ctx kept lines after the last change
    // that is within 2 * ctx kept lines of the previous one.
    size_t start = k >= ctx ? k - ctx : 0;
    while (start < k && edits[start].op != ' ') ++start;
    size_t end = k, kept = 0;
    for (size_t e = k; e < edits.size(); ++e) {
      if (edits[e].op == ' ') {
        if (++kept > 2 * ctx) break;
      } else {
        kept = 0;
        end = e;
      }
    }
    const size_t stop = std::min(edits.size(), end + 1 + ctx);
    size_t a_count = 0, b_count = 0;
    for (size_t e = start; e < stop; ++e) {
      a_count += edits[e].op != '+';
      b_count += edits[e].op != '-';
    }
    os << "@@ -" << edits[start].a + 1 << "," << a_count << " +" << edits[start].b + 1 << "," << b_count << " @@\n";
    for (size_t e = start; e < stop; ++e) {
      const Edit& d = edits[e];
      os << d.op << (d.op == '+' ? b[d.b] : a[d.a]) << "\n";
    }
    k = stop;
  }
  return os.str();
}

}  // namespace tilec::support
