// SST filter geometry planner: picks (d, L, r, load) for a bits/key budget
// or a target FPR, and validates DLeftFilterPolicyOptions.
//
// Design note
// -----------
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
// buckets per insert). Measured (200 trials at n = 30..3000, 1..20 trials at
// n = 30k..8M):
//     d L   alpha_max  min r   (cuckoo threshold)
//     4 1   0.91       8       (0.977)  0.93 fails at n = 4M (r = 9)
//     3 1   0.85       10      (0.918)  0.88 fails at n = 1M; r = 8 fails
//                                        at load 0.43 (n = 840k)
//     3 2   0.96       7       (0.988)
//     4 2   0.97       7       (0.997)
//     2 L   not used: d = 2 stops filling early at n = 4M (L = 2, r = 12:
//           load 0.70; L = 3, r = 9: 0.91; L = 4, r = 8: 0.94)
// "min r": this table was measured under an earlier permutation round
// function, a Weyl sequence in q (F(i, q) = fastrange((q ^ k) * 0x9E37...,
// B)), for which F_1(q) - F_0(q) took few distinct values at small r, so the
// candidate buckets of different keys were correlated and large tables
// stopped filling early. Today's round function (internal/dleft_layout.h)
// is a keyed full-avalanche Mix64 with P_0 = identity, which removes that
// correlation (a one-off check: d = 3, L = 1, r = 8 filled to 0.88 instead
// of 0.61 at n = 1M). The table has NOT been re-measured since, so the
// planner keeps these older, conservative limits: a plan may be slightly
// worse than the best one, never unreliable. Re-measuring it would allow
// d = 3, L = 1 at load ~0.9 (0.53% FPR at 10 bits/key with 3 probes).
// Resulting plans (payload only; standard Bloom bound in parentheses):
//     b = 8    d3 L2 r7  alpha .875  FPR 4.13%   (2.16%)
//     b = 9    d4 L1 r8  alpha .889  FPR 1.39%   (1.33%)
//     b = 10   d4 L1 r9  alpha .900  FPR 0.705%  (0.82%; RocksDB's
//                                                  FastLocalBloom: ~0.97%)
//     b = 11   d4 L1 r10 alpha .909  FPR 0.355%  (0.51%)
//     b = 12   d3 L1 r10 alpha .833  FPR 0.244%  (0.31%)
//     b = 14   d3 L2 r13 alpha .929  FPR 0.068%  (0.12%)
//     b = 16   d3 L2 r15 alpha .938  FPR 0.017%  (0.046%)
// The FPR is a sawtooth in b (r is an integer); below ~9.5 bits/key a Bloom
// filter is as good or better. The paper default (d4, L8, r14 + c2) spends
// its bits on counters and is ~1.5x worse at equal space.
//
#include <cmath>
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
  if (L == 1) return d <= 2 ? 0.45 : d == 3 ? 0.85 : d == 4 ? 0.91 : 0.93;
  if (L == 2) return d <= 2 ? 0.75 : d == 3 ? 0.96 : 0.97;
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
    {4, 1, 0.91, 8}, {3, 1, 0.85, 10}, {3, 2, 0.96, 7}, {4, 2, 0.97, 7}};

double PlanFpr(uint32_t d, uint32_t L, uint32_t r, double load) {
  return d * L * load / (std::ldexp(1.0, static_cast<int>(r)) - 1.0);
}

uint64_t BucketsFor(uint64_t n, double load, uint32_t d, uint32_t L) {
  double b = std::ceil(static_cast<double>(n) / (load * d * L));
  if (!(b >= 1.0)) return 1;
  if (b > 1e15) return uint64_t{1} << 50;  // absurd; Geometry::Invalid rejects
  return static_cast<uint64_t>(b);
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
  if (fp_rate == 0.0 && remainder_bits != 0 && load != 0.0) {
    return Invalid("give at most one of remainder_bits (r) and load with a bits_per_key budget "
                   "(the other follows: load = r / bits_per_key)");
  }
  return Status::OK();
}

Status PlanDLeftFilter(const DLeftFilterPolicyOptions& o, DLeftFilterPlan* out) {
  Status s = o.Validate();
  if (!s.ok()) return s;
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
