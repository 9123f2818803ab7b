// The dlcbf RocksDB FilterPolicy: the policy object, its id
// ("dlcbf:<bits>", "dlcbf:fpr<rate>", expert geometry) and the public API
// of include/dlcbf/rocksdb/filter_policy.h. The block format, planner,
// builder and readers are the other files of this folder.
#include "dlcbf/rocksdb/filter_policy.h"

#include <cmath>
#include <cstring>
#include <memory>
#include <string>

#include "filter_policy/rocksdb/common/option_string.h"
#include "filter_policy/rocksdb/sst_filter/sst_filter_internal.h"
#include "rocksdb/table.h"

namespace dlcbf {

using rocksdb::FilterBitsBuilder;
using rocksdb::FilterBitsReader;
using rocksdb::Slice;
using rocksdb::Status;
using namespace sst_filter;  // NOLINT
using option_string::Canonical;
using option_string::FormatDecimal;
using option_string::ParseDecimal;
using option_string::ParseUint;

namespace {

constexpr const char* kPolicyName = "dlcbf";
constexpr const char* kPolicyNickName = "dlcbf.DLeftFilterPolicy";
constexpr const char* kCompatibilityName = "dlcbf.DLeftFilter";

class DLeftFilterPolicy final : public rocksdb::FilterPolicy {
 public:
  DLeftFilterPolicy(const DLeftFilterPolicyOptions& o, const DLeftFilterPlan& plan)
      : options_(o), plan_(plan), id_(DLeftFilterPolicyId(o)), shared_(std::make_shared<PolicyShared>()) {
    shared_->info_log = o.info_log;
  }

  static const char* kClassName() { return kPolicyName; }
  const char* Name() const override { return kPolicyName; }
  const char* NickName() const override { return kPolicyNickName; }
  std::string GetId() const override { return id_; }
  const char* CompatibilityName() const override { return kCompatibilityName; }

  FilterBitsBuilder* GetBuilderWithContext(const rocksdb::FilterBuildingContext& ctx) const override {
    return NewDLeftBuilder(plan_, options_.max_relocation_nodes, options_.max_filter_block_bytes,
                           shared_, ctx.table_options.detect_filter_construct_corruption,
                           ctx.info_log);
  }

  FilterBitsReader* GetFilterBitsReader(const Slice& contents) const override {
    return MakeReader(contents, shared_.get(), nullptr);
  }

  const DLeftFilterPolicyOptions& options() const { return options_; }
  const PolicyShared& shared() const { return *shared_; }

 private:
  const DLeftFilterPolicyOptions options_;
  const DLeftFilterPlan plan_;
  const std::string id_;
  const std::shared_ptr<PolicyShared> shared_;
};

const DLeftFilterPolicy* AsDLeft(const rocksdb::FilterPolicy* p) {
  if (p == nullptr || std::strcmp(p->Name(), kPolicyName) != 0) return nullptr;
  return static_cast<const DLeftFilterPolicy*>(p);
}

}  // namespace

std::string DLeftFilterPolicyId(const DLeftFilterPolicyOptions& o) {
  std::string id = kPolicyName;
  id += ':';
  id += o.fp_rate > 0 ? "fpr" + FormatDecimal(o.fp_rate) : FormatDecimal(o.bits_per_key);
  if (o.subtables) id += ":d" + std::to_string(o.subtables);
  if (o.cells_per_bucket) id += ":L" + std::to_string(o.cells_per_bucket);
  if (o.remainder_bits) id += ":r" + std::to_string(o.remainder_bits);
  if (o.load != 0.0) id += ":load" + FormatDecimal(o.load);
  if (o.max_relocation_nodes != DLeftFilterPolicyOptions().max_relocation_nodes) {
    id += ":nodes" + std::to_string(o.max_relocation_nodes);
  }
  if (o.format_version) id += ":v" + std::to_string(o.format_version);
  return id;
}

Status ParseDLeftFilterPolicyId(const std::string& id, DLeftFilterPolicyOptions* options) {
  DLeftFilterPolicyOptions o;
  std::vector<std::string> tok;
  size_t start = 0;
  for (;;) {
    size_t colon = id.find(':', start);
    tok.push_back(id.substr(start, colon == std::string::npos ? std::string::npos : colon - start));
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  if (tok[0] != kPolicyName && tok[0] != kPolicyNickName) {
    return Invalid("id must start with \"dlcbf\", got \"" + id + "\"");
  }
  if (tok.size() >= 2) {
    const std::string& b = tok[1];
    if (b.compare(0, 3, "fpr") == 0) {
      if (!ParseDecimal(b.substr(3), &o.fp_rate)) {
        return Invalid("fp_rate: \"" + b.substr(3) + "\" is not a positive decimal number");
      }
      if (o.fp_rate == 0.0) return Invalid("fp_rate must be in [1e-9, 0.5], got 0");
    } else if (!ParseDecimal(b, &o.bits_per_key)) {
      return Invalid("bits_per_key: \"" + b +
                     "\" is not a positive decimal number (expected e.g. dlcbf:10 or dlcbf:fpr0.01)");
    }
  }
  bool seen[6] = {false, false, false, false, false, false};
  for (size_t i = 2; i < tok.size(); ++i) {
    const std::string& t = tok[i];
    size_t n = 0;
    while (n < t.size() && std::isalpha(static_cast<unsigned char>(t[n]))) ++n;
    const std::string name = t.substr(0, n), value = t.substr(n);
    static const char* const kNames[] = {"d", "L", "r", "load", "nodes", "v"};
    int which = -1;
    for (int j = 0; j < 6; ++j) {
      if (name == kNames[j]) which = j;
    }
    if (which < 0) {
      return Invalid("unknown option \"" + t +
                     "\" (expected d<subtables>, L<cells_per_bucket>, r<remainder_bits>, "
                     "load<fraction>, nodes<max_relocation_nodes> or v<format_version>)");
    }
    if (seen[which]) return Invalid("option \"" + name + "\" given twice");
    seen[which] = true;
    if (which == 3) {
      if (!ParseDecimal(value, &o.load) || o.load == 0.0) {
        return Invalid("load: \"" + value + "\" is not a decimal in [0.05, 0.99]");
      }
      continue;
    }
    uint64_t v = 0;
    static const char* const kFields[] = {"subtables (d)", "cells_per_bucket (L)", "remainder_bits (r)",
                                          "", "max_relocation_nodes (nodes)",
                                          "format_version (v)"};
    if (!ParseUint(value, &v)) {
      return Invalid(std::string(kFields[which]) + ": \"" + value + "\" is not an unsigned integer");
    }
    if (v > 1000000) {
      return Invalid(std::string(kFields[which]) + ": " + value + " is out of range");
    }
    const uint32_t v32 = static_cast<uint32_t>(v);
    if (v32 == 0 && which != 4) {
      return Invalid(std::string(kFields[which]) + " must be positive");
    }
    switch (which) {
      case 0: o.subtables = v32; break;
      case 1: o.cells_per_bucket = v32; break;
      case 2: o.remainder_bits = v32; break;
      case 5: o.format_version = v32; break;
      default: o.max_relocation_nodes = v32; break;
    }
  }
  Status s = o.Validate();
  if (!s.ok()) return s;
  o.info_log = options->info_log;
  *options = o;
  return Status::OK();
}

namespace {
Status CanonicalOptions(const DLeftFilterPolicyOptions& in, DLeftFilterPolicyOptions* out,
                        DLeftFilterPlan* plan) {
  DLeftFilterPolicyOptions o = in;
  o.bits_per_key = Canonical(o.bits_per_key);
  o.fp_rate = Canonical(o.fp_rate);
  o.load = Canonical(o.load);
  Status s = PlanDLeftFilter(o, plan);
  if (!s.ok()) return s;
  *out = o;
  return Status::OK();
}
}  // namespace

Status NewDLeftFilterPolicy(const DLeftFilterPolicyOptions& options,
                            std::shared_ptr<const rocksdb::FilterPolicy>* out) {
  std::unique_ptr<const rocksdb::FilterPolicy> p;
  Status s = NewDLeftFilterPolicy(options, &p);
  if (s.ok()) out->reset(p.release());
  return s;
}

Status NewDLeftFilterPolicy(const DLeftFilterPolicyOptions& options,
                            std::unique_ptr<const rocksdb::FilterPolicy>* out) {
  DLeftFilterPolicyOptions o;
  DLeftFilterPlan plan;
  Status s = CanonicalOptions(options, &o, &plan);
  if (!s.ok()) return s;
  out->reset(new DLeftFilterPolicy(o, plan));
  return Status::OK();
}

std::shared_ptr<const rocksdb::FilterPolicy> NewDLeftFilterPolicy(double bits_per_key) {
  DLeftFilterPolicyOptions o;
  o.bits_per_key = bits_per_key;
  std::shared_ptr<const rocksdb::FilterPolicy> p;
  if (!NewDLeftFilterPolicy(o, &p).ok()) return nullptr;
  return p;
}

const char* DLeftFilterPolicyName() { return kPolicyName; }
const char* DLeftFilterCompatibilityName() { return kCompatibilityName; }

bool IsDLeftFilterPolicy(const rocksdb::FilterPolicy* policy, DLeftFilterPolicyOptions* options) {
  const DLeftFilterPolicy* p = AsDLeft(policy);
  if (p == nullptr) return false;
  if (options) *options = p->options();
  return true;
}

DLeftFilterPolicyCounters GetDLeftFilterPolicyCounters(const rocksdb::FilterPolicy* policy) {
  DLeftFilterPolicyCounters c;
  const DLeftFilterPolicy* p = AsDLeft(policy);
  if (p == nullptr) return c;
  const PolicyShared& s = p->shared();
  c.filters_built = s.filters_built.load(std::memory_order_relaxed);
  c.entries_built = s.entries_built.load(std::memory_order_relaxed);
  c.placement_retries = s.placement_retries.load(std::memory_order_relaxed);
  c.bloom_fallbacks = s.bloom_fallbacks.load(std::memory_order_relaxed);
  c.unreadable_blocks = s.unreadable_blocks.load(std::memory_order_relaxed);
  c.post_verify_failures = s.post_verify_failures.load(std::memory_order_relaxed);
  return c;
}

}  // namespace dlcbf
