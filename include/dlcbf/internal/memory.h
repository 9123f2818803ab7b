// Allocation guard shared by the filters ("huge requested sizes
// give a clear error, not an OOM kill").
//
// INTERNAL: not part of the public API.
//
// Every table is zero-filled when it is created, so each of its pages is
// touched at once. A table larger than the machine's physical memory can
// therefore never work: with Linux overcommit the allocation may succeed
// and the zero-fill would then get the process OOM-killed. Create()
// refuses such sizes up front with Status::MemoryLimit, before calling the
// allocator (under ASan, whose allocator aborts on huge requests unless
// allocator_may_return_null=1, too). Options::max_bytes remains the
// caller's own, tighter limit.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "rocksdb/status.h"

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
inline rocksdb::Status CheckFitsInMemory(uint64_t bytes, const char* what) {
  const uint64_t phys = PhysicalMemoryBytes();
  if (bytes <= phys) return rocksdb::Status::OK();
  return rocksdb::Status::MemoryLimit(
      what, "needs " + std::to_string(bytes) + " bytes, more than this machine's physical memory (" +
                std::to_string(phys) + " bytes)");
}

// A zero-filled table of `bytes` bytes for a filter, or nullptr. 64-byte
// aligned; tables of 2 MiB or more are 2 MiB-aligned and advised to use
// transparent huge pages, so a probe costs its cache misses without a page
// walk (advisory: where THP is off nothing changes). Free with std::free.
inline void* AllocateZeroedTable(size_t bytes) {
  constexpr size_t kHugePage = size_t{2} << 20;
  void* mem = nullptr;
  const size_t align = bytes >= kHugePage ? kHugePage : 64;
  if (posix_memalign(&mem, align, bytes == 0 ? 64 : bytes) != 0) return nullptr;
  if (bytes >= kHugePage) madvise(mem, bytes, MADV_HUGEPAGE);  // advisory; failure is harmless
  std::memset(mem, 0, bytes);
  return mem;
}

}  // namespace internal
}  // namespace dlcbf
