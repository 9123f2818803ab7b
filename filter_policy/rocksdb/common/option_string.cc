// Number parsing and formatting for option ids (see option_string.h).
#include "filter_policy/rocksdb/common/option_string.h"

#include <charconv>
#include <cmath>
#include <cstring>
#include <system_error>

namespace dlcbf {
namespace option_string {

namespace {
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
}  // namespace

bool ParseUint(const std::string& s, uint64_t* out) {
  if (s.empty() || s.size() > 19) return false;
  for (char c : s) {
    if (!IsDigit(c)) return false;
  }
  uint64_t v = 0;
  auto res = std::from_chars(s.data(), s.data() + s.size(), v, 10);
  if (res.ec != std::errc() || res.ptr != s.data() + s.size()) return false;
  *out = v;
  return true;
}

bool ParseDecimal(const std::string& s, double* out) {
  if (s.empty() || s.size() > 40) return false;
  size_t i = 0, digits = 0;
  while (i < s.size() && IsDigit(s[i])) ++i, ++digits;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && IsDigit(s[i])) ++i, ++digits;
  }
  if (digits == 0) return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    size_t exp_digits = 0;
    while (i < s.size() && IsDigit(s[i])) ++i, ++exp_digits;
    if (exp_digits == 0) return false;
  }
  if (i != s.size()) return false;
  double v = 0;
  auto res = std::from_chars(s.data(), s.data() + s.size(), v, std::chars_format::general);
  if (res.ec != std::errc() || res.ptr != s.data() + s.size() || !std::isfinite(v)) return false;
  *out = v;
  return true;
}

std::string FormatDecimal(double v) {
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::general, 6);
  return std::string(buf, res.ptr);
}

double Canonical(double v) {
  const std::string s = FormatDecimal(v);
  double out = v;
  std::from_chars(s.data(), s.data() + s.size(), out, std::chars_format::general);
  return out;
}

bool StartsWith(const std::string& s, const char* prefix, std::string* rest) {
  const size_t n = std::strlen(prefix);
  if (s.compare(0, n, prefix) != 0) return false;
  *rest = s.substr(n);
  return true;
}

}  // namespace option_string
}  // namespace dlcbf
