// The one parser and formatter for the numbers inside every `dlcbf...`
// option id (dlcbf:<bits>, dlcbf:fpr<rate>, dlcbf_index:...): plain decimals
// only, locale-independent (std::from_chars / std::to_chars), so an id
// written by one process reads back identically in any other.
#pragma once

#include <cstdint>
#include <string>

namespace dlcbf {
namespace option_string {

// Digits only, 1..19 of them (so the value fits in uint64_t).
bool ParseUint(const std::string& s, uint64_t* out);

// A plain decimal with an optional exponent: 12, 0.5, .5, 2e3, 1.5E-2.
// No sign, nan, inf or hex; finite results only.
bool ParseDecimal(const std::string& s, double* out);

// Shortest round-trip text with at most 6 significant digits ("%.6g"
// without the locale): what ids print.
std::string FormatDecimal(double v);

// v as it reads back from FormatDecimal(v): ids round-trip exactly.
double Canonical(double v);

// If s starts with `prefix`, sets *rest to the remainder and returns true.
bool StartsWith(const std::string& s, const char* prefix, std::string* rest);

}  // namespace option_string
}  // namespace dlcbf
