// SST filter geometry planner: picks the block format version and
// (d, L, r, load) or (r, C, B) for a bits/key budget or a target FPR, and
// validates DLeftFilterPolicyOptions.
//
// Version 3 (default; packed_table.h)
// -----------------------------------
// A budget of b bits/key puts lambda = 512 / b keys in a home block. For
// each r in [4, 16] and slot count C (lambda / C <= 0.97), the block keeps
// B = min(128 - C, 511 - C (r + 1)) buckets, and
//     FPR ~= lambda / (B 2^r) (1 + 2 e),
// e = E[X] / lambda the carried share of keys, X the stationary carry of
// X' = max(0, X + A - C), A ~ Poisson(lambda) (one home block's keys). By
// Spitzer's identity E[X] = sum_k E[(S_k)^+] / k with S_k + k C ~
// Poisson(k lambda), summed exactly (normal approximation past mean 2000).
// The planner takes the (r, C) with the least predicted FPR; a target FPR
// takes the least b (bisection) whose plan reaches it. Model vs a
// simulation of the builder (H = 20000 blocks, 2M negative queries):
//     b    r  C   B    u      e model/sim     FPR model  sim
//     10   7  54  74   0.948  0.112 / 0.116   0.662%     0.663%
//     10   7  55  64   0.931  0.069 / 0.071   0.711%     0.718%
//     12   8  47  81   0.908  0.052 / 0.052   0.227%     0.230%
//     13   9  42  86   0.938  0.118 / 0.112   0.111%     0.112%
//     16   11 34  94   0.941  0.166 / 0.166   0.0222%    0.0212%
// A negative query reads 1 + e blocks on average. Below ~9 bits/key no
// geometry keeps lambda < 0.97 C with useful r, and version 2 is planned.
//
// Version 2 (default; blocked_table.h)
// ------------------------------------
// A block of C = d K cells of r bits gets 512 / b keys for a budget of b
// bits/key, so the cell load is alpha = 512 / (b C), and
//     FPR ~= d alpha / (2^r - 1) * (1 + 1.4 (probes - 1)),
// probes = 1 + P(block overflows) * min(1, 3 / G) with the overflow share
// from a normal tail of Poisson(alpha C) keys against 0.96 C (d = 4) or
// 0.93 C (d = 3) usable cells. Loads are capped at 0.92 (d = 4), 0.87
// (d = 3), 0.60 (d = 2). Measured at n = 1M (one build each):
//     d r  K  G   bits/key alpha  flagged probes  FPR      d alpha/Rn
//     4 9  14  8  10       0.914  0.386   1.167   0.871%   0.716%
//     4 9  14  8  11       0.831  0.116   1.032   0.678%   0.651%
//     3 9  18 26  11       0.862  0.369   1.059   0.553%   0.506%
//     3 10 17  2  12       0.837  0.283   1.254   0.310%   0.245%
//     4 10 12 32  12       0.889  0.308   1.042   0.376%   0.348%
//     4 8  15 32  10       0.853  0.147   1.016   1.370%   1.339%
// (flagged: share of blocks with any flag; probes: blocks read per
// negative query, the extra ones adjacent to the first.) At 10 bits/key the
// plan is d = 4, r = 9: a quarter lower FPR than FastLocalBloom's ~0.96%
// at ~1.17 blocks per negative query, but above version 1's 0.705%: at
// 91% cell load a 56-cell block overflows often (its key count is Poisson),
// and each overflow probe costs FPR. Version 1 balances load over the
// whole table instead, at d cache lines per query.
//
// Version 1 design note
// ---------------------
// A static (SST) filter never deletes, so cells carry no counter (c = 0;
// the all-zero cell is the empty sentinel and Rn = 2^r - 1 remainders
// exist). A query hashes the key once (XXH3-64, fixed seed stored in the
// block), derives its true fingerprint f in [B] x [Rn] and probes the d
// candidate buckets P_i(f) (internal/dleft_layout.h). Exactly one copy of
// each stored fingerprint exists, so
//     FPR = F / (B * Rn)  ~=  d * L * alpha / (2^r - 1)
// for F stored fingerprints at cell load alpha = F / (d B L), and the
// payload costs r / alpha bits per key.
//
// Choosing the geometry for a budget of b bits/key: r = floor(b * alpha_max)
// and alpha = r / b, for the (d, L) that minimizes d L alpha / (2^r - 1).
// alpha_max is the highest load at which the table still fills reliably
// with DLeftCountingBloomFilter's bounded breadth-first relocation (256
// buckets per insert), under today's round function (internal/
// dleft_layout.h: keyed Mix64, P_0 = identity). Re-measured: 2 seeds each
// at n = 30k, 1M and 4M, loads in steps of 0.01, the highest load at which
// every run filled:
//     d L  r    n=30k  n=1M  n=4M   planned alpha_max (margin >= 0.02)
//     4 1  9    0.96   0.94  0.95   0.92
//     4 1  8    0.96   0.95  0.95   0.92   (min r 8)
//     3 1  10   0.88   0.86  0.87   0.84
//     3 1  8    0.89   0.88  0.87   0.84   (min r 8; was 10 under the
//                                           older Weyl round function)
//     3 2  7    0.99+  0.99+ 0.99+  0.97
//     4 2  7    0.99+  0.99+ 0.99+  0.97
//     2 L  not planned (d = 2 fills least; kept for expert overrides)
// Resulting version-1 plans (payload only; standard Bloom bound in
// parentheses):
//     b = 8    d3 L2 r7  alpha .875  FPR 4.13%   (2.16%)
//     b = 9    d4 L1 r8  alpha .889  FPR 1.39%   (1.33%)
//     b = 10   d4 L1 r9  alpha .900  FPR 0.705%  (0.82%; RocksDB's
//                                                  FastLocalBloom: ~0.97%)
//     b = 11   d4 L1 r10 alpha .909  FPR 0.355%  (0.51%)
//     b = 12   d4 L1 r11 alpha .917  FPR 0.179%  (0.31%)
//     b = 14   d3 L2 r13 alpha .929  FPR 0.068%  (0.12%)
//     b = 16   d3 L2 r15 alpha .938  FPR 0.017%  (0.046%)
// The FPR is a sawtooth in b (r is an integer); below ~9.5 bits/key a Bloom
// filter is as good or better. The paper default (d4, L8, r14 + c2) spends
// its bits on counters and is ~1.5x worse at equal space.
//
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "filter_policy/rocksdb/common/option_string.h"
#include "filter_policy/rocksdb/sst_filter/block_format.h"
#include "filter_policy/rocksdb/sst_filter/sst_filter_internal.h"

namespace dlcbf {

using rocksdb::Status;
using option_string::FormatDecimal;

namespace sst_filter {

Status Invalid(const std::string& msg) {
  return Status::InvalidArgument("dlcbf filter policy: " + msg);
}

double MaxLoad(uint32_t d, uint32_t L) {
  if (L == 1) return d <= 2 ? 0.45 : d == 3 ? 0.84 : d == 4 ? 0.92 : 0.93;
  if (L == 2) return d <= 2 ? 0.75 : 0.97;
  if (L == 3) return d <= 2 ? 0.88 : 0.97;
  return d <= 2 ? 0.92 : 0.97;
}

// Geometries the automatic plan chooses from, with the load and the
// smallest r at which they filled reliably up to n = 8M keys (see the
// design note: with few remainder values the candidate buckets of
// different keys are correlated and large tables stop filling early).
struct Candidate {
  uint32_t d, L;
  double max_load;
  uint32_t min_r;
};
constexpr Candidate kCandidates[] = {
    {4, 1, 0.92, 8}, {3, 1, 0.84, 8}, {3, 2, 0.97, 7}, {4, 2, 0.97, 7}};

double PlanFpr(uint32_t d, uint32_t L, uint32_t r, double load) {
  return d * L * load / (std::ldexp(1.0, static_cast<int>(r)) - 1.0);
}

uint64_t BucketsFor(uint64_t n, double load, uint32_t d, uint32_t L) {
  double b = std::ceil(static_cast<double>(n) / (load * d * L));
  if (!(b >= 1.0)) return 1;
  if (b > 1e15) return uint64_t{1} << 50;  // absurd; Geometry::Invalid rejects
  return static_cast<uint64_t>(b);
}

double BlockedMaxLoad(uint32_t d) { return d <= 2 ? 0.60 : d == 3 ? 0.87 : 0.92; }

double BlockedProbesPerQuery(uint32_t d, uint32_t r, double load) {
  const uint32_t K = BlockedBuckets(d, r);
  if (K == 0) return 1.0;
  const double cells = d * K;
  const double groups = std::min(64.0, 512.0 - cells * r);
  // Share of blocks that overflow: Poisson(load C) keys against a usable
  // capacity of 0.96 C (d = 4) or 0.93 C (d = 3) cells, normal tail.
  const double mean = load * cells;
  const double cap = (d >= 4 ? 0.96 : d == 3 ? 0.93 : 0.80) * cells;
  const double flagged = 0.5 * std::erfc((cap - mean) / std::sqrt(2.0 * mean));
  // A flagged block sets ~3 of its G group flags.
  return 1.0 + flagged * std::min(1.0, 3.0 / groups);
}

double BlockedPlanFpr(uint32_t d, uint32_t r, double load) {
  // A block that receives carried fingerprints is fuller than average, so
  // each extra probe costs ~1.4 home probes (fitted to the measurements in
  // blocked_table.h's table).
  const double extra = BlockedProbesPerQuery(d, r, load) - 1.0;
  return d * load / (std::ldexp(1.0, static_cast<int>(r)) - 1.0) * (1.0 + 1.4 * extra);
}

namespace {

// E[(N - m)^+] for N ~ Poisson(mu), m >= 0 an integer.
double PoissonExcess(double mu, double m) {
  const double sd = std::sqrt(mu);
  if (mu > 2000.0) {  // normal, with continuity correction
    const double z = (m + 0.5 - mu) / sd;
    const double pdf = std::exp(-0.5 * z * z) / std::sqrt(2.0 * M_PI);
    return sd * pdf - (m + 0.5 - mu) * 0.5 * std::erfc(z / std::sqrt(2.0));
  }
  double n = m + 1.0;
  double p = std::exp(n * std::log(mu) - mu - std::lgamma(n + 1.0));
  double sum = 0.0;
  const double stop = m + 12.0 * sd + 20.0;
  for (; n <= stop; n += 1.0) {
    sum += (n - m) * p;
    p *= mu / (n + 1.0);
  }
  return sum;
}

}  // namespace

double PackedCarryShare(double lambda, uint32_t C) {
  if (!(lambda > 0.0)) return 0.0;
  if (lambda >= C) return 1e9;
  double sum = 0.0;
  for (int k = 1; k <= 20000; ++k) {
    const double t = PoissonExcess(k * lambda, static_cast<double>(k) * C) / k;
    sum += t;
    if (k > 3 && t <= 1e-9 * sum) break;
    if (sum == 0.0 && k > 3) break;
  }
  return sum / lambda;
}

double PackedPlanFpr(double lambda, uint32_t r, uint32_t B, double carry_share) {
  return lambda / (B * std::ldexp(1.0, static_cast<int>(r))) * (1.0 + 2.0 * carry_share);
}

}  // namespace sst_filter

using namespace sst_filter;  // NOLINT: the planner is this namespace's API

Status DLeftFilterPolicyOptions::Validate() const {
  if (fp_rate == 0.0) {
    if (!std::isfinite(bits_per_key) || bits_per_key < 4.0 || bits_per_key > 48.0) {
      return Invalid("bits_per_key must be in [4, 48], got " + FormatDecimal(bits_per_key));
    }
  } else if (!std::isfinite(fp_rate) || fp_rate < 1e-9 || fp_rate > 0.5) {
    return Invalid("fp_rate must be in [1e-9, 0.5] (or 0 to use bits_per_key), got " +
                   FormatDecimal(fp_rate));
  }
  if (subtables != 0 && (subtables < 2 || subtables > 8)) {
    return Invalid("subtables (d) must be in [2, 8], got " + std::to_string(subtables));
  }
  if (cells_per_bucket != 0 && cells_per_bucket > 8) {
    return Invalid("cells_per_bucket (L) must be in [1, 8], got " + std::to_string(cells_per_bucket));
  }
  if (remainder_bits != 0 && (remainder_bits < 2 || remainder_bits > 32)) {
    return Invalid("remainder_bits (r) must be in [2, 32], got " + std::to_string(remainder_bits));
  }
  if (load != 0.0 && (!std::isfinite(load) || load < 0.05 || load > 0.99)) {
    return Invalid("load must be in [0.05, 0.99], got " + FormatDecimal(load));
  }
  if (max_filter_block_bytes < kMinFilterBlockLimit || max_filter_block_bytes > kMaxFilterBlockLimit) {
    return Invalid("max_filter_block_bytes must be in [" + std::to_string(kMinFilterBlockLimit) + ", " +
                   std::to_string(kMaxFilterBlockLimit) + "], got " + std::to_string(max_filter_block_bytes));
  }
  if (max_relocation_nodes > 65536) {
    return Invalid("max_relocation_nodes must be in [0, 65536], got " +
                   std::to_string(max_relocation_nodes));
  }
  if (format_version > 3) {
    return Invalid("format_version (v) must be 1, 2 or 3, got " + std::to_string(format_version));
  }
  if (format_version == 3 && (subtables != 0 || cells_per_bucket != 0 || load != 0.0)) {
    return Invalid("format version 3 (:v3) has one variable-size bucket per key: no subtables (d), "
                   "cells_per_bucket (L) or load; only remainder_bits (r) may be given");
  }
  if (format_version == 3 && remainder_bits != 0 &&
      (remainder_bits < kPackedMinRemainderBits || remainder_bits > kPackedMaxRemainderBits)) {
    return Invalid("remainder_bits (r) must be in [4, 16] with format version 3, got " +
                   std::to_string(remainder_bits));
  }
  if (format_version == 2 && cells_per_bucket > 1) {
    return Invalid("cells_per_bucket (L) > 1 needs format version 1 (:v1); version 2 has L = 1");
  }
  if (format_version == 2 && remainder_bits != 0 &&
      (remainder_bits < kBlockedMinRemainderBits || remainder_bits > kBlockedMaxRemainderBits)) {
    return Invalid("remainder_bits (r) must be in [4, 16] with format version 2, got " +
                   std::to_string(remainder_bits));
  }
  if (fp_rate == 0.0 && remainder_bits != 0 && load != 0.0) {
    return Invalid("give at most one of remainder_bits (r) and load with a bits_per_key budget "
                   "(the other follows: load = r / bits_per_key)");
  }
  return Status::OK();
}

namespace {

// Version 3: the packed table for lambda keys per home block, the (r, C, B)
// of least predicted FPR; false if none keeps lambda / C <= 0.97.
constexpr double kPackedMaxFill = 0.97;
bool PlanPackedFor(double lambda, uint32_t fixed_r, DLeftFilterPlan* out) {
  double share[kPackedMaxDirBits] = {};  // e(lambda, C), computed once per C
  bool have[kPackedMaxDirBits] = {};
  bool found = false;
  const uint32_t r_lo = fixed_r ? fixed_r : kPackedMinRemainderBits;
  const uint32_t r_hi = fixed_r ? fixed_r : kPackedMaxRemainderBits;
  for (uint32_t r = r_lo; r <= r_hi; ++r) {
    for (uint32_t C = static_cast<uint32_t>(std::ceil(lambda / kPackedMaxFill)); C < kPackedMaxDirBits;
         ++C) {
      if (C < 1) continue;
      const int64_t room = 511 - static_cast<int64_t>(C) * (r + 1);
      const int64_t B = std::min<int64_t>(kPackedMaxDirBits - C, room);
      if (B < 1) break;  // larger C only leaves less room
      if (!have[C]) {
        share[C] = PackedCarryShare(lambda, C);
        have[C] = true;
      }
      const double fpr = PackedPlanFpr(lambda, r, static_cast<uint32_t>(B), share[C]);
      if (!found || fpr < out->predicted_fpr * (1 - 1e-9)) {
        DLeftFilterPlan p;
        p.format_version = 3;
        p.subtables = 0;
        p.cells_per_bucket = 0;
        p.remainder_bits = r;
        p.slots_per_block = C;
        p.buckets_per_block = static_cast<uint32_t>(B);
        p.load = lambda / C;
        p.bits_per_key = 512.0 / lambda;
        p.predicted_fpr = fpr;
        *out = p;
        found = true;
      }
    }
  }
  return found;
}

bool PlanPacked(const DLeftFilterPolicyOptions& o, DLeftFilterPlan* out, std::string* problem) {
  if (o.fp_rate == 0.0) {
    if (PlanPackedFor(512.0 / o.bits_per_key, o.remainder_bits, out)) return true;
    *problem = "no version-3 geometry fits bits_per_key " + FormatDecimal(o.bits_per_key) +
               (o.remainder_bits ? " with remainder_bits " + std::to_string(o.remainder_bits) : "") +
               " (a block would need more than 127 slots or lambda > 0.97 C)";
    return false;
  }
  // The least bits/key whose plan reaches fp_rate: the best FPR falls as
  // the budget grows, so bisect on lambda (keys per block).
  DLeftFilterPlan best;
  if (!PlanPackedFor(512.0 / 48.0, o.remainder_bits, &best) || best.predicted_fpr > o.fp_rate) {
    *problem = "fp_rate " + FormatDecimal(o.fp_rate) +
               " needs more than 16 remainder bits in format version 3";
    return false;
  }
  double lo = 512.0 / 48.0, hi = 127.0 * kPackedMaxFill;  // lo reaches the target
  for (int i = 0; i < 24 && hi - lo > 0.01; ++i) {
    const double mid = 0.5 * (lo + hi);
    DLeftFilterPlan p;
    if (PlanPackedFor(mid, o.remainder_bits, &p) && p.predicted_fpr <= o.fp_rate) {
      lo = mid;
      best = p;
    } else {
      hi = mid;
    }
  }
  *out = best;
  return true;
}

// Version 2: the blocked table (blocked_table.h). For each (d, r) a block
// holds C = d K cells; a budget of b bits/key puts 512 / b keys in a home
// block, so the cell load is alpha = 512 / (b C).
bool PlanBlocked(const DLeftFilterPolicyOptions& o, DLeftFilterPlan* out, std::string* problem) {
  bool found = false;
  DLeftFilterPlan best;
  const uint32_t d_lo = o.subtables ? o.subtables : 2, d_hi = o.subtables ? o.subtables : 4;
  const uint32_t r_lo = o.remainder_bits ? o.remainder_bits : kBlockedMinRemainderBits;
  const uint32_t r_hi = o.remainder_bits ? o.remainder_bits : kBlockedMaxRemainderBits;
  for (uint32_t d = d_lo; d <= d_hi; ++d) {
    for (uint32_t r = r_lo; r <= r_hi; ++r) {
      const uint32_t K = BlockedBuckets(d, r);
      if (K == 0) continue;
      const double C = static_cast<double>(d * K);
      double load;
      if (o.load != 0.0) {
        load = o.load;
      } else if (o.fp_rate == 0.0) {
        load = 512.0 / (o.bits_per_key * C);
      } else {
        load = BlockedMaxLoad(d);
      }
      if (load > BlockedMaxLoad(d) && o.load == 0.0) continue;
      if (load > 0.99 || load < 0.05) continue;
      DLeftFilterPlan p;
      p.format_version = 2;
      p.subtables = d;
      p.cells_per_bucket = 1;
      p.remainder_bits = r;
      p.load = load;
      p.bits_per_key = 512.0 / (load * C);
      p.predicted_fpr = BlockedPlanFpr(d, r, load);
      if (o.fp_rate != 0.0 && p.predicted_fpr > o.fp_rate && o.remainder_bits == 0) continue;
      if (o.fp_rate == 0.0 && o.load != 0.0 && o.remainder_bits == 0 &&
          p.bits_per_key > o.bits_per_key * (1 + 1e-9)) {
        continue;
      }
      bool better;
      if (!found) {
        better = true;
      } else if (o.fp_rate == 0.0) {
        better = p.predicted_fpr < best.predicted_fpr * (1 - 1e-9);
      } else {
        better = p.bits_per_key < best.bits_per_key * (1 - 1e-9);
      }
      if (better) {
        best = p;
        found = true;
      }
    }
  }
  if (!found) {
    *problem = o.fp_rate != 0.0
                   ? "fp_rate " + FormatDecimal(o.fp_rate) + " needs more than 16 remainder bits"
                   : "no version-2 geometry fits bits_per_key " + FormatDecimal(o.bits_per_key) +
                         " (the cell load would exceed the reliable maximum)";
    return false;
  }
  *out = best;
  return true;
}

}  // namespace

Status PlanDLeftFilter(const DLeftFilterPolicyOptions& o, DLeftFilterPlan* out) {
  Status s = o.Validate();
  if (!s.ok()) return s;
  const bool v1_geometry =
      o.cells_per_bucket > 1 || o.remainder_bits > kBlockedMaxRemainderBits ||
      (o.remainder_bits != 0 && o.remainder_bits < kBlockedMinRemainderBits);
  // Version 3 unless overrides name another layout (d, L, load) or its plan
  // predicts no better FPR than version 2's (small budgets).
  const bool v3_possible = o.subtables == 0 && o.cells_per_bucket == 0 && o.load == 0.0 &&
                           (o.remainder_bits == 0 || (o.remainder_bits >= kPackedMinRemainderBits &&
                                                      o.remainder_bits <= kPackedMaxRemainderBits));
  if (o.format_version == 3 || (o.format_version == 0 && v3_possible)) {
    std::string problem;
    DLeftFilterPlan v3;
    if (PlanPacked(o, &v3, &problem)) {
      DLeftFilterPlan v2;
      std::string unused;
      if (o.format_version == 3 || !PlanBlocked(o, &v2, &unused) ||
          (o.fp_rate == 0.0 ? v3.predicted_fpr <= v2.predicted_fpr : v3.bits_per_key <= v2.bits_per_key)) {
        *out = v3;
        return Status::OK();
      }
      *out = v2;
      return Status::OK();
    }
    if (o.format_version == 3) return Invalid(problem);
  }
  if (o.format_version == 2 || (o.format_version == 0 && !v1_geometry)) {
    std::string problem;
    if (PlanBlocked(o, out, &problem)) return Status::OK();
    if (o.format_version == 2) return Invalid(problem);
    // Automatic: fall through to version 1, which covers r up to 32 (a
    // different layout, equally lossless; the plan says which one).
  }
  bool found = false;
  DLeftFilterPlan best;
  std::string last_problem = "no geometry fits";
  auto consider = [&](uint32_t d, uint32_t L, double cand_load, uint32_t min_r) {
    DLeftFilterPlan p;
    p.subtables = d;
    p.cells_per_bucket = L;
    const double max_load = o.load != 0.0 ? o.load : cand_load;
    if (o.fp_rate == 0.0) {
      const double b = o.bits_per_key;
      if (o.remainder_bits != 0) {
        p.remainder_bits = o.remainder_bits;
        p.load = o.remainder_bits / b;
        if (p.load > 0.99) {
          last_problem = "remainder_bits (r) = " + std::to_string(o.remainder_bits) +
                         " needs load r / bits_per_key = " + FormatDecimal(p.load) +
                         " > 0.99; lower r or raise bits_per_key";
          return;
        }
      } else {
        const double rr = std::floor(b * max_load + 1e-9);
        p.remainder_bits = static_cast<uint32_t>(std::min(32.0, rr));
        if (p.remainder_bits < 2) {
          last_problem = "bits_per_key " + FormatDecimal(b) + " is too small for load " +
                         FormatDecimal(max_load) + " (needs r >= 2)";
          return;
        }
        p.load = o.load != 0.0 ? o.load : p.remainder_bits / b;
      }
    } else {
      p.load = max_load;
      if (o.remainder_bits != 0) {
        p.remainder_bits = o.remainder_bits;
      } else {
        const double need = std::log2(d * L * p.load / o.fp_rate + 1.0);
        const double rr = std::max<double>(min_r, std::max(2.0, std::ceil(need - 1e-12)));
        if (rr > 32) {
          last_problem = "fp_rate " + FormatDecimal(o.fp_rate) + " needs more than 32 remainder bits";
          return;
        }
        p.remainder_bits = static_cast<uint32_t>(rr);
      }
    }
    if (o.remainder_bits == 0 && p.remainder_bits < min_r) {
      last_problem = "no reliable geometry for this budget (needs remainder bits >= " +
                     std::to_string(min_r) + ")";
      return;
    }
    p.format_version = 1;
    p.bits_per_key = p.remainder_bits / p.load;
    p.predicted_fpr = PlanFpr(d, L, p.remainder_bits, p.load);
    bool better;
    if (!found) {
      better = true;
    } else if (o.fp_rate == 0.0) {
      better = p.predicted_fpr < best.predicted_fpr * (1 - 1e-9) ||
               (p.predicted_fpr <= best.predicted_fpr * (1 + 1e-9) &&
                d * L < best.subtables * best.cells_per_bucket);
    } else {
      better = p.bits_per_key < best.bits_per_key * (1 - 1e-9) ||
               (p.bits_per_key <= best.bits_per_key * (1 + 1e-9) &&
                p.predicted_fpr < best.predicted_fpr);
    }
    if (better) {
      best = p;
      found = true;
    }
  };
  if (o.subtables != 0 || o.cells_per_bucket != 0) {
    const uint32_t d_lo = o.subtables ? o.subtables : 2, d_hi = o.subtables ? o.subtables : 4;
    const uint32_t l_lo = o.cells_per_bucket ? o.cells_per_bucket : 1;
    const uint32_t l_hi = o.cells_per_bucket ? o.cells_per_bucket : 4;
    for (uint32_t d = d_lo; d <= d_hi; ++d) {
      for (uint32_t L = l_lo; L <= l_hi; ++L) consider(d, L, MaxLoad(d, L), 2);
    }
  } else {
    for (const Candidate& c : kCandidates) consider(c.d, c.L, c.max_load, c.min_r);
    // Small budgets (below ~8.5 bits/key): nothing is reliable for large
    // tables; take the best anyway (big SSTs may then be rebuilt at lower
    // load or fall back to the Bloom format, which is better there).
    if (!found) {
      for (const Candidate& c : kCandidates) consider(c.d, c.L, c.max_load, 2);
    }
  }
  if (!found) return Invalid(last_problem);
  *out = best;
  return Status::OK();
}


}  // namespace dlcbf
