// LiveKeyDB's per-stripe known key states (filter_policy/rocksdb/live_key_db/
// stripes.h), the key copies they and the deferred checks hold
// (small_key.h) and the queue of deferred checks (checker.h, CheckQueue):
// a randomized differential test of the records against a reference model
// keyed by (stripe, slot), the container they replaced, with slot
// collisions between keys forced; SmallKey at its bounds; and the queue
// against a std::deque, FIFO across its blocks, with its pool reused.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "filter_policy/rocksdb/live_key_db/checker.h"
#include "filter_policy/rocksdb/live_key_db/small_key.h"
#include "filter_policy/rocksdb/live_key_db/stripes.h"

namespace dlcbf {
namespace live_key {
namespace {

TEST(LiveKeySmallKey, HoldsEveryLengthAndMoves) {
  for (size_t n : {size_t{0}, size_t{1}, SmallKey::kInline - 1, SmallKey::kInline, SmallKey::kInline + 1,
                   size_t{1000}}) {
    std::string s;
    for (size_t i = 0; i < n; ++i) s.push_back(static_cast<char>('a' + i % 26));
    SmallKey k;
    k.assign(s);
    EXPECT_EQ(k.slice().ToString(), s) << n;
    SmallKey moved(std::move(k));
    EXPECT_EQ(moved.slice().ToString(), s) << n;
    EXPECT_EQ(k.slice().size(), 0u) << n;  // a moved-from key is empty
    SmallKey assigned;
    assigned.assign(std::string(3, 'z'));
    assigned = std::move(moved);
    EXPECT_TRUE(assigned == rocksdb::Slice(s)) << n;
    assigned.assign(std::string(5, 'y'));  // from the heap back inline, and back
    EXPECT_EQ(assigned.slice().ToString(), std::string(5, 'y'));
  }
}

// The reference: one record per (stripe, slot), as the records' contract
// says (stripes.h).
struct Model {
  struct Rec {
    uint32_t cf;
    Known state;
    uint32_t pending;
    std::string key;
  };
  std::map<std::pair<uint32_t, uint64_t>, Rec> recs;
  size_t InStripe(uint32_t si) const {
    size_t n = 0;
    for (const auto& r : recs) n += r.first.first == si;
    return n;
  }
  Rec* Find(uint32_t si, uint32_t cf, uint64_t h, const std::string& key) {
    auto it = recs.find({si, KnownSlot(cf, h)});
    if (it == recs.end() || it->second.cf != cf || it->second.key != key) return nullptr;
    return &it->second;
  }
};

class LiveKeyStripesRecords : public ::testing::TestWithParam<uint32_t> {};

TEST_P(LiveKeyStripesRecords, MatchTheReferenceModel) {
  std::mt19937_64 rng(GetParam());
  // 1, 2 or 4 stripes: crowded; 8192: half of them past the stripes that
  // keep an emptied record array (stripes.h, kKeepingStripes).
  const uint32_t n_stripes = GetParam() >= 5 ? 8192 : 1u << (GetParam() % 3);
  Stripes stripes(n_stripes);
  Model model;
  // Keys of two families; some pairs share a hash (a slot collision),
  // some only the top 8 bits of it (a tag collision: stripes.h, Tag), some
  // keys are longer than SmallKey's inline bytes.
  struct K {
    uint32_t cf;
    uint64_t h;
    std::string key;
  };
  std::vector<K> keys;
  for (uint32_t i = 0; i < 200; ++i) {
    K k;
    k.cf = i % 7 == 0 ? 1 : 0;
    k.h = i % 5 == 4 ? keys[i - 1].h : rng();  // every fifth key collides with the one before
    if (i % 5 == 3) k.h = (keys[i - 1].h & 0xFF00000000000000ULL) | (rng() >> 8);  // its tag only
    if (i % 5 == 4) k.cf = keys[i - 1].cf;
    k.key = "key" + std::to_string(i) + std::string(i % 3 == 0 ? 60 : 10, 'x');
    keys.push_back(k);
  }
  std::vector<size_t> outstanding;  // keys with a registered check not yet finished
  const Known states[] = {Known::kLive, Known::kDead, Known::kUnknown};
  for (int step = 0; step < 20000; ++step) {
    const size_t ki = rng() % keys.size();
    const K& k = keys[ki];
    const uint32_t si = stripes.Of(k.cf, k.h);
    ASSERT_LT(si, n_stripes);
    const uint64_t slot = KnownSlot(k.cf, k.h);
    switch (rng() % 6) {
      case 0: {  // RegisterCheck
        const Known s = states[rng() % 3];
        Model::Rec& r = model.recs[{si, slot}];
        bool expect = true;
        if (r.pending == 0) {
          r.cf = k.cf;
          r.key = k.key;
        } else if (r.cf != k.cf || r.key != k.key) {
          expect = false;
        }
        if (expect) {
          ++r.pending;
          r.state = s;
        }
        ASSERT_EQ(stripes.RegisterCheck(si, k.cf, k.h, k.key, s), expect) << step;
        if (expect) outstanding.push_back(ki);
        break;
      }
      case 1: {  // FinishCheck of a registered check
        if (outstanding.empty()) break;
        const size_t oi = rng() % outstanding.size();
        const K& o = keys[outstanding[oi]];
        outstanding.erase(outstanding.begin() + static_cast<std::ptrdiff_t>(oi));
        const uint32_t osi = stripes.Of(o.cf, o.h);
        auto it = model.recs.find({osi, KnownSlot(o.cf, o.h)});
        ASSERT_TRUE(it != model.recs.end());
        if (--it->second.pending == 0) model.recs.erase(it);
        stripes.FinishCheck(osi, o.cf, o.h);
        break;
      }
      case 2: {  // NoteUnchecked
        auto it = model.recs.find({si, slot});
        if (it != model.recs.end()) {
          if (it->second.cf == k.cf && it->second.key == k.key) it->second.state = Known::kLive;
        } else if (model.InStripe(si) < Stripes::kUncheckedRecords) {
          model.recs[{si, slot}] = Model::Rec{k.cf, Known::kLive, 0, k.key};
        }
        stripes.NoteUnchecked(si, k.cf, k.h, k.key);
        break;
      }
      case 3: {  // Set
        const Known s = states[rng() % 3];
        if (Model::Rec* r = model.Find(si, k.cf, k.h, k.key)) r->state = s;
        stripes.Set(si, k.cf, k.h, k.key, s);
        break;
      }
      case 4: {  // ForgetFamily, now and then
        if (rng() % 50 != 0) break;
        const uint32_t cf = static_cast<uint32_t>(rng() % 2);
        for (auto it = model.recs.begin(); it != model.recs.end();) {
          if (it->second.cf != cf) {
            ++it;
          } else if (it->second.pending == 0) {
            it = model.recs.erase(it);
          } else {
            it->second.state = Known::kUnknown;
            ++it;
          }
        }
        stripes.ForgetFamily(cf);
        break;
      }
      default:
        break;
    }
    // Every key's state agrees after every step.
    if (step % 16 == 0 || step > 19900) {
      for (const K& q : keys) {
        const uint32_t qi = stripes.Of(q.cf, q.h);
        const Model::Rec* r = model.Find(qi, q.cf, q.h, q.key);
        ASSERT_EQ(stripes.State(qi, q.cf, q.h, q.key), r == nullptr ? Known::kUnknown : r->state)
            << "step " << step << " key " << q.key;
        KnownKey* found = stripes.Find(qi, q.cf, q.h, q.key);
        ASSERT_EQ(found != nullptr, r != nullptr) << "step " << step;
        if (found != nullptr) {
          ASSERT_EQ(found->pending, r->pending) << "step " << step;
        }
      }
    }
  }
}
// The check queue against a std::deque: random bursts of pushes (some
// past the pool's kPooledBlocks blocks), each taken whole as the checker
// takes it, with more pushed while a batch is out (as writers do while the
// checker runs), must come out in push order with every key intact. The
// pool is checked against its own model: a block is allocated only when
// the pool is empty, and Recycle keeps up to kPooledBlocks.
class LiveKeyCheckQueue : public ::testing::TestWithParam<uint32_t> {};

TEST_P(LiveKeyCheckQueue, IsFifoAcrossBlocksAndReusesItsPool) {
  std::mt19937_64 rng(GetParam());
  CheckQueue q;
  std::deque<std::pair<uint64_t, std::string>> model;
  uint64_t next = 0;
  size_t pool = 0;             // the pool's model
  uint64_t allocated = 0;      // blocks allocated, by the model
  size_t tail_room = 0;        // free slots in the queue's last block
  auto push = [&](size_t n) {
    for (size_t i = 0; i < n; ++i) {
      if (tail_room == 0) {  // a new block: from the pool if it has one
        if (pool > 0) {
          --pool;
        } else {
          ++allocated;
        }
        tail_room = CheckQueue::kBlockChecks;
      }
      --tail_room;
      const uint64_t hash = next++;
      // Short keys inline, long ones on the heap (SmallKey::kInline).
      const std::string key = std::to_string(hash) + std::string(rng() % 3 == 0 ? 60 : 4, 'k');
      PendingCheck c;
      c.hash = hash;
      c.key.assign(key);
      q.Push(std::move(c));
      model.emplace_back(hash, key);
    }
  };
  for (int round = 0; round < 60; ++round) {
    const size_t burst_blocks = rng() % 4 == 0 ? CheckQueue::kPooledBlocks + 1 + rng() % 8 : rng() % 6;
    push(burst_blocks * CheckQueue::kBlockChecks + rng() % CheckQueue::kBlockChecks);
    ASSERT_EQ(q.size(), model.size());
    ASSERT_EQ(q.allocated(), allocated) << "round " << round;
    ASSERT_EQ(q.pooled(), pool) << "round " << round;
    CheckQueue::Blocks taken;
    q.TakeAll(&taken);
    tail_room = 0;
    EXPECT_TRUE(q.empty());
    std::deque<std::pair<uint64_t, std::string>> later;  // pushed while the batch is out
    const size_t taken_checks = model.size();
    push(rng() % (2 * CheckQueue::kBlockChecks));
    later.assign(model.begin() + static_cast<std::ptrdiff_t>(taken_checks), model.end());
    model.resize(taken_checks);
    for (const auto& b : taken) {
      ASSERT_GT(b->n, 0u);
      ASSERT_LE(b->n, CheckQueue::kBlockChecks);
      for (size_t i = 0; i < b->n; ++i) {
        ASSERT_FALSE(model.empty());
        ASSERT_EQ(b->c[i].hash, model.front().first);
        ASSERT_EQ(b->c[i].key.slice().ToString(), model.front().second);
        model.pop_front();
        b->c[i].key.assign(rocksdb::Slice());  // as RunChecks leaves them
      }
    }
    EXPECT_TRUE(model.empty());
    model = std::move(later);
    pool = std::min(CheckQueue::kPooledBlocks, pool + taken.size());
    q.Recycle(&taken);
    EXPECT_TRUE(taken.empty());
    ASSERT_EQ(q.pooled(), pool) << "round " << round;
  }
}

INSTANTIATE_TEST_SUITE_P(Seeds, LiveKeyCheckQueue, ::testing::Values(1u, 2u, 3u));

INSTANTIATE_TEST_SUITE_P(Seeds, LiveKeyStripesRecords, ::testing::Values(1u, 2u, 3u, 4u, 5u, 6u));

}  // namespace
}  // namespace live_key
}  // namespace dlcbf
