// The index of one column family: a thread-safe dlCBF over the live keys,
// with the lossless handover to an ElasticFilter when it overflows. Internal
// to filter_policy/rocksdb/live_key_db/.
//
// The dlCBF is the cache-line-local FastDLeftFilter (D = 2, seed
// dleft.seed), thread-safe: lock-free readers validate a negative against a
// per-stripe sequence number, so a relocation or spill never hides a live
// key (tests/fast_dleft_filter_test.cc, with its negative control). Sized by
// FastDLeftOptions::ForLoad at min(sizing_load, MaxLoad = 0.80).
// Handover (on the first kOverflow, under mu_, on the writer that hit it;
// not in the background): an ElasticFilter with the fast kernel of the same
// blocks and seed receives every stored fingerprint through
// ForEachFingerprint and HashOfFingerprint (checked against
// FingerprintOfHash), with its multiplicity, before it is published; the
// frozen kernel keeps serving readers until then and is freed after an
// epoch grace period.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "dlcbf/core/elastic_filter.h"
#include "dlcbf/core/fast_dleft_filter.h"
#include "dlcbf/rocksdb/live_key_db.h"
#include "filter_policy/rocksdb/live_key_db/epochs.h"
#include "rocksdb/slice.h"
#include "rocksdb/status.h"

namespace dlcbf {
namespace live_key {

using rocksdb::Slice;
using rocksdb::Status;


// ---------------------------------------------------------------------------
// The index of one column family.
// ---------------------------------------------------------------------------
class LiveKeyIndex {
 public:
  // The kernel's options for `sized_for` keys.
  static FastDLeftOptions KernelOptions(const LiveKeyIndexOptions& o, uint64_t sized_for) {
    FastDLeftOptions f = FastDLeftOptions::ForLoad(
        std::max<uint64_t>(1, sized_for),
        std::min(o.sizing_load, FastDLeftOptions::MaxLoad(2)), 2);
    f.seed = o.dleft.seed;
    f.thread_safe = true;
    return f;
  }

  static Status Create(const LiveKeyIndexOptions& o, uint64_t sized_for, EpochDomain* epochs,
                       std::unique_ptr<LiveKeyIndex>* out) {
    std::unique_ptr<FastDLeftFilter> f;
    Status s = FastDLeftFilter::Create(KernelOptions(o, sized_for), &f);
    if (!s.ok()) return s;
    std::unique_ptr<LiveKeyIndex> idx(new LiveKeyIndex(o, sized_for, epochs));
    idx->dleft_ = std::move(f);
    *out = std::move(idx);
    return Status::OK();
  }

  static Status Load(const Slice& blob, const LiveKeyIndexOptions& o, uint64_t sized_for,
                     uint64_t entries, EpochDomain* epochs, std::unique_ptr<LiveKeyIndex>* out) {
    std::unique_ptr<FastDLeftFilter> f;
    Status s = FastDLeftFilter::Deserialize(blob, &f, /*thread_safe=*/true);
    if (!s.ok()) return s;
    if (f->options().seed != o.dleft.seed) return Status::Corruption("hash seed differs");
    if (f->options().subtables != 2) return Status::Corruption("kernel is not D = 2");
    if (sized_for == 0) return Status::Corruption("sized_for is 0");
    std::unique_ptr<LiveKeyIndex> idx(new LiveKeyIndex(o, sized_for, epochs));
    idx->dleft_ = std::move(f);
    idx->entries_.store(entries);
    *out = std::move(idx);
    return Status::OK();
  }

  bool Contains(uint64_t h) const {
    const ElasticFilter* e = elastic_pub_.load();
    if (e != nullptr) return e->ContainsHash(h);
    return dleft_->ContainsHash(h);  // one 64-byte line (two if spilled)
  }
  // Starts loading what Contains/Insert of h read: this object's writer
  // lock and, until handed over, the dlCBF's lines for h
  // (FastDLeftFilter::PrefetchHash). Like Contains: in a read section.
  void Prefetch(uint64_t h) const {
    __builtin_prefetch(&mu_, 1);
    __builtin_prefetch(&entries_, 1);
    if (elastic_pub_.load() == nullptr) dleft_->PrefetchHash(h);
  }
  void ContainsBatch(const uint64_t* h, size_t n, bool* out) const {
    const ElasticFilter* e = elastic_pub_.load();
    if (e == nullptr) {
      dleft_->ContainsHashBatch(h, n, out);
    } else {
      for (size_t i = 0; i < n; ++i) out[i] = e->ContainsHash(h[i]);
    }
  }

  // Never fails except when memory for the elastic filter cannot be had;
  // then the index is unchanged and the caller must not write the key.
  Status Insert(uint64_t h) {
    std::lock_guard<std::mutex> l(mu_);
    if (!elastic_) {
      if (dleft_->InsertHash(h) == OpResult::kOk) {
        AddEntries(1);
        return Status::OK();
      }
      Status s = HandoverLocked();
      if (!s.ok()) return s;
    }
    if (elastic_->InsertHash(h) != OpResult::kOk) {
      return Status::MemoryLimit("LiveKeyDB: the elastic index could not grow");
    }
    AddEntries(1);
    // Free frozen filters once no reader can be inside them: ours right
    // after the handover, the ElasticFilter's dlCBF once it migrated.
    const bool migrated = elastic_->mode() == ElasticMode::kAutoscaling;
    if (dleft_ || (migrated && !elastic_released_)) {
      epochs_->Synchronize();
      dleft_.reset();
      if (migrated) {
        elastic_->ReleaseRetired();
        elastic_released_ = true;
      }
    }
    return Status::OK();
  }

  // Only for keys counted on behalf of the caller (see the invariant).
  void Erase(uint64_t h) {
    std::lock_guard<std::mutex> l(mu_);
    const OpResult r = elastic_ ? elastic_->EraseHash(h) : dleft_->EraseHash(h);
    if (r == OpResult::kOk) AddEntries(-1);
  }

  uint64_t entries() const { return entries_.load(std::memory_order_relaxed); }
  uint64_t sized_for() const { return sized_for_; }
  bool handed_over() const { return elastic_pub_.load(std::memory_order_relaxed) != nullptr; }
  bool NeedsRebuild(double drift) const {
    return handed_over() ||
           static_cast<double>(entries()) > drift * static_cast<double>(sized_for_);
  }

  // False when handed over (the elastic filter cannot be serialized).
  bool Serialize(std::string* out) const {
    std::lock_guard<std::mutex> l(mu_);
    if (elastic_ || !dleft_) return false;
    dleft_->Serialize(out);
    return true;
  }

  void Describe(LiveKeyCfStats* st) const {
    std::lock_guard<std::mutex> l(mu_);
    st->entries = entries();
    st->sized_for = sized_for_;
    st->drift = sized_for_ ? static_cast<double>(st->entries) / static_cast<double>(sized_for_) : 0;
    if (!elastic_) {
      st->mode = "dlcbf";
      st->bytes = dleft_->bytes();
      st->predicted_fpr = dleft_->PredictedFpr();
      return;
    }
    const ElasticStats es = elastic_->Stats();
    st->mode = es.mode == ElasticMode::kDLeft ? "elastic-dlcbf" : "elastic-abf";
    st->bytes = es.bytes + es.retained_bytes + (dleft_ ? dleft_->bytes() : 0);
    st->predicted_fpr = es.predicted_fpr;
  }

 private:
  LiveKeyIndex(const LiveKeyIndexOptions& o, uint64_t sized_for, EpochDomain* epochs)
      : abf_counter_bits_(o.abf_counter_bits), sized_for_(std::max<uint64_t>(1, sized_for)),
        epochs_(epochs) {}

  // mu_ held. Re-creates the dlCBF's contents in an ElasticFilter (fast
  // kernel, same blocks and seed, so every key hash maps to the same true
  // fingerprint in both).
  Status HandoverLocked() {
    ElasticOptions eo;
    eo.kernel = ElasticKernel::kFast;
    eo.fast = dleft_->options();
    eo.expected_items = 0;  // keep the exact geometry
    eo.thread_safe = true;
    eo.abf_counter_bits = abf_counter_bits_;
    std::unique_ptr<ElasticFilter> e;
    Status s = ElasticFilter::Create(eo, &e);
    if (!s.ok()) return s;
    bool ok = true;
    dleft_->ForEachFingerprint([&](const FastDLeftFilter::TrueFingerprint& f, uint32_t count) {
      const uint64_t h = dleft_->HashOfFingerprint(f);
      const FastDLeftFilter::TrueFingerprint g = dleft_->FingerprintOfHash(h);
      if (g.block != f.block || g.bucket != f.bucket || g.remainder != f.remainder) {
        ok = false;  // cannot happen for tables up to 64 GiB; never lose a key
        return;
      }
      for (uint32_t i = 0; i < count; ++i) ok &= e->InsertHash(h) == OpResult::kOk;
    });
    if (!ok) return Status::MemoryLimit("LiveKeyDB: the elastic index could not be allocated");
    elastic_ = std::move(e);
    elastic_pub_.store(elastic_.get());  // readers switch here
    return Status::OK();
  }

  // mu_ held: the only writer, so a plain load and store (no locked
  // read-modify-write on the insert path); readers load it relaxed.
  void AddEntries(int64_t d) {
    entries_.store(entries_.load(std::memory_order_relaxed) + static_cast<uint64_t>(d),
                   std::memory_order_relaxed);
  }

  const uint32_t abf_counter_bits_;
  const uint64_t sized_for_;
  EpochDomain* const epochs_;
  mutable std::mutex mu_;  // every mutation
  std::unique_ptr<FastDLeftFilter> dleft_;  // until handed over + grace
  std::unique_ptr<ElasticFilter> elastic_;
  std::atomic<const ElasticFilter*> elastic_pub_{nullptr};
  bool elastic_released_ = false;
  std::atomic<uint64_t> entries_{0};
};


}  // namespace live_key
}  // namespace dlcbf
