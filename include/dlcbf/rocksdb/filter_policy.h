// RocksDB FilterPolicy that stores a static d-left fingerprint table (a
// dlCBF without counters) in every SST filter block, full or partitioned.
//
// Quick start
//   BlockBasedTableOptions t;
//   std::shared_ptr<const rocksdb::FilterPolicy> p;
//   Status s = dlcbf::NewDLeftFilterPolicy(dlcbf::DLeftFilterPolicyOptions{}, &p);
//   t.filter_policy = p;                 // 10 bits/key, same space as
//                                        // NewBloomFilterPolicy(10)
// or by name, once the factories are registered (automatic when
// libdlcbf_plugin.so is loaded; otherwise call dlcbf::RegisterAll):
//   rocksdb::FilterPolicy::CreateFromString(cfg, "dlcbf:10", &p);
//   OPTIONS file:  filter_policy=dlcbf:10
//
// Id strings (what GetId() returns, what OPTIONS files hold)
//   dlcbf                   10 bits per key
//   dlcbf:<bits>            bits per key, a decimal: "dlcbf:10", "dlcbf:9.5"
//   dlcbf:fpr<rate>         smallest space that reaches the target FP rate:
//                           "dlcbf:fpr0.005"
//   ...followed by optional expert overrides, each ":<name><value>":
//     d<2..8>               subtables               "dlcbf:10:d3"
//     L<1..8>               cells per bucket        "dlcbf:10:d2:L4"
//     r<2..32>              remainder bits
//     load<0.05..0.99>      target cell load (at most one of r and load
//                           with a bits budget: the other follows from it)
//     nodes<0..65536>       relocation search budget (buckets visited;
//                           format version 1 only)
//     v<1|2|3>              block format version to write (see below)
//   d, L and load describe the fixed-cell layouts (versions 1 and 2): with
//   any of them and no v, the plan is version 2 (or 1); ":v3" takes only r.
//   Numbers are plain decimals (an exponent is accepted, e.g. fpr1e-4);
//   signs, "nan", "inf" and hex are rejected. Any error is
//   Status::InvalidArgument naming the field. Values are canonicalized to
//   6 significant digits, so GetId() round-trips exactly.
//   Fractional bits per key ARE supported. (ObjectLibrary's
//   PatternEntry::AddNumber(":") matches integers only, AddNumber(":", false)
//   decimals; we register "dlcbf" plus AddSeparator(":") and parse the rest
//   ourselves, so malformed values get a precise error instead of "not
//   found".)
//
// Space budget
//   bits_per_key means what it means for NewBloomFilterPolicy: filter bits
//   per distinct key (or prefix) added, not counting a constant-size block
//   header and checksum (versions 2 and 3: 64 bytes, one tail block of 64
//   bytes at most in practice, and 8; version 1: 48 + 16 d and 8). So
//   "dlcbf:10" and "bloomfilter:10" spend the same space.
//
// Block format versions (filter_policy/FORMATS.md)
//   3 (default): the packed table -- buckets of variable occupancy in one
//     64-byte block behind a unary directory; a negative query reads one
//     cache line (plus the next for ~1 in 9 queries) and compares only its
//     own bucket's remainders. r in [4, 16]. 10 bits/key: ~0.64% FPR.
//     Planned for 9 bits/key and more (and any fp_rate it can reach);
//     below that, version 2 is planned.
//   2: the blocked table -- d fixed cells per key in one 64-byte block
//     (":v2", or when d or load is given). 10 bits/key: ~0.87% FPR.
//   1: d subtables in separate arrays (d cache lines per query). Written
//     when asked for (":v1"), when the geometry needs it (L >= 2 or r > 16)
//     or when the target FP rate needs more than 16 remainder bits.
//   Readers accept every version, so SSTs of all kinds mix in one DB; a
//   downgrade to a release that reads only versions 1 and 2 needs ":v2"
//   first (and the SSTs rewritten by compaction).
//
// Thread safety: the policy and its readers are immutable and safe to share;
// each builder is used by one thread at a time (as RocksDB does).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "rocksdb/env.h"
#include "rocksdb/filter_policy.h"
#include "rocksdb/status.h"

namespace dlcbf {

// RocksDB 7.8.3's own maximum filter size (bytes); see max_filter_block_bytes.
constexpr uint64_t kDefaultMaxFilterBlockBytes = 0xffffffc0;

struct DLeftFilterPolicyOptions {
  // Space budget in bits per distinct key, as for Bloom. Used when
  // fp_rate == 0. Valid range [4, 48].
  double bits_per_key = 10.0;

  // If > 0: target false-positive rate instead of a space budget; the
  // policy picks the geometry with the least space that reaches it.
  // Valid range [1e-9, 0.5].
  double fp_rate = 0.0;

  // Expert geometry overrides; 0 means "choose automatically".
  uint32_t subtables = 0;         // d, [2, 8]
  uint32_t cells_per_bucket = 0;  // L, [1, 8]
  uint32_t remainder_bits = 0;    // r, [2, 32]
  double load = 0.0;              // target fraction of cells used, [0.05, 0.99]

  // Buckets visited by the breadth-first relocation search per insert
  // (version 1; the version-2 search is bounded by the 64-byte block).
  uint32_t max_relocation_nodes = 256;  // [0, 65536]

  // Block format to write: 0 = automatic (3, unless the overrides or the
  // budget call for 2 or 1), 1, 2 or 3. Readers read every version
  // whatever this says.
  uint32_t format_version = 0;

  // Largest filter block a builder writes, header included, [4096,
  // 0xffffffc0]. The default is RocksDB's own limit for filters (its
  // FastLocalBloom never exceeds 0xffffffc0 bytes). When an SST's d-left
  // table would be larger, the block is written in the Bloom format capped
  // at this size (lossless, higher FP rate), counted in bloom_fallbacks and
  // logged with the advice to use partitioned filters. Not part of the id.
  uint64_t max_filter_block_bytes = kDefaultMaxFilterBlockBytes;

  // Where readers report unreadable filter blocks (they then answer "may
  // match" for every key). Builders log to FilterBuildingContext::info_log.
  // Not part of the id; may be null.
  std::shared_ptr<rocksdb::Logger> info_log;

  // OK or InvalidArgument naming the offending field.
  rocksdb::Status Validate() const;
};

// The geometry the policy uses; B follows from the number of keys.
struct DLeftFilterPlan {
  uint32_t format_version = 0;  // 1, 2 or 3
  uint32_t subtables = 0;       // d (0 in version 3: one bucket per key)
  uint32_t cells_per_bucket = 0;  // L (1 in version 2, 0 in version 3)
  uint32_t remainder_bits = 0;  // r (counter bits are always 0)
  uint32_t slots_per_block = 0;    // version 3: C remainders per block
  uint32_t buckets_per_block = 0;  // version 3: B buckets per block
  double load = 0;              // target cell load alpha (version 3: keys
                                // per home block / C)
  double bits_per_key = 0;      // payload bits per key: r / load (v1),
                                // 512 / (load * cells per block) (v2),
                                // 512 / (load * C) (v3)
  double predicted_fpr = 0;     // d * L * load / (2^r - 1); version 2 adds
                                // the measured overflow probes, version 3
                                // is its own model (planner.cc)
};

// Validates options and picks the geometry. InvalidArgument naming the field.
rocksdb::Status PlanDLeftFilter(const DLeftFilterPolicyOptions& options,
                                DLeftFilterPlan* plan);

// Creates the policy. InvalidArgument (naming the field) for bad options.
rocksdb::Status NewDLeftFilterPolicy(const DLeftFilterPolicyOptions& options,
                                     std::shared_ptr<const rocksdb::FilterPolicy>* out);
rocksdb::Status NewDLeftFilterPolicy(const DLeftFilterPolicyOptions& options,
                                     std::unique_ptr<const rocksdb::FilterPolicy>* out);

// Convenience, like rocksdb::NewBloomFilterPolicy: nullptr if bits_per_key
// is out of range.
std::shared_ptr<const rocksdb::FilterPolicy> NewDLeftFilterPolicy(double bits_per_key);

// Parses an id string ("dlcbf:10:d4", see above) into options, and back.
rocksdb::Status ParseDLeftFilterPolicyId(const std::string& id,
                                         DLeftFilterPolicyOptions* options);
std::string DLeftFilterPolicyId(const DLeftFilterPolicyOptions& options);

// Names used by the policy.
//   Name():              "dlcbf"  (table property rocksdb.filter.policy)
//   CompatibilityName(): "dlcbf.DLeftFilter" (metaindex key
//                        "fullfilter.dlcbf.DLeftFilter"); the block format
//                        version lives inside each block.
const char* DLeftFilterPolicyName();
const char* DLeftFilterCompatibilityName();

// True if `policy` is a dlcbf policy; then *options (if non-null) gets its
// canonical options.
bool IsDLeftFilterPolicy(const rocksdb::FilterPolicy* policy,
                         DLeftFilterPolicyOptions* options = nullptr);

// Event counters of one policy object (shared by its builders and readers).
struct DLeftFilterPolicyCounters {
  uint64_t filters_built = 0;       // Finish calls that produced a block
  uint64_t entries_built = 0;       // distinct hashes in those blocks
  uint64_t placement_retries = 0;   // tables rebuilt after an overflow
  uint64_t bloom_fallbacks = 0;     // blocks written in the Bloom format
  uint64_t unreadable_blocks = 0;   // readers that fell back to "may match"
  uint64_t post_verify_failures = 0;
};
DLeftFilterPolicyCounters GetDLeftFilterPolicyCounters(const rocksdb::FilterPolicy* policy);

}  // namespace dlcbf
