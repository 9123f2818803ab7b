// SST filter builder: collects key hashes, plans the table, inserts with
// relocation, retries and falls back, and encodes the block.
//
// Versions 2 (blocked table) and 3 (packed table) are built in place: the
// builder allocates the final buffer once, placement writes the blocks
// into it, and the header and checksum are written around them; nothing is
// copied afterwards.
//
// Never failing a flush: if an insert overflows (all candidate buckets
// full and no relocation chain found), the table is rebuilt with fresh
// permutation keys, then at 5% lower load each time (more space), up to
// kMaxAttempts; the last resort is a standard Bloom filter in the same
// block format (kind 2), which cannot lose keys. Both are counted and
// logged. Every key hash is inserted: no key is ever dropped.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "dlcbf/core/dleft_counting_bloom_filter.h"
#include "dlcbf/internal/coding.h"
#include "dlcbf/internal/dleft_layout.h"
#include "dlcbf/internal/hash.h"
#include "filter_policy/rocksdb/common/option_string.h"
#include "filter_policy/rocksdb/sst_filter/block_format.h"
#include "filter_policy/rocksdb/sst_filter/sst_filter_internal.h"

namespace dlcbf {
namespace sst_filter {

using option_string::FormatDecimal;

namespace {

class DLeftBuilder final : public FilterBitsBuilder {
 public:
  DLeftBuilder(const DLeftFilterPlan& plan, uint32_t max_nodes, uint64_t max_block_bytes,
               std::shared_ptr<PolicyShared> shared, bool verify, rocksdb::Logger* info_log)
      : plan_(plan), max_nodes_(max_nodes), max_block_bytes_(max_block_bytes),
        shared_(std::move(shared)), verify_(verify), info_log_(info_log) {}

  void AddKey(const Slice& key) override {
    const uint64_t h = internal::HashKey(key.data(), key.size(), kKeyHashSeed);
    if (match_all_) return;  // out of memory earlier: the block will match every key
    if (!hashes_.empty() && hashes_.back() == h) return;  // adjacent repeat
    try {
      hashes_.push_back(h);
    } catch (const std::bad_alloc&) {
      OutOfMemory("holding the key hashes");
      return;
    }
    if (verify_) xor_ ^= h;
  }

#if DLCBF_FILTER_BUILDER_HAS_ADD_KEY_AND_ALT
  // RocksDB >= 9.6: a whole key and its prefix. The prefix is added once per
  // run of equal prefixes (consecutive keys share it), like AddKey's
  // adjacent-repeat check.
  void AddKeyAndAlt(const Slice& key, const Slice& alt) override {
    AddKey(key);
    if (has_last_alt_ && alt == Slice(last_alt_)) return;
    last_alt_.assign(alt.data(), alt.size());
    has_last_alt_ = true;
    AddKey(alt);
  }
#endif
#if DLCBF_FILTER_BUILDER_HAS_SPACE_AND_FP_RATE
  // RocksDB >= 10.9: these moved from BuiltinFilterBitsBuilder into
  // FilterBitsBuilder as pure virtuals.
  size_t CalculateSpace(size_t num_entries) override {
    return static_cast<size_t>(ExpectedBytes(num_entries));
  }
  double EstimatedFpRate(size_t /*num_entries*/, size_t /*bytes*/) override {
    return plan_.predicted_fpr;
  }
#endif

  size_t EstimateEntriesAdded() override { return match_all_ ? match_all_keys_ : hashes_.size(); }

  Slice Finish(std::unique_ptr<const char[]>* buf) override { return Finish(buf, nullptr); }

  Slice Finish(std::unique_ptr<const char[]>* buf, Status* status) override {
    if (status) *status = Status::OK();
    if (verify_) {
      uint64_t x = 0;
      for (uint64_t h : hashes_) x ^= h;
      if (x != xor_ && status) {
        *status = Status::Corruption("dlcbf filter: key hashes changed in memory before Finish");
      }
    }
    if (plan_.format_version >= 2 && !match_all_ && !hashes_.empty()) {
      Slice result;
      bool built = false;
      try {
        built = plan_.format_version == 3 ? BuildPacked(buf, &result) : BuildBlocked(buf, &result);
      } catch (const std::bad_alloc&) {
        OutOfMemory("building the filter block");
      }
      if (built) {
        shared_->filters_built.fetch_add(1, std::memory_order_relaxed);
        shared_->entries_built.fetch_add(hashes_.size(), std::memory_order_relaxed);
        ResetForNextFilter();
        return result;
      }
    }
    std::string block;
    char* mem = nullptr;
    try {
      if (match_all_) {
        BuildMatchAll(&block);
      } else {
        Build(&block);
      }
      mem = new char[block.size()];
    } catch (const std::bad_alloc&) {
      OutOfMemory("building the filter block");
      std::string().swap(block);
      BuildMatchAll(&block);  // ~64 bytes
      mem = new char[block.size()];
    }
    shared_->filters_built.fetch_add(1, std::memory_order_relaxed);
    shared_->entries_built.fetch_add(hashes_.size(), std::memory_order_relaxed);
    std::memcpy(mem, block.data(), block.size());
    buf->reset(mem);
    ResetForNextFilter();
    return Slice(mem, block.size());
  }

  // Reset for the next partition. Keep the hashes for MaybePostVerify.
  void ResetForNextFilter() {
    if (verify_) {
      pending_.swap(hashes_);
    }
    hashes_.clear();
    xor_ = 0;
    match_all_ = false;
    match_all_keys_ = 0;
#if DLCBF_FILTER_BUILDER_HAS_ADD_KEY_AND_ALT
    has_last_alt_ = false;
#endif
  }

  Status MaybePostVerify(const Slice& content) override {
    if (!verify_) return Status::OK();
    std::vector<uint64_t> pending;
    pending.swap(pending_);
    ParsedBlock p;
    std::string why;
    Status result;
    if (!ParseBlock(content, &p, &why)) {
      result = Status::Corruption("dlcbf filter post-verify: " + why);
    } else if (!AllHashesMayMatch(p, pending)) {
      result = Status::Corruption(p.kind == kKindEmpty
                                      ? "dlcbf filter post-verify: empty filter for added keys"
                                      : "dlcbf filter post-verify: a key hash is missing");
    }
    if (!result.ok()) shared_->post_verify_failures.fetch_add(1, std::memory_order_relaxed);
    return result;
  }

  size_t ApproximateNumEntries(size_t bytes) override {
    if (plan_.format_version == 3) {
      const size_t overhead = kPackedHeaderBytes + kChecksumBytes;
      if (bytes <= overhead + kPackedBlockBytes) return 0;
      const double blocks = static_cast<double>((bytes - overhead) / kPackedBlockBytes);
      double est = std::floor(blocks * PackedKeysPerBlock(0));
      if (est > 1e12) est = 1e12;
      uint64_t n = static_cast<uint64_t>(est);
      while (n > 0 && ExpectedBytes(n) > bytes) n -= std::max<uint64_t>(1, n / 1024);
      return static_cast<size_t>(n);
    }
    if (plan_.format_version == 2) {
      const size_t overhead = HeaderBytes(kKindBlocked, plan_.subtables) + kChecksumBytes;
      if (bytes <= overhead + kBlockBytes) return 0;
      const double blocks = static_cast<double>((bytes - overhead) / kBlockBytes);
      const double cells = plan_.subtables * BlockedBuckets(plan_.subtables, plan_.remainder_bits);
      double est = std::floor(blocks * cells * plan_.load);
      if (est > 1e12) est = 1e12;
      uint64_t n = static_cast<uint64_t>(est);
      while (n > 0 && ExpectedBytes(n) > bytes) n -= std::max<uint64_t>(1, n / 1024);
      return static_cast<size_t>(n);
    }
    const size_t overhead = HeaderBytes(kKindDLeft, plan_.subtables) + kChecksumBytes;
    if (bytes <= overhead) return 0;
    const double payload_bits = static_cast<double>(bytes - overhead) * 8.0;
    double est = std::floor(payload_bits * plan_.load / plan_.remainder_bits);
    if (est > 1e12) est = 1e12;
    uint64_t n = static_cast<uint64_t>(est);
    // Step down until the block built for n entries fits.
    while (n > 0 && BlockBytesFor(n) > bytes) n -= std::max<uint64_t>(1, n / 1024);
    return static_cast<size_t>(n);
  }

 private:
  // The block size for n keys: exact for version 1; for version 2 the home
  // blocks and one tail block (the carry after the last home block rarely
  // needs more).
  uint64_t ExpectedBytes(uint64_t n) const {
    if (plan_.format_version == 3) {
      return kPackedHeaderBytes + (PackedHome(n, 0) + 1) * kPackedBlockBytes + kChecksumBytes;
    }
    if (plan_.format_version != 2) return BlockBytesFor(n);
    return HeaderBytes(kKindBlocked, plan_.subtables) +
           (BlockedHome(n, plan_.load) + 1) * kBlockBytes + kChecksumBytes;
  }
  uint64_t BlockBytesFor(uint64_t n) const { return BlockBytesFor(n, plan_.load); }
  uint64_t BlockBytesFor(uint64_t n, double load) const {
    internal::Geometry g;
    g.subtables = plan_.subtables;
    g.cells = plan_.cells_per_bucket;
    g.remainder_bits = plan_.remainder_bits;
    g.buckets = BucketsFor(n, load, g.subtables, g.cells);
    return HeaderBytes(kKindDLeft, g.subtables) + g.total_bytes() + kChecksumBytes;
  }

  // Version 2: home blocks for n keys at `load`, the tail allowance, and
  // the largest block the build may need (header, H + tail blocks, checksum).
  uint64_t BlockedHome(uint64_t n, double load) const {
    const double cells = plan_.subtables * BlockedBuckets(plan_.subtables, plan_.remainder_bits);
    const double h = std::ceil(static_cast<double>(n) / (load * cells));
    if (!(h >= 1.0)) return 1;
    if (h > 1e13) return uint64_t{1} << 44;  // absurd; the size check rejects it
    return static_cast<uint64_t>(h);
  }
  static uint64_t BlockedMaxTail(uint64_t home) { return 4 + home / 256; }
  uint64_t BlockedBytesFor(uint64_t n, double load) const {
    const uint64_t home = BlockedHome(n, load);
    return HeaderBytes(kKindBlocked, plan_.subtables) +
           (home + BlockedMaxTail(home)) * kBlockBytes + kChecksumBytes;
  }

  // Builds a version-2 block straight into its final buffer. False (after
  // logging) if it would exceed max_filter_block_bytes or did not place
  // within kMaxAttempts; the caller then writes a Bloom-format block.
  bool BuildBlocked(std::unique_ptr<const char[]>* buf, Slice* result) {
    const uint64_t n = hashes_.size();
    BlockedGeometry g;
    g.d = plan_.subtables;
    g.r = plan_.remainder_bits;
    g.K = BlockedBuckets(g.d, g.r);
    DefaultBlockedMultipliers(&g);
    const size_t header = HeaderBytes(kKindBlocked, g.d);
    for (int attempt = 0; attempt < kMaxAttempts; ++attempt) {
      // Attempts after an undrained carry use 5% fewer keys per block each.
      const double load = plan_.load * std::pow(0.95, attempt);
      const uint64_t cap = BlockedBytesFor(n, load);
      if (cap > max_block_bytes_) {
        WarnTooLarge("blocked", n, cap);
        return false;
      }
      g.home_blocks = BlockedHome(n, load);
      const uint64_t max_tail = BlockedMaxTail(g.home_blocks);
      std::unique_ptr<char[]> mem(new char[cap]);
      std::memset(mem.get(), 0, cap);
      BlockedBuildStats st;
      if (!BuildBlockedTable(hashes_, max_tail, &g, mem.get() + header, &st)) {
        shared_->placement_retries.fetch_add(1, std::memory_order_relaxed);
        Warn("blocked d-left placement did not drain within %llu tail blocks at load %.3f "
             "(attempt %d, %llu keys); rebuilding with more blocks",
             static_cast<unsigned long long>(max_tail), load, attempt + 1,
             static_cast<unsigned long long>(n));
        continue;
      }
      std::string head;
      head.reserve(header);
      PutHeader(&head, kBlockVersion2, kKindBlocked, static_cast<uint8_t>(g.d), 1,
                static_cast<uint8_t>(g.r), 0, static_cast<uint8_t>(attempt), g.home_blocks,
                st.stored, g.payload_bytes());
      for (uint32_t i = 0; i < g.d; ++i) internal::PutFixed32(&head, g.multipliers[i]);
      head.resize(header, '\0');                     // padding: blocks start at 64 or 128
      std::memcpy(mem.get(), head.data(), header);  // the header only
      const size_t body = header + static_cast<size_t>(g.payload_bytes());
      internal::EncodeFixed64(mem.get() + body, internal::HashKey(mem.get(), body, 0));
      *result = Slice(mem.get(), body + kChecksumBytes);
      buf->reset(mem.release());
      return true;
    }
    return false;
  }

  // Version 3: keys per home block (lambda = 512 / bits per key), 5% fewer
  // for each earlier attempt whose carry did not drain; home blocks for n
  // keys; the largest block the build may need.
  double PackedKeysPerBlock(int attempt) const {
    return plan_.load * plan_.slots_per_block * std::pow(0.95, attempt);
  }
  uint64_t PackedHome(uint64_t n, int attempt) const {
    const double h = std::ceil(static_cast<double>(n) / PackedKeysPerBlock(attempt));
    if (!(h >= 1.0)) return 1;
    if (h > 1e13) return uint64_t{1} << 44;  // absurd; the size check rejects it
    return static_cast<uint64_t>(h);
  }
  uint64_t PackedBytesFor(uint64_t n, int attempt) const {
    const uint64_t home = PackedHome(n, attempt);
    return kPackedHeaderBytes + (home + BlockedMaxTail(home)) * kPackedBlockBytes + kChecksumBytes;
  }

  // Builds a version-3 block straight into its final buffer; as
  // BuildBlocked, false (after logging) sends the caller to the Bloom format.
  //
  //   offset  size  field (little-endian; FORMATS.md, "Version 3")
  //        0    48  fixed header: version 3, kind 4, d = L = 0, r, c = k = 0,
  //                 retries, H home blocks, seed, entries, payload bytes
  //       48     1  C slots per block
  //       49     1  B buckets per block
  //       50    14  zero
  //       64  64 T  T >= H blocks (packed_table.cc draws one)
  //   64+64T     8  XXH3-64 (seed 0) of bytes [0, 64 + 64 T)
  bool BuildPacked(std::unique_ptr<const char[]>* buf, Slice* result) {
    const uint64_t n = hashes_.size();
    PackedGeometry g;
    g.r = plan_.remainder_bits;
    g.C = plan_.slots_per_block;
    g.B = plan_.buckets_per_block;
    for (int attempt = 0; attempt < kMaxAttempts; ++attempt) {
      const uint64_t cap = PackedBytesFor(n, attempt);
      if (cap > max_block_bytes_) {
        WarnTooLarge("packed", n, cap);
        return false;
      }
      g.home_blocks = PackedHome(n, attempt);
      const uint64_t max_tail = BlockedMaxTail(g.home_blocks);
      std::unique_ptr<char[]> mem(new char[cap]);
      std::memset(mem.get(), 0, cap);
      PackedBuildStats st;
      if (!BuildPackedTable(hashes_, max_tail, &g, mem.get() + kPackedHeaderBytes, &st)) {
        shared_->placement_retries.fetch_add(1, std::memory_order_relaxed);
        Warn("packed d-left carry did not drain within %llu tail blocks (attempt %d, %llu keys); "
             "rebuilding with 5%% more blocks",
             static_cast<unsigned long long>(max_tail), attempt + 1,
             static_cast<unsigned long long>(n));
        continue;
      }
      std::string head;
      head.reserve(kPackedHeaderBytes);
      PutHeader(&head, kBlockVersion3, kKindPacked, 0, 0, static_cast<uint8_t>(g.r), 0,
                static_cast<uint8_t>(attempt), g.home_blocks, st.stored, g.payload_bytes());
      internal::PutFixed8(&head, static_cast<uint8_t>(g.C));
      internal::PutFixed8(&head, static_cast<uint8_t>(g.B));
      head.resize(kPackedHeaderBytes, '\0');
      std::memcpy(mem.get(), head.data(), kPackedHeaderBytes);
      const size_t body = kPackedHeaderBytes + static_cast<size_t>(g.payload_bytes());
      internal::EncodeFixed64(mem.get() + body, internal::HashKey(mem.get(), body, 0));
      *result = Slice(mem.get(), body + kChecksumBytes);
      buf->reset(mem.release());
      return true;
    }
    return false;
  }

  uint8_t version() const {
    return plan_.format_version == 3   ? kBlockVersion3
           : plan_.format_version == 2 ? kBlockVersion2
                                       : kBlockVersion1;
  }

  void Build(std::string* out) {
    const uint64_t n = hashes_.size();
    if (n == 0) {
      PutHeader(out, version(), kKindEmpty, 0, 0, 0, 0, 0, 0, 0, 0);
      internal::PutFixed64(out, internal::HashKey(out->data(), out->size(), 0));
      return;
    }
    if (plan_.format_version >= 2) {  // the in-place build failed
      BuildBloom(out);
      return;
    }
    if (BlockBytesFor(n, plan_.load) > max_block_bytes_) {
      Warn("a d-left filter for %llu keys needs %llu bytes, over the filter block limit of %llu "
           "bytes (max_filter_block_bytes; RocksDB's own filters stop at ~4 GiB). Writing a "
           "Bloom-format block capped at the limit instead (lossless, higher FP rate). Use "
           "partitioned filters (BlockBasedTableOptions::partition_filters = true, index_type = "
           "kTwoLevelIndexSearch) or smaller SST files to keep the full FP rate.",
           static_cast<unsigned long long>(n),
           static_cast<unsigned long long>(BlockBytesFor(n, plan_.load)),
           static_cast<unsigned long long>(max_block_bytes_));
      BuildBloom(out);
      return;
    }
    for (int attempt = 0; attempt < kMaxAttempts; ++attempt) {
      const double load = plan_.load * std::pow(0.95, std::max(0, attempt - 1));
      if (BlockBytesFor(n, load) > max_block_bytes_) break;  // retries at lower load grow the table
      DLeftOptions o;
      o.subtables = plan_.subtables;
      o.cells_per_bucket = plan_.cells_per_bucket;
      o.remainder_bits = plan_.remainder_bits;
      o.counter_bits = 0;
      o.buckets_per_subtable = BucketsFor(n, load, o.subtables, o.cells_per_bucket);
      o.seed = internal::Mix64(kPermSeedBase + static_cast<uint64_t>(attempt));
      o.relocation = Relocation::kBreadthFirst;
      o.max_relocation_nodes = max_nodes_;
      std::unique_ptr<DLeftCountingBloomFilter> f;
      const dlcbf::Status s = DLeftCountingBloomFilter::Create(o, &f);
      if (!s.ok()) {
        Warn("cannot allocate a d-left table for %llu keys (%s)",
             static_cast<unsigned long long>(n), s.ToString().c_str());
        break;
      }
      bool ok = true;
      for (uint64_t h : hashes_) {
        if (f->InsertHash(h) != OpResult::kOk) {
          ok = false;
          break;
        }
      }
      if (!ok) {
        shared_->placement_retries.fetch_add(1, std::memory_order_relaxed);
        Warn("d-left placement overflow at load %.3f (attempt %d, %llu keys); rebuilding", load,
             attempt + 1, static_cast<unsigned long long>(n));
        continue;
      }
      const std::vector<uint64_t> pk = f->permutation_keys();
      const uint64_t payload = f->bytes();
      out->reserve(HeaderBytes(kKindDLeft, o.subtables) + payload + kChecksumBytes);
      PutHeader(out, kBlockVersion1, kKindDLeft, static_cast<uint8_t>(o.subtables),
                static_cast<uint8_t>(o.cells_per_bucket), static_cast<uint8_t>(o.remainder_bits), 0,
                static_cast<uint8_t>(attempt), o.buckets_per_subtable, n, payload);
      for (uint64_t key : pk) internal::PutFixed64(out, key);
      f->AppendPackedBits(out);
      internal::PutFixed64(out, internal::HashKey(out->data(), out->size(), 0));
      return;
    }
    BuildBloom(out);
  }

  void BuildBloom(std::string* out) {
    shared_->bloom_fallbacks.fetch_add(1, std::memory_order_relaxed);
    const uint64_t n = hashes_.size();
    Warn("writing a Bloom-format filter block for %llu keys", static_cast<unsigned long long>(n));
    const double want_bpk = plan_.bits_per_key;
    // Capped at max_filter_block_bytes (header and checksum included).
    const uint64_t max_bits = (max_block_bytes_ - kFixedHeader - kChecksumBytes) * 8;
    const uint64_t m = std::min<uint64_t>(
        max_bits, std::max<uint64_t>(64, static_cast<uint64_t>(std::ceil(want_bpk * n))));
    const double bpk = static_cast<double>(m) / static_cast<double>(std::max<uint64_t>(1, n));
    const uint32_t k = std::min<uint32_t>(
        kMaxBloomProbes, std::max<uint32_t>(1, static_cast<uint32_t>(std::lround(bpk * 0.6931))));
    const uint64_t payload = (m + 7) / 8;
    PutHeader(out, version(), kKindBloom, 0, 0, 0, static_cast<uint8_t>(k), kMaxAttempts, m, n,
              payload);
    const size_t start = out->size();
    out->append(static_cast<size_t>(payload), '\0');
    char* bits = &(*out)[start];
    for (uint64_t h : hashes_) {
      uint64_t x = h;
      const uint64_t delta = internal::Mix64(h) | 1;
      for (uint32_t j = 0; j < k; ++j) {
        const uint64_t pos = internal::Mul64Hi(x, m);
        bits[pos >> 3] = static_cast<char>(bits[pos >> 3] | (1 << (pos & 7)));
        x += delta;
      }
    }
    internal::PutFixed64(out, internal::HashKey(out->data(), out->size(), 0));
  }

  // A Bloom-format block of 64 set bits: matches every key (lossless, no
  // filtering). Used when memory ran out; needs ~72 bytes.
  void BuildMatchAll(std::string* out) {
    out->clear();
    PutHeader(out, version(), kKindBloom, 0, 0, 0, 1, kMaxAttempts, 64, match_all_keys_, 8);
    internal::PutFixed64(out, ~uint64_t{0});
    internal::PutFixed64(out, internal::HashKey(out->data(), out->size(), 0));
  }

  void OutOfMemory(const char* where) {
    if (!match_all_) {
      match_all_keys_ = hashes_.size();
      Warn("out of memory while %s (%llu keys); this SST gets a filter that matches every key "
           "(no false negatives, no filtering)",
           where, static_cast<unsigned long long>(hashes_.size()));
      shared_->bloom_fallbacks.fetch_add(1, std::memory_order_relaxed);
    }
    match_all_ = true;
    xor_ = 0;
    pending_.clear();
    std::vector<uint64_t>().swap(hashes_);
  }

  // The in-place build of version 2 or 3 would exceed max_filter_block_bytes.
  void WarnTooLarge(const char* layout, uint64_t n, uint64_t cap) {
    Warn("a %s d-left filter for %llu keys needs up to %llu bytes, over the filter block "
         "limit of %llu bytes (max_filter_block_bytes; RocksDB's own filters stop at ~4 GiB). "
         "Writing a Bloom-format block capped at the limit instead (lossless, higher FP "
         "rate). Use partitioned filters (BlockBasedTableOptions::partition_filters = true, "
         "index_type = kTwoLevelIndexSearch) or smaller SST files to keep the full FP rate.",
         layout, static_cast<unsigned long long>(n), static_cast<unsigned long long>(cap),
         static_cast<unsigned long long>(max_block_bytes_));
  }

  template <typename... Args>
  void Warn(const char* fmt, Args... args) {
    if (info_log_ == nullptr) return;
    std::string f = std::string("[dlcbf] ") + fmt;
    rocksdb::Log(rocksdb::InfoLogLevel::WARN_LEVEL, info_log_, f.c_str(), args...);
  }

  const DLeftFilterPlan plan_;
  const uint32_t max_nodes_;
  const uint64_t max_block_bytes_;
  const std::shared_ptr<PolicyShared> shared_;
  const bool verify_;
  rocksdb::Logger* const info_log_;
  std::vector<uint64_t> hashes_;
  std::vector<uint64_t> pending_;
  uint64_t xor_ = 0;
  bool match_all_ = false;      // out of memory: write a match-all block
  uint64_t match_all_keys_ = 0;
#if DLCBF_FILTER_BUILDER_HAS_ADD_KEY_AND_ALT
  std::string last_alt_;  // the prefix last added by AddKeyAndAlt
  bool has_last_alt_ = false;
#endif
};


}  // namespace

FilterBitsBuilder* NewDLeftBuilder(const DLeftFilterPlan& plan, uint32_t max_nodes,
                                   uint64_t max_block_bytes, std::shared_ptr<PolicyShared> shared,
                                   bool verify, rocksdb::Logger* info_log) {
  return new DLeftBuilder(plan, max_nodes, max_block_bytes, std::move(shared), verify, info_log);
}

}  // namespace sst_filter
}  // namespace dlcbf
