// Fixed-width little-endian encoding, independent of host byte order.
//
// INTERNAL. Every on-disk structure in this project is written field by field
// through these helpers: never by memcpy of a struct.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace dlcbf {
namespace internal {

inline void PutFixed8(std::string* dst, uint8_t v) {
  dst->push_back(static_cast<char>(v));
}
inline void PutFixed16(std::string* dst, uint16_t v) {
  for (int i = 0; i < 2; ++i) dst->push_back(static_cast<char>(v >> (8 * i)));
}
inline void PutFixed32(std::string* dst, uint32_t v) {
  for (int i = 0; i < 4; ++i) dst->push_back(static_cast<char>(v >> (8 * i)));
}
inline void PutFixed64(std::string* dst, uint64_t v) {
  for (int i = 0; i < 8; ++i) dst->push_back(static_cast<char>(v >> (8 * i)));
}
// Writes v at dst (8 bytes, little-endian), for buffers built in place.
inline void EncodeFixed64(char* dst, uint64_t v) {
  for (int i = 0; i < 8; ++i) dst[i] = static_cast<char>(v >> (8 * i));
}

inline uint64_t DecodeFixedN(const char* p, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; ++i) {
    v |= static_cast<uint64_t>(static_cast<unsigned char>(p[i])) << (8 * i);
  }
  return v;
}
inline uint8_t DecodeFixed8(const char* p) {
  return static_cast<uint8_t>(DecodeFixedN(p, 1));
}
inline uint16_t DecodeFixed16(const char* p) {
  return static_cast<uint16_t>(DecodeFixedN(p, 2));
}
inline uint32_t DecodeFixed32(const char* p) {
  return static_cast<uint32_t>(DecodeFixedN(p, 4));
}
inline uint64_t DecodeFixed64(const char* p) { return DecodeFixedN(p, 8); }

// Bounds-checked sequential reader over an encoded buffer. Every Get*
// returns false (and leaves the output untouched) when fewer bytes remain
// than requested, so decoders never read out of bounds.
class Decoder {
 public:
  Decoder(const char* data, size_t size) : p_(data), left_(size) {}
  bool Get8(uint8_t* v) { return GetN(v, 1); }
  bool Get16(uint16_t* v) { return GetN(v, 2); }
  bool Get32(uint32_t* v) { return GetN(v, 4); }
  bool Get64(uint64_t* v) { return GetN(v, 8); }
  bool Skip(size_t n) {
    if (n > left_) return false;
    p_ += n;
    left_ -= n;
    return true;
  }
  const char* data() const { return p_; }
  size_t remaining() const { return left_; }

 private:
  template <typename T>
  bool GetN(T* v, int n) {
    if (left_ < static_cast<size_t>(n)) return false;
    *v = static_cast<T>(DecodeFixedN(p_, n));
    p_ += n;
    left_ -= static_cast<size_t>(n);
    return true;
  }
  const char* p_;
  size_t left_;
};

}  // namespace internal
}  // namespace dlcbf
