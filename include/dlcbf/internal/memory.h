// Allocation guard shared by the filters ("huge requested sizes
// give a clear error, not an OOM kill").
//
// INTERNAL: not part of the public API.
//
// Every table is zero-filled when it is created: small ones by memset,
// large ones as zero pages the kernel maps at their first touch, which a
// hashed table's inserts reach almost at once. A table larger than the
// machine's physical memory can therefore never work: with Linux
// overcommit the allocation may succeed and filling it would then get the
// process OOM-killed. Create() refuses such sizes up front with
// Status::MemoryLimit, before calling the allocator (under ASan, whose
// allocator aborts on huge requests unless allocator_may_return_null=1,
// too). Options::max_bytes remains the caller's own, tighter limit.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "dlcbf/core/status.h"

namespace dlcbf {
namespace internal {

// Physical memory in bytes; UINT64_MAX if unknown.
inline uint64_t PhysicalMemoryBytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return UINT64_MAX;
  return static_cast<uint64_t>(pages) * static_cast<uint64_t>(page);
}

// OK, or MemoryLimit naming `what` when `bytes` exceeds physical memory.
inline Status CheckFitsInMemory(uint64_t bytes, const char* what) {
  const uint64_t phys = PhysicalMemoryBytes();
  if (bytes <= phys) return Status::OK();
  return Status::MemoryLimit(
      what, "needs " + std::to_string(bytes) + " bytes, more than this machine's physical memory (" +
                std::to_string(phys) + " bytes)");
}

// A zero-filled table of `bytes` bytes for a filter, or nullptr; free it
// with FreeTable(p, bytes). 64-byte aligned. Tables of 2 MiB or more are
// mapped directly (2 MiB-aligned, zero pages from the kernel, so nothing is
// touched up front) and advised to use transparent huge pages: a probe then
// costs its cache misses without a page walk. Mapping them directly also
// keeps them out of malloc's arenas, whose recycled (already touched,
// 4 KiB) pages would defeat the advice. Where THP is off the advice is
// ignored.
constexpr size_t kHugePageBytes = size_t{2} << 20;
inline void* AllocateZeroedTable(size_t bytes) {
  if (bytes < kHugePageBytes) {
    void* mem = nullptr;
    if (posix_memalign(&mem, 64, bytes == 0 ? 64 : bytes) != 0) return nullptr;
    std::memset(mem, 0, bytes);
    return mem;
  }
  // Over-map by one huge page, then trim head and tail to the alignment.
  // The kernel maps and unmaps whole pages: the lengths are rounded up to
  // the page size, or the tail's munmap (at an address inside a page)
  // fails and leaves up to 2 MiB mapped after FreeTable.
  const long page_size = sysconf(_SC_PAGESIZE);
  const size_t page = page_size > 0 ? static_cast<size_t>(page_size) : 4096;
  const size_t len = (bytes + page - 1) / page * page;
  const size_t span = len + kHugePageBytes;
  void* raw = mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  const uintptr_t start = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = (start + kHugePageBytes - 1) & ~(uintptr_t{kHugePageBytes} - 1);
  if (aligned > start) munmap(raw, aligned - start);
  const uintptr_t end = start + span, used_end = aligned + len;
  if (end > used_end) munmap(reinterpret_cast<void*>(used_end), end - used_end);
  void* mem = reinterpret_cast<void*>(aligned);
  madvise(mem, bytes, MADV_HUGEPAGE);  // advisory; failure is harmless
  return mem;
}
inline void FreeTable(void* p, size_t bytes) {
  if (p == nullptr) return;
  if (bytes < kHugePageBytes) {
    std::free(p);
  } else {
    munmap(p, bytes);
  }
}

}  // namespace internal
}  // namespace dlcbf
