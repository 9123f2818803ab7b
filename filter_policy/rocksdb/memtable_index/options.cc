// MemTableIndexOptions: validation, the "dlcbf_index:..." id and its parser.
#include "dlcbf/rocksdb/memtable_index.h"

#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <unordered_set>
#include <utility>

#include "filter_policy/rocksdb/common/option_string.h"
#include "filter_policy/rocksdb/memtable_index/memtable_index_internal.h"
#include "rocksdb/convenience.h"
#include "rocksdb/memtablerep.h"

namespace dlcbf {

using namespace memtable_index;  // NOLINT

// ---------------------------------------------------------------------------
// Options, ids
// ---------------------------------------------------------------------------
namespace {


using option_string::Canonical;
using option_string::FormatDecimal;
using option_string::ParseDecimal;
using option_string::ParseUint;
using option_string::StartsWith;

}  // namespace

namespace memtable_index {
rocksdb::Status Invalid(const std::string& field, const std::string& why) {
  return rocksdb::Status::InvalidArgument("dlcbf_index: " + field, why);
}

}  // namespace


rocksdb::Status MemTableIndexOptions::Validate() const {
  if (budget_bytes == 0) {
    if (expected_entries < 1 || expected_entries > kMaxEntries) {
      return Invalid("expected_entries", "must be in [1, 2^32]");
    }
  } else if (budget_bytes < 64 || budget_bytes > kMaxBudget) {
    return Invalid("budget_bytes", "must be 0 or in [64, 2^34]");
  }
  const bool general_geometry = subtables != kDefaultSubtables || cells_per_bucket != kDefaultCells ||
                                remainder_bits != kDefaultRemainderBits;
  if (dense_kernel && (!fast_kernel || general_geometry)) {
    return Invalid("dense_kernel",
                   "the dense kernel was chosen together with the general kernel (fast_kernel = "
                   "false, or a subtables / cells_per_bucket / remainder_bits field): pick one");
  }
  if (dense_remainder_bits != 8 && dense_remainder_bits != 16) {
    return Invalid("dense_remainder_bits", "must be 8 or 16");
  }
  if (dense_remainder_bits != 16 && !dense_kernel) {
    return Invalid("dense_remainder_bits", "applies to the dense kernel only: set dense_kernel = true");
  }
  if (fast_kernel && general_geometry) {
    return Invalid("fast_kernel",
                   "subtables, cells_per_bucket and remainder_bits set the general kernel's "
                   "geometry; set fast_kernel = false (id field \"general\") to use them");
  }
  if (subtables < 2 || subtables > 8) return Invalid("subtables", "must be in [2, 8]");
  if (cells_per_bucket < 1 || cells_per_bucket > 64) {
    return Invalid("cells_per_bucket", "must be in [1, 64]");
  }
  if (remainder_bits < 4 || remainder_bits > 30) {
    return Invalid("remainder_bits", "must be in [4, 30]");
  }
  if (!(abf_growth >= 1.0 && abf_growth <= 1000.0)) {
    return Invalid("abf_growth", "must be in [1, 1000]");
  }
  if (!whole_keys && !prefixes) {
    return Invalid("whole_keys", "whole_keys or prefixes must be indexed");
  }
  if (expected_prefixes > kMaxEntries) {
    return Invalid("expected_prefixes", "must be in [0, 2^32]");
  }
  if (assume_timestamp_size < -1 || assume_timestamp_size > 255) {
    return Invalid("assume_timestamp_size", "must be in [-1, 255]");
  }
  if (!(max_write_buffer_fraction > 0.0 && max_write_buffer_fraction <= 1.0)) {
    return Invalid("max_write_buffer_fraction", "must be in (0, 1]");
  }
  return rocksdb::Status::OK();
}

std::string MemTableIndexId(const MemTableIndexOptions& o, const std::string& base_id) {
  std::string id = kMemTableIndexId;
  if (o.budget_bytes > 0) {
    id += ":bytes" + std::to_string(o.budget_bytes);
  } else {
    id += ":" + std::to_string(o.expected_entries);
  }
  if (o.subtables != kDefaultSubtables) id += ":d" + std::to_string(o.subtables);
  if (o.cells_per_bucket != kDefaultCells) id += ":L" + std::to_string(o.cells_per_bucket);
  if (o.remainder_bits != kDefaultRemainderBits) id += ":r" + std::to_string(o.remainder_bits);
  // The general kernel is named only when no d/L/r field selects it anyway.
  if (!o.fast_kernel && o.subtables == kDefaultSubtables && o.cells_per_bucket == kDefaultCells &&
      o.remainder_bits == kDefaultRemainderBits) {
    id += ":general";
  }
  if (o.dense_kernel) id += o.dense_remainder_bits == 8 ? ":dense8" : ":dense";
  if (FormatDecimal(o.abf_growth) != FormatDecimal(kDefaultGrowth)) {
    id += ":growth" + FormatDecimal(o.abf_growth);
  }
  if (o.prefixes) id += o.whole_keys ? ":prefix" : ":prefix_only";
  if (o.expected_prefixes != 0) id += ":prefixes" + std::to_string(o.expected_prefixes);
  if (o.trust_comparator) id += ":trust_comparator";
  if (o.assume_timestamp_size >= 0) id += ":ts" + std::to_string(o.assume_timestamp_size);
  if (FormatDecimal(o.max_write_buffer_fraction) != FormatDecimal(kDefaultCap)) {
    id += ":cap" + FormatDecimal(o.max_write_buffer_fraction);
  }
  if (!base_id.empty()) id += ":base:" + base_id;
  return id;
}

rocksdb::Status ParseMemTableIndexId(const std::string& id, MemTableIndexOptions* options,
                            std::string* base_id) {
  if (options == nullptr || base_id == nullptr) {
    return rocksdb::Status::InvalidArgument("dlcbf_index", "null output");
  }
  MemTableIndexOptions o;
  base_id->clear();
  std::string rest;
  if (id == kMemTableIndexId || id == kMemTableIndexClassName) {
    rest.clear();
  } else if (StartsWith(id, "dlcbf_index:", &rest) ||
             StartsWith(id, "DLeftIndexedMemTableRepFactory:", &rest)) {
    if (rest.empty()) return Invalid("id", "empty field after ':' in \"" + id + "\"");
  } else {
    return rocksdb::Status::InvalidArgument("dlcbf_index", "not a dlcbf_index id: \"" + id + "\"");
  }
  bool sized = false;
  int kernel = 0;           // 0: not named, 1: "fast", 2: "general", 3: "dense", 4: "dense8"
  bool geometry = false;    // a d, L or r field
  while (!rest.empty()) {
    std::string field, value;
    if (StartsWith(rest, "base:", &value)) {
      if (value.empty()) return Invalid("base", "needs a factory id after \"base:\"");
      *base_id = value;
      break;
    }
    const size_t colon = rest.find(':');
    field = rest.substr(0, colon);
    rest = colon == std::string::npos ? std::string() : rest.substr(colon + 1);
    if (colon != std::string::npos && rest.empty()) {
      return Invalid("id", "empty field after ':' in \"" + id + "\"");
    }
    uint64_t u = 0;
    double x = 0;
    if (field.empty()) {
      return Invalid("id", "empty field in \"" + id + "\"");
    } else if ((field[0] >= '0' && field[0] <= '9') || field[0] == '-' || field[0] == '+' ||
               field[0] == '.') {
      if (sized) return Invalid("expected_entries", "sizing given twice");
      if (!ParseUint(field, &u) || u < 1 || u > kMaxEntries) {
        return Invalid("expected_entries", "\"" + field + "\" is not an integer in [1, 2^32]");
      }
      o.expected_entries = u;
      sized = true;
    } else if (StartsWith(field, "bytes", &value)) {
      if (sized) return Invalid("budget_bytes", "sizing given twice");
      if (!ParseUint(value, &u) || u < 64 || u > kMaxBudget) {
        return Invalid("budget_bytes", "\"" + value + "\" is not an integer in [64, 2^34]");
      }
      o.budget_bytes = u;
      sized = true;
    } else if (field == "prefix") {
      o.prefixes = true;
      o.whole_keys = true;
    } else if (field == "prefix_only") {
      o.prefixes = true;
      o.whole_keys = false;
    } else if (StartsWith(field, "prefixes", &value)) {
      if (!ParseUint(value, &u) || u > kMaxEntries) {
        return Invalid("expected_prefixes", "\"" + value + "\" is not an integer in [0, 2^32]");
      }
      o.expected_prefixes = u;
    } else if (field == "fast" || field == "general" || field == "dense" || field == "dense8") {
      const int k = field == "fast" ? 1 : field == "general" ? 2 : field == "dense" ? 3 : 4;
      if (kernel != 0 && kernel != k) {
        return Invalid(k >= 3 || kernel >= 3 ? "dense_kernel" : "fast_kernel",
                       "more than one of \"fast\", \"general\", \"dense\" and \"dense8\" in \"" + id + "\"");
      }
      kernel = k;
    } else if (field == "trust_comparator") {
      o.trust_comparator = true;
    } else if (StartsWith(field, "d", &value) && !value.empty() && value[0] >= '0' &&
               value[0] <= '9') {
      if (!ParseUint(value, &u) || u < 2 || u > 8) {
        return Invalid("subtables", "\"" + value + "\" is not an integer in [2, 8]");
      }
      o.subtables = static_cast<uint32_t>(u);
      geometry = true;
    } else if (StartsWith(field, "L", &value) && !value.empty() && value[0] >= '0' &&
               value[0] <= '9') {
      if (!ParseUint(value, &u) || u < 1 || u > 64) {
        return Invalid("cells_per_bucket", "\"" + value + "\" is not an integer in [1, 64]");
      }
      o.cells_per_bucket = static_cast<uint32_t>(u);
      geometry = true;
    } else if (StartsWith(field, "r", &value) && !value.empty() && value[0] >= '0' &&
               value[0] <= '9') {
      if (!ParseUint(value, &u) || u < 4 || u > 30) {
        return Invalid("remainder_bits", "\"" + value + "\" is not an integer in [4, 30]");
      }
      o.remainder_bits = static_cast<uint32_t>(u);
      geometry = true;
    } else if (StartsWith(field, "growth", &value)) {
      if (!ParseDecimal(value, &x) || x < 1.0 || x > 1000.0) {
        return Invalid("abf_growth", "\"" + value + "\" is not a decimal in [1, 1000]");
      }
      o.abf_growth = Canonical(x);
    } else if (StartsWith(field, "ts", &value)) {
      if (!ParseUint(value, &u) || u > 255) {
        return Invalid("assume_timestamp_size", "\"" + value + "\" is not an integer in [0, 255]");
      }
      o.assume_timestamp_size = static_cast<int>(u);
    } else if (StartsWith(field, "cap", &value)) {
      if (!ParseDecimal(value, &x) || !(x > 0.0) || x > 1.0) {
        return Invalid("max_write_buffer_fraction",
                       "\"" + value + "\" is not a decimal in (0, 1]");
      }
      o.max_write_buffer_fraction = Canonical(x);
    } else {
      return Invalid("id", "unknown field \"" + field + "\" in \"" + id + "\"");
    }
  }
  // The kernel: as named, else the general one when its geometry is given.
  o.fast_kernel = kernel == 1 || kernel >= 3 || (kernel == 0 && !geometry);
  o.dense_kernel = kernel >= 3;
  if (kernel == 4) o.dense_remainder_bits = 8;
  rocksdb::Status s = o.Validate();
  if (!s.ok()) return s;
  *options = o;
  return rocksdb::Status::OK();
}

double MemTableIndexStats::MeasuredFpr() const {
  const uint64_t absent = false_positives + skipped_searches;
  return absent == 0 ? -1.0 : static_cast<double>(false_positives) / static_cast<double>(absent);
}

std::string MemTableIndexStats::ToString() const {
  char buf[1024];
  int n = std::snprintf(
      buf, sizeof(buf),
      "active=%d%s%s cf=%" PRIu32 " ts=%" PRIu64 " mode=%s migrations=%" PRIu64
      " cause=%s kernel=%s abf_k=%" PRIu32 " entries=%" PRIu64 " index_inserts=%" PRIu64
      " sized_for=%" PRIu64
      " bytes=%" PRIu64 " retained=%" PRIu64 "%s predicted_fpr=%.4g gets=%" PRIu64
      " skipped=%" PRIu64 " delegated=%" PRIu64 " false_positives=%" PRIu64 " measured_fpr=%.4g",
      active ? 1 : 0, bypass_reason.empty() ? "" : " bypass=", bypass_reason.c_str(),
      column_family_id, timestamp_size, dlcbf::ToString(mode), migrations,
      dlcbf::ToString(migration_cause), dense_kernel ? (dense_remainder_bits == 8 ? "dense8" : "dense") : fast_kernel ? "fast" : "general", abf_probes, entries,
      index_inserts, sized_for, index_bytes, retained_bytes, capped ? " capped" : "", predicted_fpr, gets, skipped_searches, delegated,
      false_positives, MeasuredFpr());
  std::string out(buf, n > 0 ? std::min<size_t>(static_cast<size_t>(n), sizeof(buf) - 1) : 0);
  if (prefixes_indexed) {
    n = std::snprintf(buf, sizeof(buf),
                      " prefix_mode=%s prefix_inserts=%" PRIu64 " prefix_predicted_fpr=%.4g"
                      " prefix_seeks=%" PRIu64 " prefix_seeks_skipped=%" PRIu64,
                      dlcbf::ToString(prefix_mode), prefix_inserts, prefix_predicted_fpr,
                      prefix_seeks, prefix_seeks_skipped);
    out.append(buf, n > 0 ? std::min<size_t>(static_cast<size_t>(n), sizeof(buf) - 1) : 0);
  }
  return out;
}


}  // namespace dlcbf
