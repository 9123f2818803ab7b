// ElasticOptions: validation (which fields each kernel reads, sizing
// requests in range) and the names of the modes and migration causes. The
// filter itself: elastic_filter.cc.
#include "dlcbf/core/elastic_filter.h"

#include <cmath>

#include "filter_policy/core/elastic_sizing.h"

namespace dlcbf {

const char* ToString(ElasticMode mode) {
  switch (mode) {
    case ElasticMode::kDLeft: return "dlcbf";
    case ElasticMode::kAutoscaling: return "autoscaling";
  }
  return "unknown";
}

const char* ToString(MigrationCause cause) {
  switch (cause) {
    case MigrationCause::kNone: return "none";
    case MigrationCause::kOverflow: return "overflow";
    case MigrationCause::kLoadThreshold: return "load_threshold";
    case MigrationCause::kIncremental: return "incremental";
  }
  return "unknown";
}

namespace {

bool InRange(double v, double lo, double hi) { return v >= lo && v <= hi; }  // false for NaN

}  // namespace


// The first FastDLeftOptions / DenseDLeftOptions field (thread_safe aside)
// that differs from its default, or nullptr.
static const char* ChangedFastField(const FastDLeftOptions& f) {
  const FastDLeftOptions def;
  if (f.subtables != def.subtables) return "subtables";
  if (f.blocks != def.blocks) return "blocks";
  if (f.seed != def.seed) return "seed";
  if (f.max_bytes != def.max_bytes) return "max_bytes";
  return nullptr;
}
static const char* ChangedDenseField(const DenseDLeftOptions& d) {
  const DenseDLeftOptions def;
  if (d.remainder_bits != def.remainder_bits) return "remainder_bits";
  if (d.subtables != def.subtables) return "subtables";
  if (d.blocks_per_subtable != def.blocks_per_subtable) return "blocks_per_subtable";
  if (d.seed != def.seed) return "seed";
  if (d.max_bytes != def.max_bytes) return "max_bytes";
  return nullptr;
}

// The first DLeftOptions field (thread_safe aside: ElasticOptions overrides
// it) that differs from its default, or nullptr.
static const char* ChangedDLeftField(const DLeftOptions& d) {
  const DLeftOptions def;
  if (d.subtables != def.subtables) return "subtables";
  if (d.buckets_per_subtable != def.buckets_per_subtable) return "buckets_per_subtable";
  if (d.cells_per_bucket != def.cells_per_bucket) return "cells_per_bucket";
  if (d.remainder_bits != def.remainder_bits) return "remainder_bits";
  if (d.counter_bits != def.counter_bits) return "counter_bits";
  if (d.seed != def.seed) return "seed";
  if (d.relocation != def.relocation) return "relocation";
  if (d.max_relocation_nodes != def.max_relocation_nodes) return "max_relocation_nodes";
  if (d.max_bytes != def.max_bytes) return "max_bytes";
  return nullptr;
}

Status ElasticOptions::Validate() const {
  if (!(sizing_load > 0.0 && sizing_load <= 1.0)) {
    return Status::InvalidArgument("sizing_load must be in (0, 1]");
  }
  if (kernel != ElasticKernel::kGeneral && kernel != ElasticKernel::kFast &&
      kernel != ElasticKernel::kDense) {
    return Status::InvalidArgument("kernel must be kGeneral, kFast or kDense");
  }
  // A field of a kernel that is not chosen would be silently ignored.
  const char* kernel_name = kernel == ElasticKernel::kFast ? "kFast"
                            : kernel == ElasticKernel::kDense ? "kDense" : "kGeneral";
  if (kernel != ElasticKernel::kGeneral) {
    if (const char* field = ChangedDLeftField(dleft)) {
      return Status::InvalidArgument(std::string("dleft.") + field + " is set but kernel is " +
                                     kernel_name + ", which does not use it; set kernel = kGeneral");
    }
  }
  if (kernel != ElasticKernel::kDense) {
    if (const char* field = ChangedDenseField(dense)) {
      return Status::InvalidArgument(std::string("dense.") + field + " is set but kernel is " +
                                     kernel_name + ", which does not use it; set kernel = kDense");
    }
  }
  if (kernel != ElasticKernel::kFast) {
    if (const char* field = ChangedFastField(fast)) {
      return Status::InvalidArgument(std::string("fast.") + field + " is set but kernel is " +
                                     kernel_name + ", which does not use it; set kernel = kFast");
    }
  }
  if (kernel == ElasticKernel::kDense) {
    dlcbf::Status why;
    const DenseDLeftOptions d = elastic_detail::SizedDense(*this, &why);
    if (why.ok()) why = d.Validate();
    if (!why.ok()) return Status::InvalidArgument("dense." + why.message());
  }
  if (kernel == ElasticKernel::kFast) {
    dlcbf::Status why;
    const FastDLeftOptions f = elastic_detail::SizedFast(*this, &why);
    if (why.ok()) why = f.Validate();
    if (why.IsInvalidArgument()) {
      // "FastDLeftOptions::subtables: ..." -> "fast.subtables: ..."
      std::string msg = why.message();
      const std::string prefix = "FastDLeftOptions::";
      if (msg.compare(0, prefix.size(), prefix) == 0) msg.erase(0, prefix.size());
      return Status::InvalidArgument("fast." + msg);
    }
    if (!why.ok()) return why;
  }
  DLeftOptions d = dleft;
  if (kernel == ElasticKernel::kGeneral) {
    Status s = expected_items > 0 ? DLeftOptions::ForLoad(expected_items, sizing_load, &d) : d.Validate();
    if (s.IsInvalidArgument()) {
      return Status::InvalidArgument("dleft." + s.message());
    }
    if (!s.ok()) return s;
    if (d.counter_bits == 0) {
      return Status::InvalidArgument(
          "dleft.counter_bits must be >= 1 (the elastic filter supports erase)");
    }
  }
  if (!InRange(migrate_at_load, 0.0, 1.0)) {
    return Status::InvalidArgument("migrate_at_load must be in [0, 1]");
  }
  if (abf_counter_bits < 1 || abf_counter_bits > 8) {
    return Status::InvalidArgument("abf_counter_bits must be in [1, 8]");
  }
  if (abf_probes > 4096) return Status::InvalidArgument("abf_probes must be <= 4096");
  if (!(abf_growth >= 1.0) || std::isinf(abf_growth)) {
    return Status::InvalidArgument("abf_growth must be a finite value >= 1");
  }
  if (!InRange(min_tpr, 0.0, 1.0)) {
    return Status::InvalidArgument("min_tpr (L_TPR) must be in [0, 1]");
  }
  if (min_tpr < 1.0 && !allow_false_negatives) {
    return Status::InvalidArgument(
        "min_tpr (L_TPR) < 1 admits false negatives; set allow_false_negatives");
  }
  if (!(retune_fraction > 0.0) || std::isinf(retune_fraction)) {
    return Status::InvalidArgument("retune_fraction must be a finite value > 0");
  }
  return Status::OK();
}

}  // namespace dlcbf
