// Parser and header encoder of the SST filter block format (block_format.h).
#include "filter_policy/rocksdb/sst_filter/block_format.h"

#include "dlcbf/internal/coding.h"
#include "dlcbf/internal/hash.h"

namespace dlcbf {
namespace sst_filter {

// The header sizes FORMATS.md states: the fixed 48 bytes, and a blocked
// header (48 + 4 d multiplier bytes) padded to 64 (d <= 4) or 128 bytes.
static_assert(kFixedHeader == 48 && kChecksumBytes == 8, "48-byte fixed header, 8-byte XXH3-64");
static_assert(BlockedHeaderBytes(4) == 64 && kFixedHeader + 4 * 4 <= 64, "d <= 4: 64-byte header");
static_assert(kPackedHeaderBytes == 64 && kFixedHeader + 2 <= kPackedHeaderBytes,
              "packed: 48 fixed bytes, C and B, padding to 64");
static_assert(BlockedHeaderBytes(kBlockedMaxSubtables) == 128 &&
                  kFixedHeader + 4 * kBlockedMaxSubtables <= 128,
              "d <= 8: 128-byte header");

using rocksdb::Slice;

bool ParseBlock(const Slice& s, ParsedBlock* out, std::string* why) {
  if (s.size() < kFixedHeader + kChecksumBytes) {
    *why = "truncated block (" + std::to_string(s.size()) + " bytes)";
    return false;
  }
  internal::Decoder dec(s.data(), s.size());
  uint32_t magic = 0, reserved32 = 0;
  uint8_t version = 0, kind = 0, d = 0, L = 0, r = 0, c = 0, k = 0, retries = 0;
  uint64_t size_field = 0, seed = 0, entries = 0, payload = 0;
  dec.Get32(&magic);
  dec.Get8(&version);
  dec.Get8(&kind);
  dec.Get8(&d);
  dec.Get8(&L);
  dec.Get8(&r);
  dec.Get8(&c);
  dec.Get8(&k);
  dec.Get8(&retries);
  dec.Get32(&reserved32);
  dec.Get64(&size_field);
  dec.Get64(&seed);
  dec.Get64(&entries);
  dec.Get64(&payload);
  if (magic != kBlockMagic) {
    *why = "bad magic (not a dlcbf filter block)";
    return false;
  }
  if (version != kBlockVersion1 && version != kBlockVersion2 && version != kBlockVersion3) {
    *why = "unsupported format version " + std::to_string(version);
    return false;
  }
  if (c != 0) {
    *why = "counter bits must be 0 in an SST filter";
    return false;
  }
  if (reserved32 != 0) {
    *why = "reserved header bytes are not zero";
    return false;
  }
  if ((kind == kKindDLeft && version != kBlockVersion1) ||
      (kind == kKindBlocked && version != kBlockVersion2) ||
      (kind == kKindPacked && version != kBlockVersion3)) {
    *why = "block kind " + std::to_string(kind) + " does not exist in format version " +
           std::to_string(version);
    return false;
  }
  const size_t header = HeaderBytes(kind, d);
  if (s.size() < header + kChecksumBytes) {
    *why = "truncated block (" + std::to_string(s.size()) + " bytes)";
    return false;
  }
  if (payload != s.size() - header - kChecksumBytes) {
    *why = "payload size " + std::to_string(payload) + " does not match block size " +
           std::to_string(s.size());
    return false;
  }
  switch (kind) {
    case kKindEmpty:
      if (d || L || r || k || size_field || entries || payload) {
        *why = "inconsistent empty block";
        return false;
      }
      break;
    case kKindDLeft: {
      internal::Geometry g;
      g.subtables = d;
      g.buckets = size_field;
      g.cells = L;
      g.remainder_bits = r;
      g.counter_bits = 0;
      if (const char* bad = g.Invalid()) {
        *why = std::string("bad geometry: ") + bad;
        return false;
      }
      if (g.total_bytes() != payload) {
        *why = "payload size does not match geometry";
        return false;
      }
      if (entries > g.total_cells()) {
        *why = "more entries than cells";
        return false;
      }
      out->geo = g;
      for (uint32_t i = 0; i < d; ++i) {
        dec.Get64(&out->keys.k[i][0]);
        dec.Get64(&out->keys.k[i][1]);
      }
      break;
    }
    case kKindBlocked: {
      BlockedGeometry g;
      g.d = d;
      g.r = r;
      g.K = BlockedBuckets(d, r);
      g.home_blocks = size_field;
      g.total_blocks = payload / kBlockBytes;
      if (d < 2 || d > kBlockedMaxSubtables) {
        *why = "blocked d must be in [2, 8]";
        return false;
      }
      for (uint32_t i = 0; i < d; ++i) dec.Get32(&g.multipliers[i]);
      for (size_t i = kFixedHeader + 4 * d; i < header; ++i) {
        if (s[i] != 0) {
          *why = "blocked header padding is not zero";
          return false;
        }
      }
      if (L != 1 || k != 0) {
        *why = "inconsistent blocked d-left header (L must be 1, k 0)";
        return false;
      }
      if (payload % kBlockBytes != 0) {
        *why = "blocked payload is not a whole number of 64-byte blocks";
        return false;
      }
      if (const char* bad = g.Invalid()) {
        *why = std::string("bad blocked geometry: ") + bad;
        return false;
      }
      if (entries > g.total_blocks * g.cells()) {
        *why = "more entries than cells";
        return false;
      }
      const uint64_t group_bits =
          g.groups() == 64 ? ~uint64_t{0} : ~(~uint64_t{0} >> g.groups());
      if ((BlockedFlags(s.data() + header + payload - kBlockBytes) & group_bits) != 0) {
        *why = "overflow flag set on the last block";
        return false;
      }
      out->blocked = g;
      break;
    }
    case kKindPacked: {
      PackedGeometry g;
      g.r = r;
      g.C = static_cast<uint8_t>(s[kFixedHeader]);
      g.B = static_cast<uint8_t>(s[kFixedHeader + 1]);
      g.home_blocks = size_field;
      g.total_blocks = payload / kPackedBlockBytes;
      for (size_t i = kFixedHeader + 2; i < header; ++i) {
        if (s[i] != 0) {
          *why = "packed header padding is not zero";
          return false;
        }
      }
      if (d != 0 || L != 0 || k != 0) {
        *why = "inconsistent packed header (d, L and k must be 0)";
        return false;
      }
      if (payload % kPackedBlockBytes != 0 || payload == 0) {
        *why = "packed payload is not a whole, non-zero number of 64-byte blocks";
        return false;
      }
      if (const char* bad = g.Invalid()) {
        *why = std::string("bad packed geometry: ") + bad;
        return false;
      }
      if (entries > g.total_blocks * g.C) {
        *why = "more entries than slots";
        return false;
      }
      if (packed_detail::Flag(s.data() + header + payload - kPackedBlockBytes)) {
        *why = "overflow flag set on the last block";
        return false;
      }
      out->packed = g;
      break;
    }
    case kKindBloom:
      // ceil(bits / 8) without overflow: (size_field + 7) / 8 wrapped for
      // size_field near 2^64, so a forged bit count passed with a tiny
      // payload and the probes read far out of bounds (found by
      // fuzz_filter_block_reader).
      if (k < 1 || k > kMaxBloomProbes || size_field == 0 || d || L || r ||
          size_field / 8 + (size_field % 8 != 0 ? 1 : 0) != payload) {
        *why = "inconsistent Bloom block";
        return false;
      }
      out->bloom_probes = k;
      out->bloom_bits = size_field;
      break;
    default:
      *why = "unknown block kind " + std::to_string(kind);
      return false;
  }
  const size_t body = header + static_cast<size_t>(payload);
  if (internal::HashKey(s.data(), body, 0) != internal::DecodeFixed64(s.data() + body)) {
    *why = "checksum mismatch";
    return false;
  }
  out->version = version;
  out->kind = kind;
  out->hash_seed = seed;
  out->entries = entries;
  out->payload = s.data() + header;
  out->payload_bytes = static_cast<size_t>(payload);
  return true;
}


void PutHeader(std::string* out, uint8_t version, uint8_t kind, uint8_t d, uint8_t L, uint8_t r,
               uint8_t k, uint8_t retries, uint64_t size_field, uint64_t entries, uint64_t payload) {
  internal::PutFixed32(out, kBlockMagic);
  internal::PutFixed8(out, version);
  internal::PutFixed8(out, kind);
  internal::PutFixed8(out, d);
  internal::PutFixed8(out, L);
  internal::PutFixed8(out, r);
  internal::PutFixed8(out, 0);  // c
  internal::PutFixed8(out, k);
  internal::PutFixed8(out, retries);
  internal::PutFixed32(out, 0);
  internal::PutFixed64(out, size_field);
  internal::PutFixed64(out, kKeyHashSeed);
  internal::PutFixed64(out, entries);
  internal::PutFixed64(out, payload);
}

}  // namespace sst_filter
}  // namespace dlcbf
