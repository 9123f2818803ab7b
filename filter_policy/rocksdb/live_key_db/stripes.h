// LiveKeyDB's per-key lock stripes (Stripes): the mutexes that serialize a
// key's liveness check, base write and index update; the sequence number
// each stripe was last released at (what a deferred check's snapshot must
// cover); and, per stripe, what is known of its keys whose checks are
// pending (KnownKey). Internal to filter_policy/rocksdb/live_key_db/.
//
// Contract.
//   - A key's stripe is Of(cf, hash(key)); every LiveKeyDB write of the key
//     holds it from before its index probe until after its index update.
//   - Writers release a stripe with Unlock(i, seq), seq = the DB's latest
//     sequence number after their write: ReleasedAt(i) is then a sequence
//     number at which every write made under stripe i is visible. Holders
//     that wrote nothing (the checker) may release mutex(i) directly.
//   - LockAll/UnlockAll take every stripe in index order (rebuild swaps,
//     ingestion, range deletes, checkpoints); batches take theirs sorted.
//   - The known-key calls need stripe i held (ForgetFamily: all stripes).
#pragma once

#include <atomic>
#include <cstdint>
#include <cstring>
#include <new>
#include <memory>
#include <mutex>
#include <string>

#include "rocksdb/slice.h"
#include "dlcbf/internal/hash.h"
#include "filter_policy/rocksdb/live_key_db/small_key.h"
#ifdef DLCBF_TESTING
#include "filter_policy/testing/live_key_db_testing.h"
#endif

namespace dlcbf {
namespace live_key {

// What a write knows of a key's count without reading it. While a key has
// a deferred check pending, LiveKeyDB remembers (per stripe, under the
// stripe) what the key's own writes have made of it:
//   kLive: the index holds exactly one copy on the key's behalf once its
//     pending checks have run (the key was last Put, or kept by an
//     untrusted SingleDelete);
//   kDead: it holds none (the key was last deleted).
// Each check erases one copy iff the key was live just before its write,
// whatever came after, so a write that knows the state needs neither a
// read nor a check, and adds no copy:
//   Put on kLive: nothing (the copy is there);   Put on kDead: insert;
//   Delete on kLive: erase after the write;      Delete on kDead: nothing.
// A blind write (state unknown) adds a copy and a check, and records the
// state; a key therefore holds at most two copies (its own and one blind
// copy) however often it is written while its check waits. kLive is set
// only when the copy is certain (a successful Put); every doubt leaves
// kUnknown, which falls back to the blind or reading path. A record lives
// while its key has pending checks (KnownKey::pending > 0). Range
// deletions and ingestions, which change keys without naming them, reset
// their family's records to kUnknown (Stripes::ForgetFamily).
// An unchecked copy (LiveKeyIndexOptions::unchecked_copy_budget: a busy
// overwrite that neither reads nor queues a check) leaves a kLive record
// with no pending check (NoteUnchecked), at most kUncheckedRecords per
// stripe: the key holds at least one copy of its own, which is all kLive's
// uses need (a Put adds none, a Delete erases one), so a hot key adds one
// unchecked copy, not one per write. Such a record lives until
// ForgetFamily drops it (a rebuild's scan point, a range deletion, an
// ingestion, a clip, a dropped family) or a check of the key finishes;
// dropping one only lets the next write take its path again.
enum class Known : uint8_t { kUnknown, kLive, kDead };
struct KnownKey {
  uint64_t slot = 0;  // KnownSlot(cf, hash): at most one record per slot and stripe
  uint32_t cf = 0;
  uint32_t pending = 0;  // deferred checks of the key not yet finished
  Known state = Known::kUnknown;
  SmallKey key;
};
// The record's cf and key must match its slot's lookup (a 64-bit hash
// collision between two keys finds no record for the second: it takes the
// ordinary path).
inline uint64_t KnownSlot(uint32_t cf, uint64_t hash) { return hash ^ (uint64_t{cf} << 40); }

class Stripes {
 public:
  // n: a power of two (LiveKeyIndexOptions::lock_stripes, validated).
  explicit Stripes(uint32_t n) : s_(new Stripe[n]), mask_(n - 1) {}
  Stripes(const Stripes&) = delete;
  Stripes& operator=(const Stripes&) = delete;

  uint32_t Of(uint32_t cf, uint64_t h) const {
    return static_cast<uint32_t>(internal::Mix64(h ^ (uint64_t{cf} * 0x9E3779B97F4A7C15ULL))) & mask_;
  }
  uint32_t count() const { return mask_ + 1; }
  // Starts loading stripe i (its mutex, stamp and records' header share a
  // cache line): a writer does, before its index probe.
  void Prefetch(uint32_t i) const { __builtin_prefetch(&s_[i], 1); }

  void Lock(uint32_t i) { s_[i].mu.lock(); }
  void Unlock(uint32_t i, uint64_t seq) {
    s_[i].released_at.store(seq, std::memory_order_release);
    s_[i].mu.unlock();
  }
  void LockAll() {
    for (uint32_t i = 0; i <= mask_; ++i) s_[i].mu.lock();
  }
  void UnlockAll(uint64_t seq) {
    all_epoch_.fetch_add(1, std::memory_order_release);
    for (uint32_t i = mask_ + 1; i-- > 0;) Unlock(i, seq);
  }
  // Bumped by every UnlockAll (rebuild swaps, ingestion, range deletes,
  // clips, checkpoints): those may change keys or the index without a
  // sequence number of their own, so a stripe's stamp alone cannot tell.
  // Read with StampBeforeRead, before the read.
  uint64_t AllEpochBeforeRead() const { return all_epoch_.load(std::memory_order_acquire); }
  // For holders that write nothing to the DB (they leave ReleasedAt as is).
  std::mutex& mutex(uint32_t i) { return s_[i].mu; }
  uint64_t ReleasedAt(uint32_t i) const { return s_[i].released_at.load(std::memory_order_relaxed); }
  // The stamp of stripe i, read without holding it, BEFORE a read of one of
  // its keys (LiveHint, rep.h): seeing a writer's stamp (release, acquire)
  // makes its DB write visible to that read. Writers that release the
  // stripe with Unlock after a write move the stamp past every stamp before
  // it (the DB's latest number after their write).
  uint64_t StampBeforeRead(uint32_t i) const { return s_[i].released_at.load(std::memory_order_acquire); }

  // ---- known key states (KnownKey); stripe si held -------------------------
  KnownKey* Find(uint32_t si, uint32_t cf, uint64_t h, const rocksdb::Slice& key) {
    KnownKey* k = s_[si].FindSlot(KnownSlot(cf, h));
    if (k == nullptr || k->cf != cf || !(k->key == key)) return nullptr;
    return k;
  }
  Known State(uint32_t si, uint32_t cf, uint64_t h, const rocksdb::Slice& key) {
#ifdef DLCBF_TESTING
    const internal::LiveKeyFault f = internal::GetLiveKeyFaultForTesting();
    if (f == internal::LiveKeyFault::kIgnoreKnownState || f == internal::LiveKeyFault::kStaleCheckSnapshot ||
        f == internal::LiveKeyFault::kCheckEraseWithoutRead) {
      return Known::kUnknown;
    }
#endif
    const KnownKey* k = Find(si, cf, h, key);
    return k == nullptr ? Known::kUnknown : k->state;
  }
  // Updates an existing record (none: nothing to update).
  void Set(uint32_t si, uint32_t cf, uint64_t h, const rocksdb::Slice& key, Known state) {
    KnownKey* k = Find(si, cf, h, key);
    if (k != nullptr) k->state = state;
  }
  // A check of the key is being queued: count it in the key's record
  // (created if needed; a record of another key in the slot with no
  // pending check is taken over) and set the state. False when the slot
  // belongs to another key with a pending check (a hash collision): the
  // check then runs without a record.
  bool RegisterCheck(uint32_t si, uint32_t cf, uint64_t h, const rocksdb::Slice& key, Known state) {
    const uint64_t slot = KnownSlot(cf, h);
    KnownKey* k = s_[si].FindSlot(slot);
    if (k == nullptr) k = s_[si].Add(slot);
    if (k->pending == 0) {
      k->cf = cf;
      k->key.assign(key);
    } else if (k->cf != cf || !(k->key == key)) {
      return false;
    }
    ++k->pending;
    k->state = state;
    return true;
  }
  // An unchecked copy of the key was counted and its write succeeded: its
  // record says kLive (created if the stripe holds fewer than
  // kUncheckedRecords records and the slot is free).
  static constexpr size_t kUncheckedRecords = 8;
  void NoteUnchecked(uint32_t si, uint32_t cf, uint64_t h, const rocksdb::Slice& key) {
    const uint64_t slot = KnownSlot(cf, h);
    Stripe& s = s_[si];
    if (KnownKey* k = s.FindSlot(slot)) {
      if (k->cf == cf && k->key == key) k->state = Known::kLive;
      return;
    }
    if (s.known_size >= kUncheckedRecords) return;
    KnownKey* k = s.Add(slot);
    k->cf = cf;
    k->state = Known::kLive;
    k->key.assign(key);
  }
  // A check with a record finished (or was dropped).
  void FinishCheck(uint32_t si, uint32_t cf, uint64_t h) {
    Stripe& s = s_[si];
    KnownKey* k = s.FindSlot(KnownSlot(cf, h));
    if (k == nullptr) return;
    if (--k->pending == 0) s.Remove(k, KeepsRecords(si));
  }
  // With every stripe held: nothing more is known of family cf's keys
  // (records without a pending check, left by unchecked copies, go).
  void ForgetFamily(uint32_t cf) {
    for (uint32_t i = 0; i <= mask_; ++i) {
      Stripe& s = s_[i];
      for (uint32_t j = 0; j < s.known_size;) {
        KnownKey* k = &s.known[j];
        if (k->cf != cf) {
          ++j;
        } else if (k->pending == 0) {
          s.Remove(k, KeepsRecords(i));  // moves the last record into j
        } else {
          k->state = Known::kUnknown;
          ++j;
        }
      }
    }
  }

 private:
  // One stripe: its mutex, its stamp and its records' header in one cache
  // line (where std::mutex takes 40 bytes: glibc on x86-64), so a write's
  // lock, known-state lookup and release touch one line (plus the records'
  // tags, only while the stripe has records). The records are an unordered
  // array; a stripe holds about pending checks / lock_stripes of them: 0-3
  // on a DB whose checker keeps up, up to 64 with 1024 stripes and a full
  // queue of 65,536 checks (max_pending_checks). A lookup therefore scans
  // a tag array, one byte per record (Tag: the slot's top 8 bits), eight
  // tags per step (64 records: one cache line), and reads only the records
  // whose tag matches (1/256 of the others): scanning the 80-byte records
  // themselves cost a writer 0.49 us per op at 64 per stripe (perf,
  // live_key_bench uniform_1t, 600,000 writes). The tags sit before the
  // records in one allocation (Alloc). Stripes below kKeepingStripes keep
  // an emptied array of up to kKeptRecords records (at most 1.6 MB in
  // all), so their records come and go without an allocation; other
  // arrays are freed when emptied.
  struct alignas(64) Stripe {
    std::mutex mu;
    std::atomic<uint64_t> released_at{0};
    KnownKey* known = nullptr;  // known_cap records (Alloc), the first known_size in use
    uint32_t known_size = 0;
    uint32_t known_cap = 0;

    Stripe() = default;
    Stripe(const Stripe&) = delete;
    Stripe& operator=(const Stripe&) = delete;
    ~Stripe() { Free(known, known_cap); }

    static uint8_t Tag(uint64_t slot) { return static_cast<uint8_t>(slot >> 56); }
    // known_cap tags, then 8-byte steps' padding (never read as a match).
    static size_t TagBytes(uint32_t cap) { return (static_cast<size_t>(cap) + 63) & ~size_t{63}; }
    uint8_t* tags() const { return reinterpret_cast<uint8_t*>(known) - TagBytes(known_cap); }
    // One allocation: TagBytes(cap) tag bytes, then cap records.
    static KnownKey* Alloc(uint32_t cap) {
      static_assert(alignof(KnownKey) <= 64, "records follow 64-byte-rounded tags");
      char* mem = static_cast<char*>(::operator new(TagBytes(cap) + cap * sizeof(KnownKey)));
      std::memset(mem, 0, TagBytes(cap));  // a scan's last step reads past known_size (masked)
      KnownKey* r = reinterpret_cast<KnownKey*>(mem + TagBytes(cap));
      for (uint32_t j = 0; j < cap; ++j) new (&r[j]) KnownKey();
      return r;
    }
    static void Free(KnownKey* r, uint32_t cap) {
      if (r == nullptr) return;
      for (uint32_t j = 0; j < cap; ++j) r[j].~KnownKey();
      ::operator delete(reinterpret_cast<char*>(r) - TagBytes(cap));
    }

    KnownKey* FindSlot(uint64_t slot) {
      const uint8_t* t = tags();
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
      constexpr uint64_t kLow7 = 0x7F7F7F7F7F7F7F7FULL;
      const uint64_t pattern = 0x0101010101010101ULL * Tag(slot);
      for (uint32_t base = 0; base < known_size; base += 8) {
        uint64_t w;
        std::memcpy(&w, t + base, 8);  // within TagBytes(known_cap): base < known_cap, a multiple of 8
        const uint64_t x = w ^ pattern;
        // 0x80 in exactly the bytes where x is 0 (the tag matches).
        uint64_t m = ~(((x & kLow7) + kLow7) | x | kLow7);
        if (known_size - base < 8) m &= (uint64_t{1} << (8 * (known_size - base))) - 1;
        for (; m != 0; m &= m - 1) {
          KnownKey* k = &known[base + static_cast<uint32_t>(__builtin_ctzll(m)) / 8];
          if (k->slot == slot) return k;
        }
      }
#else
      const uint8_t tag = Tag(slot);
      for (uint32_t j = 0; j < known_size; ++j) {
        if (t[j] == tag && known[j].slot == slot) return &known[j];
      }
#endif
      return nullptr;
    }
    KnownKey* Add(uint64_t slot) {
      if (known_size == known_cap) {
        const uint32_t cap = known_cap == 0 ? kInitialRecords : 2 * known_cap;
        KnownKey* grown = Alloc(cap);
        uint8_t* grown_tags = reinterpret_cast<uint8_t*>(grown) - TagBytes(cap);
        for (uint32_t j = 0; j < known_size; ++j) grown[j] = std::move(known[j]);
        if (known_size > 0) std::memcpy(grown_tags, tags(), known_size);
        Free(known, known_cap);
        known = grown;
        known_cap = cap;
      }
      tags()[known_size] = Tag(slot);
      KnownKey* k = &known[known_size++];
      k->slot = slot;
      k->cf = 0;
      k->pending = 0;
      k->state = Known::kUnknown;
      return k;
    }
    // Removes *k (the last record takes its place, and leaves no key
    // behind). An emptied array is freed unless `keep` and it holds at
    // most kKeptRecords (a burst of pending checks leaves no lasting
    // memory).
    void Remove(KnownKey* k, bool keep) {
      KnownKey* last = &known[known_size - 1];
      if (k != last) {
        *k = std::move(*last);
        tags()[k - known] = tags()[known_size - 1];
      }
      last->key.assign(rocksdb::Slice());
      --known_size;
      if (known_size == 0 && (!keep || known_cap > kKeptRecords)) {
        Free(known, known_cap);
        known = nullptr;
        known_cap = 0;
      }
    }
  };
  static_assert(sizeof(std::mutex) != 40 || sizeof(Stripe) == 64, "a stripe fits one cache line");
  static constexpr uint32_t kInitialRecords = 4;
  static constexpr uint32_t kKeptRecords = 4;
  static constexpr uint32_t kKeepingStripes = 4096;
  static bool KeepsRecords(uint32_t si) { return si < kKeepingStripes; }

  std::unique_ptr<Stripe[]> s_;
  uint32_t mask_;
  std::atomic<uint64_t> all_epoch_{0};
};

}  // namespace live_key
}  // namespace dlcbf
