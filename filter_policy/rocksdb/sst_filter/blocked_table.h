// The blocked static d-left table: the payload of version-2 SST filter
// blocks (kind 3). Geometry, the hash-to-cells mapping the reader and the
// builder share, the one-block probe and the placement routine.
// Internal to filter_policy/rocksdb/sst_filter/; byte layout in
// block_format.h and filter_policy/FORMATS.md.
//
// Design note
// -----------
// Version 1 spread a key's d candidate buckets over d subtables in
// different cache lines, so every negative query touched d = 4 lines. Here
// all d candidates of a key live in ONE 64-byte block (the layout idea of
// FastDLeftFilter, without counters), so a query reads one cache line
// unless its block overflowed.
//
// Block (512 bits): C = d * K cells of r bits, where K = floor(floor(511 /
// r) / d) buckets of one cell per subtable; the G = min(64, 512 - C r) bits
// above the cells are overflow flags, one per group of remainders
// (group(q) = floor((q - 1) G / 2^r)). Cell value 0 means empty, so
// Rn = 2^r - 1 remainders exist.
//
// Two-phase hashing (dlCBF paper, Section 3): the key hash h gives the
// home block j = floor(h * H / 2^64) and the true fingerprint (b, q) in
// [K] x [1, Rn] from the low 32 bits. Subtable i stores it at bucket
//     P_i(b, q) = ((b + F_i(q)) mod K, q),   F_0 = 0,
//     F_i(q) = floor(((q * m_i) mod 2^32) * K / 2^32)   (m_i odd, stored),
// an invertible permutation: a resident's b is recovered from its cell
// and q, which lets the builder move residents without keys and detect an
// exact duplicate fingerprint (same b and q), stored once.
//
// Build (static: all keys known): blocks are filled in order. Each block
// first takes the keys carried over from the block before, then its own;
// a key goes to its leftmost empty candidate, else a breadth-first search
// over the block's cells moves residents to their other candidates. When
// nothing moves, one fingerprint is carried to the next block -- a
// candidate's resident whose group is already flagged if there is one
// (so few groups get flagged), else the new one -- and the flag of its
// group is set. So flag(j, g) = 1 iff some key of group g homed at or
// before j is stored after j, and a query of group g probes j, j+1, ...
// while the block it just probed has flag g set. After the H home blocks,
// tail blocks (no home keys) take the last carry; the last block has no
// flag set.
//
// FPR. A negative query compares q with d cells per probed block:
//     FPR ~= d * alpha / (2^r - 1) * (1 + 1.4 (E[blocks probed] - 1))
// for cell load alpha (planner.cc has the model and its measurements). At
// 10 bits/key the planner takes d = 4, r = 9, K = 14 (56 cells, 504 bits,
// G = 8 flag groups): 51.2 keys per home block, alpha ~= 0.91, so
// d * alpha / Rn = 0.72% before overflow probes. The block load is Poisson
// with mean 51.2, so ~41% of blocks overflow into the next one; a negative
// query follows only if its group is flagged, ~1.17 blocks on average, and
// the measured FPR is ~0.87% (version 1's global balancing reaches 0.70% at
// d lines per query). Space: 512 / (keys per block) bits per key plus the
// header and usually one tail block. Lines per negative query: the home
// line, plus the adjacent next one in ~17% of queries. Readers prefetch
// the next block together with the home block (one more line of traffic
// per query, but no dependent second miss).
// Build: the relocation search visits at most 32 cells per insert (FPR
// 0.877% vs 0.871% unbounded, at about half the build time).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "dlcbf/internal/hash.h"

namespace dlcbf {
namespace sst_filter {

constexpr size_t kBlockBytes = 64;
constexpr uint32_t kBlockedMaxSubtables = 8;
constexpr uint32_t kBlockedMinRemainderBits = 4;
constexpr uint32_t kBlockedMaxRemainderBits = 16;

// Buckets per subtable in one block for (d, r); 0 if the pair is unusable.
inline uint32_t BlockedBuckets(uint32_t d, uint32_t r) {
  if (d < 2 || d > kBlockedMaxSubtables || r < kBlockedMinRemainderBits ||
      r > kBlockedMaxRemainderBits) {
    return 0;
  }
  return (511 / r) / d;
}

struct BlockedGeometry {
  uint32_t d = 0;            // subtables per block
  uint32_t r = 0;            // remainder bits
  uint32_t K = 0;            // buckets (of one cell) per subtable per block
  uint64_t home_blocks = 0;  // H: blocks keys hash to
  uint64_t total_blocks = 0; // H + tail blocks
  uint32_t multipliers[kBlockedMaxSubtables] = {};  // m_i; m_0 = 0, others odd

  uint32_t cells() const { return d * K; }
  // Overflow groups: every bit above the cells, at most 64.
  uint32_t groups() const { return 512 - d * K * r > 64 ? 64 : 512 - d * K * r; }
  uint64_t payload_bytes() const { return total_blocks * kBlockBytes; }
  // nullptr if usable, else what is wrong.
  const char* Invalid() const;
};

// Fixed multipliers of format version 2 (m_0 = 0: P_0 is the identity).
void DefaultBlockedMultipliers(BlockedGeometry* g);

// Where a key hash lives: home block, and the bit offset of each of its d
// candidate cells inside a block.
struct BlockedProbe {
  uint64_t block;
  uint32_t q;
  uint64_t group_mask;  // the flag bit of the key's overflow group in word 7
  // Candidate i's cell is bits [shift, shift + r) of the 8 bytes at byte
  // offset `byte` of the block (BlockedCellPosition).
  uint8_t byte[kBlockedMaxSubtables];
  uint8_t shift[kBlockedMaxSubtables];
};

// Where cell c lives: the 8-byte window starting at min(c r / 8, 56) holds
// it whole (cells end below bit 512), so one load and one shift read it and
// the load never leaves the 64-byte block.
inline void BlockedCellPosition(uint32_t cell, uint32_t r, uint8_t* byte, uint8_t* shift) {
  const uint32_t bit = cell * r;
  const uint32_t start = (bit >> 3) < 56 ? (bit >> 3) : 56;
  *byte = static_cast<uint8_t>(start);
  *shift = static_cast<uint8_t>(bit - 8 * start);
}

// Overflow group of remainder q, in [0, G): a function of the fingerprint
// alone, so relocation never changes it.
inline uint32_t BlockedGroup(uint32_t q, uint32_t r, uint32_t groups) {
  return static_cast<uint32_t>((uint64_t{q - 1} * groups) >> r);
}

inline uint32_t BlockedPermute(const BlockedGeometry& g, uint32_t i, uint32_t b, uint32_t q) {
  const uint32_t f =
      static_cast<uint32_t>((uint64_t{static_cast<uint32_t>(q * g.multipliers[i])} * g.K) >> 32);
  const uint32_t x = b + f;
  return x >= g.K ? x - g.K : x;
}

// kD, kK, kR: compile-time d, K and r (0 = take them from g); the default
// geometry instantiates <4, 14, 9> so the multiplies by K and the shifts
// by r fold into constants.
template <uint32_t kD = 0, uint32_t kK = 0, uint32_t kR = 0>
inline void BlockedLocate(const BlockedGeometry& g, uint64_t h, BlockedProbe* p) {
  const uint32_t d = kD ? kD : g.d, K = kK ? kK : g.K, r = kR ? kR : g.r;
  p->block = internal::Mul64Hi(h, g.home_blocks);
  const uint64_t t = uint64_t{static_cast<uint32_t>(h)} * K;
  const uint32_t b = static_cast<uint32_t>(t >> 32);
  const uint32_t rn = (uint32_t{1} << r) - 1;
  p->q = 1 + static_cast<uint32_t>((uint64_t{static_cast<uint32_t>(t)} * rn) >> 32);
  const uint32_t groups = kK && kR ? (512 - kD * kK * kR > 64 ? 64 : 512 - kD * kK * kR) : g.groups();
  p->group_mask = uint64_t{1} << (63 - BlockedGroup(p->q, r, groups));
  BlockedCellPosition(b, r, &p->byte[0], &p->shift[0]);
  for (uint32_t i = 1; i < d; ++i) {
    const uint32_t f =
        static_cast<uint32_t>((uint64_t{static_cast<uint32_t>(p->q * g.multipliers[i])} * K) >> 32);
    const uint32_t x = b + f;
    BlockedCellPosition(i * K + (x >= K ? x - K : x), r, &p->byte[i], &p->shift[i]);
  }
}

// Reads a cell of a 64-byte block at its BlockedCellPosition.
inline uint32_t BlockedCell(const char* block, uint32_t byte, uint32_t shift, uint32_t mask) {
  static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "blocked table assumes little-endian");
  uint64_t w;
  std::memcpy(&w, block + byte, 8);
  return static_cast<uint32_t>(w >> shift) & mask;
}

// The overflow flags: word 7 of the block; group g is bit 63 - g.
inline uint64_t BlockedFlags(const char* block) {
  uint64_t w;
  std::memcpy(&w, block + 56, 8);
  return w;
}

// Probes the home block and the overflow chain after it. `payload` holds
// g.total_blocks blocks and the last block's flag is 0 (ParseBlock checks).
// One step of a probe: compares q with the d cells of `block`. Returns 1 on
// a match, 0 if the answer is "no", 2 if the key's group flag says the
// next block must be probed too.
template <uint32_t kD, uint32_t kR = 0>
inline int BlockedProbeBlock(const BlockedGeometry& g, const char* block, const BlockedProbe& p) {
  const uint32_t mask = (uint32_t{1} << (kR ? kR : g.r)) - 1;
  const uint32_t d = kD ? kD : g.d;
  bool hit = false;
  for (uint32_t i = 0; i < d; ++i) hit |= BlockedCell(block, p.byte[i], p.shift[i], mask) == p.q;
  if (hit) return 1;
  return (BlockedFlags(block) & p.group_mask) == 0 ? 0 : 2;
}

template <uint32_t kD, uint32_t kR = 0>
inline bool BlockedMayMatch(const BlockedGeometry& g, const char* payload, const BlockedProbe& p) {
  const char* block = payload + p.block * kBlockBytes;
  for (;;) {
    const int r = BlockedProbeBlock<kD, kR>(g, block, p);
    if (r != 2) return r == 1;
    block += kBlockBytes;
  }
}

// The default geometry (d = 4, r = 9, K = 14, default multipliers) with
// its arithmetic replaced by two small tables: F_i(q) for every q (1.5 KiB)
// and the (byte, shift) position of every (subtable, bucket) cell. The same
// answers as BlockedLocate + BlockedMayMatch (a test checks it).
struct BlockedD4R9 {
  static constexpr uint32_t kK = 14, kR = 9, kMask = (1u << kR) - 1;
  uint8_t f[4][1u << kR];   // F_i(q), f[0] = 0
  // Cell position of bucket x mod K of subtable i, for x < 2K (so b + F_i(q)
  // needs no wrap-around test).
  uint8_t byte[4][2 * kK];
  uint8_t shift[4][2 * kK];

  // True if g is the geometry these tables describe.
  static bool Matches(const BlockedGeometry& g);
  // The tables, built on first use.
  static const BlockedD4R9& Get();

  void Locate(const BlockedGeometry& g, uint64_t h, BlockedProbe* p) const {
    p->block = internal::Mul64Hi(h, g.home_blocks);
    const uint64_t t = uint64_t{static_cast<uint32_t>(h)} * kK;
    const uint32_t b = static_cast<uint32_t>(t >> 32);
    const uint32_t q = 1 + static_cast<uint32_t>((uint64_t{static_cast<uint32_t>(t)} * kMask) >> 32);
    p->q = q;
    p->group_mask = uint64_t{1} << (63 - ((q - 1) >> (kR - 3)));  // G = 8
    for (uint32_t i = 0; i < 4; ++i) {
      const uint32_t x = b + f[i][q];
      p->byte[i] = byte[i][x];
      p->shift[i] = shift[i][x];
    }
  }

  bool MayMatch(const BlockedGeometry& g, const char* payload, uint64_t h) const {
    const char* block = payload + internal::Mul64Hi(h, g.home_blocks) * kBlockBytes;
    // Start the loads first; the cell positions are looked up while the
    // lines are on their way. The next block is fetched too: about one
    // negative query in six continues there, and then it is already on its
    // way instead of a second, dependent miss. (Prefetches never fault, so
    // running past the last block is harmless.)
    __builtin_prefetch(block);
    __builtin_prefetch(block + kBlockBytes - 1);
    __builtin_prefetch(block + 2 * kBlockBytes - 1);
    BlockedProbe p;
    Locate(g, h, &p);
    return BlockedMayMatch<4, kR>(g, payload, p);
  }
};

// Compatibility name used by tests.
inline bool BlockedMayMatchD4R9(const BlockedGeometry& g, const char* payload, uint64_t h) {
  return BlockedD4R9::Get().MayMatch(g, payload, h);
}

inline bool BlockedHashMayMatch(const BlockedGeometry& g, const char* payload, uint64_t h) {
  BlockedProbe p;
  BlockedLocate(g, h, &p);
  switch (g.d) {
    case 4: return BlockedMayMatch<4>(g, payload, p);
    case 3: return BlockedMayMatch<3>(g, payload, p);
    case 2: return BlockedMayMatch<2>(g, payload, p);
    default: return BlockedMayMatch<0>(g, payload, p);
  }
}

// Statistics of one placement run.
struct BlockedBuildStats {
  uint64_t stored = 0;          // distinct fingerprints written
  uint64_t duplicates = 0;      // keys whose fingerprint was already there
  uint64_t carried = 0;         // keys stored after their home block
  uint64_t flagged_blocks = 0;  // blocks with the overflow flag set
  uint64_t tail_blocks = 0;     // blocks after the H home blocks
};

// Places every hash into `payload` (zero-filled, room for g.home_blocks +
// max_tail blocks). Sets g->total_blocks. Returns false if the carry did
// not drain within max_tail tail blocks (nothing is lost: the caller
// rebuilds with more blocks). Never throws except std::bad_alloc.
bool BuildBlockedTable(const std::vector<uint64_t>& hashes, uint64_t max_tail, BlockedGeometry* g,
                       char* payload, BlockedBuildStats* stats);

}  // namespace sst_filter
}  // namespace dlcbf
