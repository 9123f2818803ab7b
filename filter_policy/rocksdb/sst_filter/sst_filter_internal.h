// What the parts of the SST filter share: the per-policy counters, the
// geometry helpers of the planner, and the reader and builder factories.
// Internal to filter_policy/rocksdb/sst_filter/.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dlcbf/rocksdb/filter_policy.h"
#include "filter_policy/rocksdb/abi/filter_abi.h"
#include "rocksdb/env.h"
#include "rocksdb/status.h"

namespace dlcbf {
namespace sst_filter {

// The RocksDB names every part of the SST filter uses.
using rocksdb::FilterBitsBuilder;
using rocksdb::FilterBitsReader;
using rocksdb::Slice;
using rocksdb::Status;

// Counters of one policy object, shared with its builders and readers.
struct PolicyShared {
  std::atomic<uint64_t> filters_built{0};
  std::atomic<uint64_t> entries_built{0};
  std::atomic<uint64_t> placement_retries{0};
  std::atomic<uint64_t> bloom_fallbacks{0};
  std::atomic<uint64_t> unreadable_blocks{0};
  std::atomic<uint64_t> post_verify_failures{0};
  std::shared_ptr<rocksdb::Logger> info_log;
};

// InvalidArgument("dlcbf filter policy: <msg>").
rocksdb::Status Invalid(const std::string& msg);

// Highest reliable load of (d, L) with the bounded BFS relocation, for
// expert overrides; see the table in planner.cc.
double MaxLoad(uint32_t d, uint32_t L);
// Predicted FPR d L load / (2^r - 1) of a plan.
double PlanFpr(uint32_t d, uint32_t L, uint32_t r, double load);
// Version 2 (blocked table): the highest planned cell load for d, the
// measured mean number of blocks a negative query probes at that load,
// and the predicted FPR d load / (2^r - 1) * probes.
double BlockedMaxLoad(uint32_t d);
double BlockedProbesPerQuery(uint32_t d, uint32_t r, double load);
double BlockedPlanFpr(uint32_t d, uint32_t r, double load);
// Version 3 (packed table): the carried share of keys for lambda keys per
// home block and C slots (queue model, planner.cc), and the predicted FPR
// of B buckets of r-bit remainders:
// lambda / (B 2^r) (1 + 2 share).
double PackedCarryShare(double lambda, uint32_t C);
double PackedPlanFpr(double lambda, uint32_t r, uint32_t B, double carry_share);
// Buckets per subtable for n keys at `load`.
uint64_t BucketsFor(uint64_t n, double load, uint32_t d, uint32_t L);

// The reader of a block; never fails (unreadable blocks match every key).
// `unreadable` (if non-null) tells whether the block was rejected.
rocksdb::FilterBitsReader* MakeReader(const rocksdb::Slice& contents, PolicyShared* shared,
                                      bool* unreadable);

struct ParsedBlock;
// True if the parsed block may match every hash in `hashes` (post-verify).
bool AllHashesMayMatch(const ParsedBlock& block, const std::vector<uint64_t>& hashes);

// A builder for `plan`.
rocksdb::FilterBitsBuilder* NewDLeftBuilder(const DLeftFilterPlan& plan, uint32_t max_nodes,
                                            uint64_t max_block_bytes,
                                            std::shared_ptr<PolicyShared> shared, bool verify,
                                            rocksdb::Logger* info_log);

}  // namespace sst_filter
}  // namespace dlcbf
