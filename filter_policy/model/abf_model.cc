// Analytic model of the autoscaling Bloom filter (Kleyko et al. 2019,
// §3.3-§4.1, eqs. 7-22) and its (Θ, T) optimizer.
//
// Design note (numbers from the paper's running example, §4.2 and §4.3):
//   - Fig. 2 (m = 10,000, k = 100, n = 500, L_TPR = 0.97). This model
//     gives Θ = 0: T = 100, TPR = 1, FPR = 0.517 (paper 0.52); Θ = 1:
//     T = 98, TPR = 0.971, FPR = 0.236 (paper "0.24 at the cost of 3 %
//     TPR"); Θ = 4: T = 65, TPR = 0.977, FPR = 0.043, ACC = 0.967 (paper
//     0.98 / 0.04 / 0.97), the best of Θ = 0..5 as in the paper.
//   - Fig. 4 (n = 5000, L_TPR = 0.9, Θ and T optimized): Θ = 48, T = 57,
//     TPR = 0.912, FPR = 0.587, ACC = 0.662 (paper: ~0.6 and 0.66). The
//     optimized Bloom filter there has k = round(2 ln 2) = 1: FPR = 0.393,
//     ACC = 0.803 (paper ~0.4 and 0.8).
//   - Accuracy of the model itself (tests/abf_model_test.cc): the paper's
//     binomial treatment ignores that the fill of one filter fluctuates
//     (sd of P_1 ~ sqrt(P_1 P_0 / m)) and that y samples its k positions
//     without replacement (hypergeometric). For k = 100, m = 10,000 the
//     measured FPR of a single filter scatters ~8 % (relative) around P_1^k
//     at Θ = 0; averaged over filters it matches the model within the
//     Monte-Carlo error.
//   - Cost. Evaluate is O(k + tail length); OptimizeT O(k); the full
//     OptimizeThresholds O(Θ_max k), Θ_max <= counter_max - 1 (254 for
//     8-bit counters): well under a millisecond for k = 100, so AutoTune
//     can run on every size change that matters.
//   - Numerics. Log-space pmfs (lgamma for the first term, then the ratio
//     recurrence), tails summed directly on the side away from the mode and
//     truncated at 1e-17 relative, the other side as 1 - (small tail) with
//     the small tail <= ~0.5, so no catastrophic cancellation anywhere.
//     lgamma's absolute error ~ n ln n * 2^-53 bounds the relative error of
//     a pmf at ~1e-9 for n = 10^6.
#include "dlcbf/model/abf_model.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace dlcbf {
namespace abf {

namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();
constexpr double kTailEps = 1e-17;

// Sum of pmf(v) for v = from, from+1, ..., n, stopping once past the mode
// and the terms are negligible. For from >= ~mean.
double SumUp(uint64_t n, double p, uint64_t from) {
  const double mode = std::floor((static_cast<double>(n) + 1) * p);
  const double lratio = std::log(p) - std::log1p(-p);
  double lt = BinomialLogPmf(n, p, from);
  double sum = 0;
  for (uint64_t v = from; v <= n; ++v) {
    const double t = std::exp(lt);
    sum += t;
    if (static_cast<double>(v) > mode && t <= sum * kTailEps) break;
    if (v == n) break;
    lt += std::log(static_cast<double>(n - v) / static_cast<double>(v + 1)) + lratio;
  }
  return std::min(sum, 1.0);
}

// Sum of pmf(v) for v = from, from-1, ..., 0, stopping once below the mode
// and the terms are negligible. For from <= ~mean.
double SumDown(uint64_t n, double p, uint64_t from) {
  const double mode = std::floor((static_cast<double>(n) + 1) * p);
  const double lratio = std::log1p(-p) - std::log(p);
  double lt = BinomialLogPmf(n, p, from);
  double sum = 0;
  for (uint64_t v = from;; --v) {
    const double t = std::exp(lt);
    sum += t;
    if (v == 0) break;
    if (static_cast<double>(v) < mode && t <= sum * kTailEps) break;
    // pmf(v-1) / pmf(v) = v / (n - v + 1) * (1-p)/p
    lt += std::log(static_cast<double>(v) / static_cast<double>(n - v + 1)) + lratio;
  }
  return std::min(sum, 1.0);
}

// Fills the X/Y success probabilities and P0/P1 for Θ.
struct Binarized {
  double P0, P1, px;
};

Binarized Binarize(const FilterShape& s, uint32_t theta) {
  Binarized b;
  if (s.n == 0) {
    b.P0 = 1;
    b.P1 = 0;
    b.px = 1;  // no stored key: TPR is vacuously 1
    return b;
  }
  if (s.counter_max != 0 && theta >= s.counter_max) {
    // Every counter reads <= counter_max <= Θ: the binarized filter is 0.
    b.P0 = 1;
    b.P1 = 0;
    b.px = 0;
    return b;
  }
  const double p1 = static_cast<double>(s.k) / static_cast<double>(s.m);
  b.P0 = BinomialLowerTail(s.n, p1, theta);
  b.P1 = BinomialUpperTail(s.n, p1, uint64_t{theta} + 1);
  b.px = BinomialUpperTail(s.n - 1, p1, theta);  // Θ = 0 -> exactly 1
  return b;
}

// Pr(Z >= T) for T = 0..k into tail[0..k] (suffix sums of the pmf).
void Tails(uint32_t k, double p, std::vector<double>* tail) {
  tail->assign(k + 2, 0.0);
  double acc = 0;
  for (uint32_t d = k + 1; d-- > 0;) {
    const double lp = BinomialLogPmf(k, p, d);
    if (lp != kNegInf) acc += std::exp(lp);
    (*tail)[d] = std::min(acc, 1.0);
  }
  (*tail)[0] = 1.0;  // exact: the pmf sums to 1
}

Tuning TuneTheta(const FilterShape& s, uint32_t theta, double l_tpr, double* P1_out) {
  const Binarized b = Binarize(s, theta);
  if (P1_out != nullptr) *P1_out = b.P1;
  std::vector<double> tx, ty;
  Tails(s.k, b.px, &tx);
  Tails(s.k, b.P1, &ty);
  Tuning best;
  best.theta = theta;
  bool found = false;
  for (uint32_t T = s.k + 1; T-- > 0;) {
    const double tpr = s.n == 0 ? 1.0 : tx[T];
    if (tpr < l_tpr) continue;
    const double fpr = ty[T];
    const double acc = (tpr + 1.0 - fpr) / 2.0;
    if (!found || acc > best.acc) {
      found = true;
      best.T = T;
      best.tpr = tpr;
      best.fpr = fpr;
      best.acc = acc;
    }
  }
  best.lossless = theta == 0 || best.T == 0;
  return best;
}

double ClampLtpr(double l_tpr) {
  if (std::isnan(l_tpr)) return 1.0;  // unknown: the safe side
  return std::min(1.0, std::max(0.0, l_tpr));
}

}  // namespace

// std::lgamma writes the global `signgam`, a data race when the model runs
// on several threads (e.g. concurrent ElasticFilter::Stats()). lgamma_r
// (glibc) returns the sign through an argument instead; every argument here
// is >= 1, so the sign is always +1.
static double LogGamma(double x) {
  int sign = 0;
  return lgamma_r(x, &sign);
}

double BinomialLogPmf(uint64_t n, double p, uint64_t v) {
  if (v > n) return kNegInf;
  if (p <= 0) return v == 0 ? 0.0 : kNegInf;
  if (p >= 1) return v == n ? 0.0 : kNegInf;
  const double dn = static_cast<double>(n), dv = static_cast<double>(v);
  return LogGamma(dn + 1) - LogGamma(dv + 1) - LogGamma(dn - dv + 1) +
         dv * std::log(p) + (dn - dv) * std::log1p(-p);
}

double BinomialUpperTail(uint64_t n, double p, uint64_t t) {
  if (t == 0) return 1.0;
  if (t > n) return 0.0;
  if (p <= 0) return 0.0;
  if (p >= 1) return 1.0;
  const double mean = static_cast<double>(n) * p;
  if (static_cast<double>(t) > mean) return SumUp(n, p, t);
  return std::max(0.0, 1.0 - SumDown(n, p, t - 1));
}

double BinomialLowerTail(uint64_t n, double p, uint64_t t) {
  if (t >= n) return 1.0;
  if (p <= 0) return 1.0;
  if (p >= 1) return 0.0;
  const double mean = static_cast<double>(n) * p;
  if (static_cast<double>(t) < mean) return SumDown(n, p, t);
  return std::max(0.0, 1.0 - SumUp(n, p, t + 1));
}

double PaperPx(uint64_t m, uint32_t k, uint64_t n, uint32_t theta) {
  if (n == 0) return 1.0;
  const double p1 = static_cast<double>(k) / static_cast<double>(m);
  double s = 0;
  for (uint64_t v = 0; v <= theta && v <= n; ++v) {
    const double lp = BinomialLogPmf(n, p1, v);
    if (lp != kNegInf) s += static_cast<double>(v) * std::exp(lp);
  }
  return 1.0 - static_cast<double>(m) / (static_cast<double>(n) * k) * s;
}

ModelPoint Evaluate(const FilterShape& s, uint32_t theta, uint32_t T) {
  ModelPoint r;
  r.theta = theta;
  r.T = T;
  r.p1 = static_cast<double>(s.k) / static_cast<double>(s.m);
  const Binarized b = Binarize(s, theta);
  r.P0 = b.P0;
  r.P1 = b.P1;
  r.px = b.px;
  r.py = b.P1;
  r.dx = s.k * r.px;
  r.dy = s.k * r.py;
  r.tpr = s.n == 0 ? 1.0 : BinomialUpperTail(s.k, r.px, T);
  r.fpr = BinomialUpperTail(s.k, r.py, T);
  r.acc = (r.tpr + 1.0 - r.fpr) / 2.0;
  return r;
}

void DotProductPmfs(const FilterShape& s, uint32_t theta, std::vector<double>* pmf_x,
                    std::vector<double>* pmf_y) {
  const Binarized b = Binarize(s, theta);
  pmf_x->assign(s.k + 1, 0.0);
  pmf_y->assign(s.k + 1, 0.0);
  for (uint32_t d = 0; d <= s.k; ++d) {
    const double lx = BinomialLogPmf(s.k, b.px, d);
    const double ly = BinomialLogPmf(s.k, b.P1, d);
    (*pmf_x)[d] = lx == kNegInf ? 0.0 : std::exp(lx);
    (*pmf_y)[d] = ly == kNegInf ? 0.0 : std::exp(ly);
  }
}

Tuning OptimizeT(const FilterShape& s, uint32_t theta, double l_tpr) {
  l_tpr = ClampLtpr(l_tpr);
  if (l_tpr >= 1.0) {
    // Guaranteed lossless only: Θ = 0 with T = k, or T = 0 for Θ >= 1.
    const uint32_t T = theta == 0 ? s.k : 0;
    const ModelPoint p = Evaluate(s, theta, T);
    Tuning t;
    t.theta = theta;
    t.T = T;
    t.tpr = 1.0;
    t.fpr = p.fpr;
    t.acc = (2.0 - p.fpr) / 2.0;
    t.lossless = true;
    return t;
  }
  return TuneTheta(s, theta, l_tpr, nullptr);
}

Tuning OptimizeThresholds(const FilterShape& s, double l_tpr, uint32_t max_theta) {
  l_tpr = ClampLtpr(l_tpr);
  if (l_tpr >= 1.0) return OptimizeT(s, 0, 1.0);
  uint64_t hi = max_theta;
  if (s.counter_max != 0) hi = std::min<uint64_t>(hi, s.counter_max - 1);
  hi = std::min<uint64_t>(hi, s.n);
  Tuning best;
  bool found = false;
  for (uint64_t theta = 0; theta <= hi; ++theta) {
    double P1 = 0;
    const Tuning t = TuneTheta(s, static_cast<uint32_t>(theta), l_tpr, &P1);
    if (!found || t.acc > best.acc) {
      best = t;
      found = true;
    }
    if (P1 <= 0) break;  // every larger Θ binarizes to the empty filter too
  }
  return best;
}

}  // namespace abf
}  // namespace dlcbf
