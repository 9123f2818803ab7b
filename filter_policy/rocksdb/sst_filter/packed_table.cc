// The packed static table (version-3 SST filter payload): geometry checks,
// the CPU choice of the probe instance, and the builder. Design note and
// layout: packed_table.h.
#include "filter_policy/rocksdb/sst_filter/packed_table.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "dlcbf/internal/cpu.h"

namespace dlcbf {
namespace sst_filter {

static_assert(kPackedBlockBytes == 64 && kPackedFlagBit == 8 * kPackedBlockBytes - 1,
              "one 64-byte block; the flag is its top bit");
static_assert(kPackedMaxDirBits == 128, "the directory is at most two words");
static_assert(kPackedMaxRemainderBits + 7 <= 64 - 8 + 1,
              "a remainder plus its bit offset fits the 8-byte window Slot reads");

bool PackedFits(uint32_t r, uint32_t C, uint32_t B) {
  return r >= kPackedMinRemainderBits && r <= kPackedMaxRemainderBits && C >= 1 && B >= 1 &&
         C + B <= kPackedMaxDirBits && C + B + C * r <= kPackedFlagBit;
}

const char* PackedGeometry::Invalid() const {
  if (r < kPackedMinRemainderBits || r > kPackedMaxRemainderBits) return "r must be in [4, 16]";
  if (C < 1 || B < 1) return "slots and buckets per block must be >= 1";
  if (C + B > kPackedMaxDirBits) return "slots + buckets exceed the 128-bit directory";
  if (C + B + C * r > kPackedFlagBit) return "slots do not fit below the flag bit";
  if (home_blocks < 1) return "no home blocks";
  if (total_blocks < home_blocks) return "fewer blocks than home blocks";
  if (total_blocks > (uint64_t{1} << 40)) return "absurd block count";
  return nullptr;
}

// The POPCNT + BMI2 instances where the CPU has POPCNT and PDEP measured
// at start-up is not slower than the portable select
// (internal::PdepIsFast: the one such measurement, shared with the dense
// kernel), not by a CPU list.
bool PackedCpuIsFast() {
#if defined(DLCBF_PACKED_HAVE_FAST)
  static const bool fast = __builtin_cpu_supports("popcnt") && internal::PdepIsFast();
  return fast;
#else
  return false;
#endif
}

// Block layout written here (the reader is PackedProbeBlock):
//
//   bit 0                    C+B                         C+B+C*r     511
//   +------------------------+---------------------------+-----------+-+
//   | directory (unary)      | remainders, r bits each   | zeros     |F|
//   | 1 per slot, 0 / bucket | ascending inside a bucket |           | |
//   +------------------------+---------------------------+-----------+-+
//   slot t's directory 1 is at bit t + (its bucket); F = overflow flag.
namespace {

// Sorts one block's values v = b 2^r + q into *out: a counting sort on the
// bucket b (at most 128 buckets), then insertion sort inside each bucket
// (~0.7 values on average). No data-dependent branches in the first two
// passes, unlike a comparison sort of ~50 random values.
void SortBlock(const uint32_t* a, const uint32_t* e, uint32_t r, uint32_t B,
               std::vector<uint32_t>* out) {
  const size_t n = static_cast<size_t>(e - a);
  if (out->size() < n) out->resize(std::max<size_t>(n, 2 * out->size()));
  uint32_t pos[kPackedMaxDirBits + 1] = {};
  for (const uint32_t* v = a; v != e; ++v) ++pos[(*v >> r) + 1];
  for (uint32_t b = 0; b < B; ++b) pos[b + 1] += pos[b];
  uint32_t* o = out->data();
  uint32_t fill[kPackedMaxDirBits];
  std::memcpy(fill, pos, sizeof(uint32_t) * B);
  for (const uint32_t* v = a; v != e; ++v) o[fill[*v >> r]++] = *v;
  for (uint32_t b = 0; b < B; ++b) {
    for (uint32_t i = pos[b] + 1; i < pos[b + 1]; ++i) {  // buckets of 2 or more
      const uint32_t x = o[i];
      uint32_t k = i;
      for (; k > pos[b] && o[k - 1] > x; --k) o[k] = o[k - 1];
      o[k] = x;
    }
  }
}

}  // namespace

bool BuildPackedTable(const std::vector<uint64_t>& hashes, uint64_t max_tail, PackedGeometry* g,
                      char* payload, PackedBuildStats* st) {
  const uint64_t H = g->home_blocks;
  const uint32_t r = g->r, C = g->C, D = g->dir_bits();
  // 1. Counting sort by home block: counts, offsets, then each key's value
  //    v = b 2^r + q scattered into its block's range.
  std::vector<uint64_t> start(H + 1, 0);
  for (uint64_t h : hashes) ++start[internal::Mul64Hi(h, H) + 1];
  for (uint64_t j = 0; j < H; ++j) start[j + 1] += start[j];
  std::vector<uint32_t> vals(hashes.size());
  {
    std::vector<uint64_t> pos(start.begin(), start.end() - 1);
    for (uint64_t h : hashes) {
      PackedProbe p;
      PackedLocate(*g, h, &p);
      vals[pos[p.block]++] = (p.b << r) | p.q;
    }
  }
  // 2. Blocks in order: merge the carry (sorted) with the block's own keys
  //    (sorted here), one copy per value; keep the C smallest, carry the rest.
  std::vector<uint32_t> carry, cur, next, sorted;
  carry.reserve(2 * C);
  cur.reserve(4 * C);
  next.reserve(2 * C);
  uint64_t j = 0;
  for (; j < H + max_tail; ++j) {
    if (j >= H && carry.empty()) break;
    cur.clear();
    if (j < H) {
      uint32_t* a = vals.data() + start[j];
      uint32_t* e = vals.data() + start[j + 1];
      SortBlock(a, e, r, g->B, &sorted);
      cur.resize(carry.size() + static_cast<size_t>(e - a));
      std::merge(carry.begin(), carry.end(), sorted.begin(), sorted.begin() + (e - a), cur.begin());
    } else {
      cur.swap(carry);
      ++st->tail_blocks;
    }
    const size_t before = cur.size();
    cur.erase(std::unique(cur.begin(), cur.end()), cur.end());
    st->duplicates += before - cur.size();
    // Encode in registers (a word array), then store the block once:
    // read-modify-writes of overlapping 8-byte windows would defeat
    // store-to-load forwarding on every key.
    uint64_t w[9] = {};  // w[8] catches the (zero) spill of a slot ending at bit 511
    next.clear();
    if (cur.size() > C) {
      next.assign(cur.begin() + C, cur.end());
      cur.resize(C);
      w[7] = uint64_t{1} << 63;  // the overflow flag, bit 511
      ++st->flagged_blocks;
      st->carried += next.size();
    }
    const uint32_t rmask = (uint32_t{1} << r) - 1;
    for (uint32_t t = 0; t < cur.size(); ++t) {
      const uint32_t v = cur[t];
      const uint32_t bit = t + (v >> r);
      w[bit >> 6] |= uint64_t{1} << (bit & 63);
      const uint32_t sbit = D + t * r, off = sbit & 63;
      const uint64_t q = v & rmask;
      w[sbit >> 6] |= q << off;
      w[(sbit >> 6) + 1] |= (q >> 1) >> (63 - off);  // the part past the word, if any
    }
    static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "blocks are little-endian words");
    std::memcpy(payload + j * kPackedBlockBytes, w, kPackedBlockBytes);
    st->stored += cur.size();
    carry.swap(next);
  }
  if (!carry.empty()) return false;
  g->total_blocks = j;
  return true;
}

}  // namespace sst_filter
}  // namespace dlcbf
