// Analytic model and threshold optimizer of the autoscaling Bloom filter.
//
// What it is
//   The closed-form performance of an ABF (Kleyko, Rahimi, Gayler, Osipov,
//   "Autoscaling Bloom filter: controlling trade-off between true and false
//   positives", Neural Comput. & Applic. 2019, §3.3-§4.1): a CBF of m
//   counters holding n distinct keys, each mapped to k distinct positions,
//   binarized as [counter > Θ] and queried with decision threshold T
//   (member iff at least T of the k positions are 1).
//     p_1 = k / m                                   (eq. 7)
//     I ~ B(n, p_1)                 counter value     (eq. 8)
//     P_0 = Pr(I <= Θ),  P_1 = 1 - P_0              (eqs. 13, 14)
//     d_x = k - (m/n) Σ_{v<=Θ} v Pr(I = v),  d_y = k P_1  (eqs. 15, 16)
//     p_x = d_x / k,  p_y = P_1                     (eqs. 17, 18)
//     X ~ B(k, p_x), Y ~ B(k, p_y)
//     TPR = Pr(X >= T),  FPR = Pr(Y >= T)           (eqs. 19, 20)
//     ACC = (TPR + 1 - FPR) / 2                     (§4.1)
//     T_opt = argmax_T ACC s.t. TPR >= L_TPR         (eq. 21)
//     (Θ,T)_opt = argmax_{Θ,T} ACC s.t. TPR >= L_TPR (eq. 22)
//   Binomial distributions as in the paper (§3.2, "we do not use the
//   approximations"), evaluated in log space (lgamma) and summed on the
//   side of the distribution that does not contain the bulk of the mass,
//   so tails like FPR = 1e-30 keep full relative precision and 1 - P_0 is
//   never formed by cancellation.
//
//   p_x is computed through the identity
//     (m/(n k)) Σ_{v<=Θ} v Pr(I = v) = Pr(B(n-1, p_1) <= Θ - 1),
//   i.e. p_x = Pr(B(n-1, p_1) >= Θ): a stored key's own position holds
//   1 + (the other n-1 keys' hits) and survives binarization iff that
//   exceeds Θ. PaperPx() evaluates eq. 17 literally; tests check equality.
//
// Why it exists
//   AutoscalingBloomFilter::AutoTune uses it to re-pick (Θ, T) as n
//   changes without rebuilding the filter (the ABF's point, §4.3), the
//   elastic filter reports its predicted FPR from it, and tools/abf_model
//   reproduces the paper's Figs. 2-4 with it.
//
// Finite counters (not in the paper, which assumes unlimited counters, §5)
//   Our counters saturate at M = 2^w - 1 and stick. With counter_max = M:
//   - Insert-only: a counter reads min(I, M), and [min(I, M) > Θ] = [I > Θ]
//     for Θ < M, so the model is exact for Θ <= M - 1; for Θ >= M every
//     position reads 0 (P_1 = p_x = 0). The optimizer searches Θ < M only.
//   - With erases, a counter that once reached M stays at M after its true
//     count drops, so P_1 can only grow (never TPR loss at Θ = 0; a slightly
//     higher FPR). The excess is at most the fraction of counters that ever
//     saturated: Pr(Poisson(λ) >= M) per turnover of the key set, λ = kn/m.
//     w = 4: λ = 0.69 (optimal k) -> 1.6e-15; Fig. 2's λ = 5 -> 2.3e-4 per
//     turnover, i.e. P_1 grows by <= 2.3e-4 and the Θ = 0, k = 100 FPR
//     (P_1^k) by <= ~2.3 % relative per full turnover. Fig. 4's λ = 50
//     needs w >= 7 (Pr(>= 127) = 6e-20). The model does not track churn
//     history; callers with heavy churn at high λ should use wider counters.
//
// Lossless requests
//   L_TPR >= 1 means "guaranteed no false negatives", not "model TPR rounds
//   to 1.0" (for Θ >= 1 the model's TPR can be 1 - 1e-20 == 1.0 in double).
//   With Θ = 0 every live key has all k positions at 1 (its own count is
//   >= 1 and saturated counters never drop), so any T <= k is lossless and
//   T = k has the lowest FPR. With Θ >= 1 no T >= 1 is lossless for every
//   key set: a set holding one key x has count exactly 1 at all of x's
//   positions, so [count > Θ] is all-zero. The only lossless settings are
//   therefore Θ = 0 (any T) and T = 0 (accept everything), and the
//   optimizers answer L_TPR >= 1 with Θ = 0, T = k (OptimizeT with Θ >= 1:
//   T = 0) without consulting the model.
//
// Thread safety: pure functions of their arguments; no shared state.
#pragma once

#include <cstdint>
#include <vector>

namespace dlcbf {
namespace abf {

// The filter being modelled. counter_max = 0 means unlimited counters (the
// paper); otherwise 2^w - 1 of the implementation's counters.
struct FilterShape {
  uint64_t m = 0;            // counters, >= 1
  uint32_t k = 0;            // probes per key, 1 <= k <= m
  uint64_t n = 0;            // distinct keys stored
  uint32_t counter_max = 0;  // 0 = unlimited
};

struct ModelPoint {
  uint32_t theta = 0;   // Θ
  uint32_t T = 0;       // decision threshold
  double p1 = 0;        // k / m (eq. 7)
  double P0 = 0;        // Pr(position binarizes to 0) (eq. 13)
  double P1 = 0;        // 1 - P0 (eq. 14)
  double dx = 0;        // expected dot product, stored key (eq. 15)
  double dy = 0;        // expected dot product, absent key (eq. 16)
  double px = 0;        // eq. 17
  double py = 0;        // eq. 18
  double tpr = 0;       // eq. 19
  double fpr = 0;       // eq. 20
  double acc = 0;       // (TPR + 1 - FPR) / 2
};

// Full evaluation for one (Θ, T). n == 0: empty filter, TPR = 1 (vacuous),
// FPR = [T == 0]. Preconditions: 1 <= k <= m, T <= k.
ModelPoint Evaluate(const FilterShape& shape, uint32_t theta, uint32_t T);

// Eq. 17 evaluated literally: 1 - m/(n k) Σ_{v=0}^{Θ} v Pr(I = v)
// (unlimited counters). For cross-checking the identity used by Evaluate.
double PaperPx(uint64_t m, uint32_t k, uint64_t n, uint32_t theta);

// Binomial helpers in log space (exposed for tests and tools).
double BinomialLogPmf(uint64_t n, double p, uint64_t v);
double BinomialUpperTail(uint64_t n, double p, uint64_t t);  // Pr(Z >= t)
double BinomialLowerTail(uint64_t n, double p, uint64_t t);  // Pr(Z <= t)

// The probability mass functions of X (stored key) and Y (absent key) over
// d = 0..k for binarization threshold Θ (the curves of Fig. 2).
void DotProductPmfs(const FilterShape& shape, uint32_t theta,
                    std::vector<double>* pmf_x, std::vector<double>* pmf_y);

struct Tuning {
  uint32_t theta = 0;
  uint32_t T = 0;
  double tpr = 1;
  double fpr = 1;
  double acc = 0.5;
  bool lossless = false;  // Θ == 0 or T == 0: no false negatives, guaranteed
};

// Eq. 21: the T maximizing ACC subject to TPR >= l_tpr for fixed Θ (ties
// go to the larger T, i.e. the lower FPR). T = 0 (TPR = 1) is always
// feasible, so a result always exists. l_tpr >= 1: see "Lossless
// requests". l_tpr is clamped to [0, 1].
Tuning OptimizeT(const FilterShape& shape, uint32_t theta, double l_tpr);

// Eq. 22: the (Θ, T) maximizing ACC subject to TPR >= l_tpr, Θ searched
// from 0 up to min(max_theta, counter_max - 1, n) and stopping once P_1
// vanishes. Ties go to the smaller Θ. l_tpr >= 1 returns Θ = 0, T = k.
Tuning OptimizeThresholds(const FilterShape& shape, double l_tpr,
                          uint32_t max_theta = UINT32_MAX);

}  // namespace abf
}  // namespace dlcbf
