// The one batched-lookup loop of every filter (dlCBF, CBF, ABF, elastic):
// hash a block of keys, then hand the block's hashes to the filter's
// prefetching probe. Internal; not installed.
#pragma once

#include <cstddef>
#include <cstdint>

namespace dlcbf {
namespace internal {

// Batched lookups by key for every filter: hashes `keys` kBlock at a time
// into a stack buffer (hash(key) -> uint64_t) and hands each block to
// batch(hashes, count, out), which prefetches and probes. One copy of the
// loop for the dlCBF, CBF, ABF and elastic filter.
// (Out: bool for lookups, OpResult for batched inserts and erases.)
template <size_t kBlock, class Key, class Out, class HashFn, class BatchFn>
inline void HashedBatches(const Key* keys, size_t n, Out* out, HashFn&& hash,
                          BatchFn&& batch) {
  uint64_t hashes[kBlock];
  for (size_t base = 0; base < n; base += kBlock) {
    const size_t len = n - base < kBlock ? n - base : kBlock;
    for (size_t i = 0; i < len; ++i) hashes[i] = hash(keys[base + i]);
    batch(hashes, len, out + base);
  }
}

}  // namespace internal
}  // namespace dlcbf
