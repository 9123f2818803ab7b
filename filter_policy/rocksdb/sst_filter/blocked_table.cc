// Placement for the blocked static d-left table (blocked_table.h): fills
// blocks in order, relocating residents inside a block by breadth-first
// search and carrying what does not fit to the next block.
#include "filter_policy/rocksdb/sst_filter/blocked_table.h"

#include <algorithm>

namespace dlcbf {
namespace sst_filter {

// The bounds the layout comments state (blocked_table.h, FORMATS.md).
static_assert(kBlockBytes * 8 == 512, "a block is one 64-byte cache line of 512 bits");
static_assert(kBlockedMaxSubtables <= 8, "d multipliers fit the 128-byte header (d <= 8)");
static_assert(BlockedD4R9::kK == (511 / BlockedD4R9::kR) / 4, "the default geometry's K = floor(floor(511 / r) / d)");
namespace {
// Every allowed (d, r) has K >= 1 bucket per subtable and leaves at least
// one flag bit above its cells.
constexpr bool EveryGeometryFits() {
  for (uint32_t d = 2; d <= kBlockedMaxSubtables; ++d) {
    for (uint32_t r = kBlockedMinRemainderBits; r <= kBlockedMaxRemainderBits; ++r) {
      const uint32_t k = (511 / r) / d;
      if (k < 1 || d * k * r > 511) return false;
    }
  }
  return true;
}
static_assert(EveryGeometryFits(), "every allowed (d, r) has a bucket and a flag bit");
}  // namespace

namespace {
constexpr uint32_t kMaxCells = 511 / kBlockedMinRemainderBits;  // 127
// Cells the relocation search visits per insert. Measured at 10 bits/key
// (d = 4, r = 9, n = 1M): 32 nodes give FPR 0.877% at about half the build
// time of an unbounded search (0.871%); 16 nodes give 0.895%.
constexpr uint32_t kSearchNodes = 32;

// One block under construction: the remainder and the bucket b of the
// fingerprint held by each cell (b is also recoverable with P_i^-1; keeping
// it saves the inversion in the search).
struct BlockState {
  const BlockedGeometry& g;
  uint16_t q[kMaxCells];
  uint8_t b[kMaxCells];
  uint8_t sub_of[kMaxCells];  // subtable of each cell (no division in the search)
  // The candidate cells of each cell's fingerprint, kept with it so the
  // search reads them instead of recomputing the permutations.
  uint8_t alt[kMaxCells][kBlockedMaxSubtables];
  uint32_t empty = 0;

  explicit BlockState(const BlockedGeometry& geo) : g(geo) {
    for (uint32_t c = 0; c < g.cells(); ++c) sub_of[c] = static_cast<uint8_t>(c / g.K);
    Clear();
  }

  void Clear() {
    std::fill(q, q + g.cells(), 0);
    empty = g.cells();
  }

  uint32_t Cell(uint32_t i, uint32_t b0, uint32_t q0) const {
    return i * g.K + BlockedPermute(g, i, b0, q0);
  }

  enum Result { kPlaced, kDuplicate, kFull };

  // On kFull, *evicted is the fingerprint (b << 16 | q) to carry: either the
  // new one or a candidate's resident whose group is set in `flagged`.
  Result Insert(uint32_t b0, uint32_t q0, uint64_t flagged, uint32_t* evicted) {
    // Branch-free scan of the candidates: a bit mask of exact duplicates and
    // one of empty cells; the leftmost empty one wins (d-left's tie rule).
    uint32_t cand[kBlockedMaxSubtables];
    uint32_t dup = 0, free = 0;
    for (uint32_t i = 0; i < g.d; ++i) {
      cand[i] = Cell(i, b0, q0);
      const uint32_t c = cand[i];
      dup |= static_cast<uint32_t>(q[c] == q0 && b[c] == b0) << i;
      free |= static_cast<uint32_t>(q[c] == 0) << i;
    }
    if (dup != 0) return kDuplicate;
    if (free != 0) {
      Put(cand[__builtin_ctz(free)], b0, q0, cand);
      --empty;
      return kPlaced;
    }
    if (empty > 0 && Relocate(cand, b0, q0)) {
      --empty;
      return kPlaced;
    }
    *evicted = b0 << 16 | q0;
    if ((flagged >> Group(q0) & 1) == 0) {
      for (uint32_t i = 0; i < g.d; ++i) {
        const uint32_t c = cand[i];
        if (flagged >> Group(q[c]) & 1) {
          *evicted = uint32_t{b[c]} << 16 | q[c];
          Put(c, b0, q0, cand);
          break;
        }
      }
    }
    return kFull;
  }

  uint32_t Group(uint32_t q0) const { return BlockedGroup(q0, g.r, g.groups()); }

  void Put(uint32_t c, uint32_t b0, uint32_t q0, const uint32_t* cand) {
    q[c] = static_cast<uint16_t>(q0);
    b[c] = static_cast<uint8_t>(b0);
    for (uint32_t i = 0; i < g.d; ++i) alt[c][i] = static_cast<uint8_t>(cand[i]);
  }
  void Move(uint32_t dst, uint32_t src) {
    q[dst] = q[src];
    b[dst] = b[src];
    std::copy(alt[src], alt[src] + g.d, alt[dst]);
  }

  // Breadth-first search from the full candidates for a chain of moves
  // that ends in an empty cell; every cell is visited at most once.
  bool Relocate(const uint32_t* cand, uint32_t b0, uint32_t q0) {
    uint8_t node_cell[kMaxCells];
    int16_t parent[kMaxCells];
    bool seen[kMaxCells] = {};
    uint32_t head = 0, tail = 0;
    for (uint32_t i = 0; i < g.d; ++i) {
      if (!seen[cand[i]]) {
        seen[cand[i]] = true;
        node_cell[tail] = static_cast<uint8_t>(cand[i]);
        parent[tail++] = -1;
      }
    }
    while (head < tail && head < kSearchNodes) {
      const uint32_t node = head++;
      const uint32_t c = node_cell[node];
      const uint32_t sub = sub_of[c];
      for (uint32_t i = 0; i < g.d; ++i) {
        if (i == sub) continue;
        const uint32_t to = alt[c][i];
        if (q[to] == 0) {
          // Move along the chain, from the end back to the start.
          uint32_t dst = to;
          for (int32_t n = static_cast<int32_t>(node); n >= 0; n = parent[n]) {
            const uint32_t src = node_cell[n];
            Move(dst, src);
            dst = src;
          }
          Put(dst, b0, q0, cand);
          return true;
        }
        if (!seen[to]) {
          seen[to] = true;
          node_cell[tail] = static_cast<uint8_t>(to);
          parent[tail++] = static_cast<int16_t>(node);
        }
      }
    }
    return false;
  }

  // Packs the cells into the block's 8 little-endian words.
  void Write(char* out, uint64_t flagged) const {
    uint64_t w[8] = {};
    for (uint32_t c = 0; c < g.cells(); ++c) {
      const uint64_t v = q[c];
      const uint32_t bit = c * g.r, word = bit >> 6, off = bit & 63;
      w[word] |= v << off;
      if (off + g.r > 64) w[word + 1] |= v >> (64 - off);
    }
    for (uint32_t grp = 0; grp < g.groups(); ++grp) {
      if (flagged >> grp & 1) w[7] |= uint64_t{1} << (63 - grp);
    }
    for (int i = 0; i < 8; ++i) {
      for (int k = 0; k < 8; ++k) out[8 * i + k] = static_cast<char>(w[i] >> (8 * k));
    }
  }
};

// (b, q) of a hash, packed as b << 16 | q.
// Same mapping as BlockedLocate.
inline uint32_t Packed(const BlockedGeometry& g, uint64_t h) {
  const uint64_t t = uint64_t{static_cast<uint32_t>(h)} * g.K;
  const uint32_t rn = (uint32_t{1} << g.r) - 1;
  const uint32_t q = 1 + static_cast<uint32_t>((uint64_t{static_cast<uint32_t>(t)} * rn) >> 32);
  return static_cast<uint32_t>(t >> 32) << 16 | q;
}
}  // namespace

bool BlockedD4R9::Matches(const BlockedGeometry& g) {
  if (g.d != 4 || g.r != kR || g.K != kK) return false;
  BlockedGeometry def;
  def.d = 4;
  DefaultBlockedMultipliers(&def);
  return std::equal(def.multipliers, def.multipliers + 4, g.multipliers);
}

const BlockedD4R9& BlockedD4R9::Get() {
  static const BlockedD4R9 tables = [] {
    BlockedD4R9 t;
    BlockedGeometry g;
    g.d = 4;
    g.r = kR;
    g.K = kK;
    DefaultBlockedMultipliers(&g);
    for (uint32_t i = 0; i < 4; ++i) {
      t.f[i][0] = 0;
      for (uint32_t q = 1; q <= kMask; ++q) t.f[i][q] = static_cast<uint8_t>(BlockedPermute(g, i, 0, q));
      for (uint32_t x = 0; x < 2 * kK; ++x) {
        BlockedCellPosition(i * kK + x % kK, kR, &t.byte[i][x], &t.shift[i][x]);
      }
    }
    return t;
  }();
  return tables;
}

const char* BlockedGeometry::Invalid() const {
  if (d < 2 || d > kBlockedMaxSubtables) return "d must be in [2, 8]";
  if (r < kBlockedMinRemainderBits || r > kBlockedMaxRemainderBits) return "r must be in [4, 16]";
  if (K != BlockedBuckets(d, r) || K == 0) return "K must be floor(floor(511 / r) / d) >= 1";
  if (home_blocks == 0) return "no home blocks";
  if (total_blocks < home_blocks) return "fewer blocks than home blocks";
  if (total_blocks > (uint64_t{1} << 40)) return "too many blocks";
  if (multipliers[0] != 0) return "m_0 must be 0";
  for (uint32_t i = 1; i < d; ++i) {
    if ((multipliers[i] & 1) == 0) return "multipliers m_i (i > 0) must be odd";
  }
  for (uint32_t i = d; i < kBlockedMaxSubtables; ++i) {
    if (multipliers[i] != 0) return "unused multipliers must be 0";
  }
  return nullptr;
}

void DefaultBlockedMultipliers(BlockedGeometry* g) {
  uint64_t state = 0xD1CBF0000B10C4EDULL;
  g->multipliers[0] = 0;
  for (uint32_t i = 1; i < kBlockedMaxSubtables; ++i) {
    g->multipliers[i] = i < g->d ? (static_cast<uint32_t>(internal::SplitMix64(&state)) | 1) : 0;
  }
}

bool BuildBlockedTable(const std::vector<uint64_t>& hashes, uint64_t max_tail, BlockedGeometry* g,
                       char* payload, BlockedBuildStats* stats) {
  *stats = BlockedBuildStats();
  const uint64_t H = g->home_blocks;
  // Counting sort of the fingerprints by home block.
  std::vector<uint32_t> start(H + 1, 0);
  for (uint64_t h : hashes) ++start[internal::Mul64Hi(h, H) + 1];
  for (uint64_t j = 0; j < H; ++j) start[j + 1] += start[j];
  std::vector<uint32_t> items(hashes.size());
  {
    std::vector<uint32_t> next(start.begin(), start.end() - 1);
    for (uint64_t h : hashes) items[next[internal::Mul64Hi(h, H)]++] = Packed(*g, h);
  }
  std::vector<uint32_t> carry, next_carry;
  BlockState s(*g);
  for (uint64_t j = 0;; ++j) {
    if (j >= H && carry.empty()) {
      g->total_blocks = j;
      return true;
    }
    if (j >= H + max_tail) return false;
    s.Clear();
    next_carry.clear();
    uint64_t flagged = 0;  // bit g: group g has a fingerprint carried on
    auto place = [&](uint32_t item, bool carried) {
      uint32_t evicted = 0;
      switch (s.Insert(item >> 16, item & 0xFFFF, flagged, &evicted)) {
        case BlockState::kPlaced:
          ++stats->stored;
          if (carried) ++stats->carried;
          break;
        case BlockState::kDuplicate: ++stats->duplicates; break;
        case BlockState::kFull:
          // (if evicted != item the new one took a flagged resident's cell:
          // the number of stored fingerprints is unchanged)
          next_carry.push_back(evicted);
          flagged |= uint64_t{1} << s.Group(evicted & 0xFFFF);
          break;
      }
    };
    for (uint32_t item : carry) place(item, true);
    if (j < H) {
      for (uint32_t k = start[j]; k < start[j + 1]; ++k) place(items[k], false);
    } else {
      ++stats->tail_blocks;
    }
    s.Write(payload + j * kBlockBytes, flagged);
    if (!next_carry.empty()) ++stats->flagged_blocks;
    carry.swap(next_carry);
  }
}

}  // namespace sst_filter
}  // namespace dlcbf
