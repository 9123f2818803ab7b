// Fluid limit of d-left hashing with deletions: implementation.
//
// Design note (Bonomi, Mitzenmacher et al., ESA 2006, §2.3 and Table 1;
// Mitzenmacher and Vöcking, "The asymptotics of selecting the shortest of
// two, improved", 2003)
// ---------------------------------------------------------------------------
// State. x[i][k] = fraction of subtable i's B buckets holding >= k elements,
// x[i][0] = 1, i = 0 .. d-1 left to right. Time tau = steps / B.
//
// Insertion. The element's choices are one uniform bucket per subtable. It
// lands in subtable i on a bucket of load exactly k-1 iff that choice has
// load k-1, every choice to the left has load >= k (ties go left, so a left
// choice must be strictly fuller), and every choice to the right has load
// >= k-1:
//   P_ins(i,k) = (x[i][k-1] - x[i][k]) * prod_{j<i} x[j][k] * prod_{j>i} x[j][k-1].
// That event adds one bucket (1/B of a fraction) to "load >= k" of subtable
// i, and one insertion takes 1/B time, so dx[i][k]/dtau = P_ins(i,k).
// Summed over i and k the P_ins are 1 (every element lands somewhere).
//
// Deletion of a uniformly random one of the m elements. Subtable i holds
// k * B * (x[i][k] - x[i][k+1]) elements in buckets of load exactly k; one of
// them is chosen with probability that / m and turns such a bucket into
// load k-1, so per unit tau "load >= k" loses k (x[i][k] - x[i][k+1]) B / m.
//
//   insertion phase, tau in [0, m/B]:   dx[i][k]/dtau = P_ins(i,k)
//   churn phase (delete one, insert one per step, tau = steps / B):
//       dx[i][k]/dtau = P_ins(i,k) - k (x[i][k] - x[i][k+1]) / (m/B)
//
// Reported: load_ge[k] = (1/d) sum_i x[i][k], k = 0 .. max_load, with no
// capacity limit (x[i][max_load+1] = 0; mass lost there is reported).
// Integration: classical RK4, double precision, fixed step 1/64 in tau;
// values below 1e-290 are flushed to zero (no denormals).
//
// Numbers (d = 4, B = 2048, 2^20 churn steps = 512 tau after 24 tau of
// filling; an element lives m/B = 24 tau on average, one relaxation time,
// so 512 tau is ~21 of them. RK4 steps: 1,536 to fill, then churn until stationary
// (after 168 tau, 10,752 steps); about 8 ms of CPU):
//   m = 49152 (load 6, paper §5.1), load >= k for k = 1..9:
//     1.0000 0.99992 0.99905 0.99203 0.95047 0.76687 0.28940 0.0022717
//     1.6808e-27   -- Table 1's steady-state column (1.0000 0.9999 0.9990
//     0.9920 0.9505 0.7669 0.2894 0.0023 1.681e-27) to every printed digit.
//   per subtable, load >= 8: 8.9e-3, 1.6e-4, 7.2e-8, 2.4e-14 (the paper saw
//     no load-8 bucket in the fourth subtable in 10000 trials).
//   step 1/64 vs 1/1024: relative difference 4e-11 for k <= 9; 2^18 churn
//     steps already give the same 5 digits (steady state).
//   m = 53248 = 6.5 * 8192 (paper §5.2): load >= 9 = 2.2048e-08, the paper's
//     2.205e-08. The paper's text says 53428 elements, but that gives
//     5.4232e-08 (load 6.522); 53428 is a transposition of 53248.
//   d = 1: the Poisson(m/B) tail, exactly (insertion-only and churn).
// Overflow estimate (capacity L): an insertion overflows iff all d choices
//   have load >= L, probability prod_i x[i][L]; expected overflows per run
//   E = B * integral of it dtau. L = 8: m = 53248 -> E = 0.0311, 3.07% of
//   runs (paper: 254 of 10000 = 2.54%); m = 55296 (load 6.75) -> E = 66.8
//   potential overflows per run (paper: "between 40 to 100 times in each
//   trial", resolved by first-subtable moves).
// Finite-fingerprint effect (not part of this model, see tools/dlcbf_sim):
//   a dlCBF stores colliding fingerprints once, so its buckets hold
//   F ~ m - m^2 / (2 B 2^r) = 49116 cells at m = 49152, r = 14; the fluid
//   limit at 49116 gives 0.9501 0.7654 0.2870 0.0022 for k = 5..8, which is
//   the paper's simulation column (0.9502 0.7655 0.2868 0.0022).
#include "dlcbf/model/dleft_fluid_limit.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

namespace dlcbf {

namespace {

// Values below this are flushed to zero after every RK4 step so the deep
// tail (load >= 10 at load 6 is ~1e-360 in exact arithmetic) never runs
// through denormal arithmetic.
constexpr double kFlushToZero = 1e-290;
// Relative-rate check of converge_tol only looks at entries above this.
constexpr double kConvergeFloor = 1e-280;
// Relative rate (per unit tau) below which the churn phase is stationary.
constexpr double kStationary = 1e-14;

class FluidModel {
 public:
  FluidModel(uint32_t d, uint32_t K, double inv_load, uint32_t capacity)
      : d_(d), K_(K), stride_(K + 2), inv_load_(inv_load), capacity_(capacity),
        pre_(d), suf_(d) {}

  // State layout: x[i * stride + k] for k = 0 .. K + 1 (x[i][0] = 1 and
  // x[i][K + 1] = 0 are constants), then two accumulators:
  //   [acc + 0] overflow integral  integral of prod_i x[i][capacity] dtau
  //   [acc + 1] truncated mass     integral of sum_i P_ins(i, K + 1) dtau
  size_t size() const { return static_cast<size_t>(d_) * stride_ + 2; }
  size_t acc() const { return static_cast<size_t>(d_) * stride_; }
  size_t idx(uint32_t i, uint32_t k) const {
    return static_cast<size_t>(i) * stride_ + k;
  }

  // dy/dtau at y. churn selects the churn-phase equations.
  void Deriv(const std::vector<double>& y, bool churn, std::vector<double>* dy) {
    std::fill(dy->begin(), dy->end(), 0.0);
    // Levels above the first k with x[i][k-1] == 0 for every i are empty and
    // receive nothing (loads grow one at a time): skip them. At load 6 this
    // leaves k <= 10 of the 21 levels.
    uint32_t top = 1;
    while (top <= K_ + 1) {
      bool any = false;
      for (uint32_t i = 0; i < d_ && !any; ++i) any = y[idx(i, top - 1)] != 0.0;
      if (!any) break;
      ++top;
    }
    double lost = 0;
    for (uint32_t k = 1; k < top; ++k) {
      // pre_[i] = prod_{j<i} x[j][k]; suf_[i] = prod_{j>i} x[j][k-1].
      double p = 1.0;
      for (uint32_t i = 0; i < d_; ++i) {
        pre_[i] = p;
        p *= y[idx(i, k)];
      }
      double s = 1.0;
      for (uint32_t i = d_; i-- > 0;) {
        suf_[i] = s;
        s *= y[idx(i, k - 1)];
      }
      for (uint32_t i = 0; i < d_; ++i) {
        double ins = (y[idx(i, k - 1)] - y[idx(i, k)]) * pre_[i] * suf_[i];
        if (k == K_ + 1) {
          lost += ins;  // would create a load above K: not modelled
        } else {
          (*dy)[idx(i, k)] += ins;
        }
      }
    }
    if (churn) {
      for (uint32_t i = 0; i < d_; ++i) {
        for (uint32_t k = 1; k <= K_ && k < top; ++k) {
          (*dy)[idx(i, k)] -=
              k * (y[idx(i, k)] - y[idx(i, k + 1)]) * inv_load_;
        }
      }
    }
    if (capacity_ > 0) {
      double full = 1.0;
      for (uint32_t i = 0; i < d_; ++i) full *= y[idx(i, capacity_)];
      (*dy)[acc()] = full;
    }
    (*dy)[acc() + 1] = lost;
  }

  void Rk4Step(std::vector<double>* y, double h, bool churn) {
    const size_t n = y->size();
    k1_.resize(n);
    k2_.resize(n);
    k3_.resize(n);
    k4_.resize(n);
    tmp_.resize(n);
    Deriv(*y, churn, &k1_);
    for (size_t j = 0; j < n; ++j) tmp_[j] = (*y)[j] + 0.5 * h * k1_[j];
    Deriv(tmp_, churn, &k2_);
    for (size_t j = 0; j < n; ++j) tmp_[j] = (*y)[j] + 0.5 * h * k2_[j];
    Deriv(tmp_, churn, &k3_);
    for (size_t j = 0; j < n; ++j) tmp_[j] = (*y)[j] + h * k3_[j];
    Deriv(tmp_, churn, &k4_);
    for (size_t j = 0; j < n; ++j) {
      (*y)[j] += h / 6.0 * (k1_[j] + 2.0 * k2_[j] + 2.0 * k3_[j] + k4_[j]);
    }
    for (uint32_t i = 0; i < d_; ++i) {
      for (uint32_t k = 1; k <= K_; ++k) {
        double& v = (*y)[idx(i, k)];
        if (std::fabs(v) < kFlushToZero) v = 0.0;
      }
    }
  }

  // Integrates from tau = 0 over `duration`, in steps of at most h.
  void Run(std::vector<double>* y, double duration, double h, bool churn) {
    if (duration <= 0) return;
    const double steps = std::ceil(duration / h);
    const uint64_t n = static_cast<uint64_t>(steps);
    const double hh = duration / steps;  // equal steps ending exactly there
    for (uint64_t s = 0; s < n; ++s) Rk4Step(y, hh, churn);
  }

  // Advances only the accumulators by `duration` at the current rates.
  void AdvanceAccumulators(std::vector<double>* y, double duration) {
    k1_.resize(y->size());
    Deriv(*y, /*churn=*/true, &k1_);
    (*y)[acc()] += duration * k1_[acc()];
    (*y)[acc() + 1] += duration * k1_[acc() + 1];
  }

  // max_{i,k} |dx[i][k]/dtau| / x[i][k] over entries above kConvergeFloor.
  double MaxRelativeRate(const std::vector<double>& y) {
    k1_.resize(y.size());
    Deriv(y, /*churn=*/true, &k1_);
    double worst = 0;
    for (uint32_t i = 0; i < d_; ++i) {
      for (uint32_t k = 1; k <= K_; ++k) {
        double v = y[idx(i, k)];
        if (v > kConvergeFloor) worst = std::max(worst, std::fabs(k1_[idx(i, k)]) / v);
      }
    }
    return worst;
  }

 private:
  uint32_t d_, K_, stride_;
  double inv_load_;  // B / m
  uint32_t capacity_;
  std::vector<double> pre_, suf_;
  std::vector<double> k1_, k2_, k3_, k4_, tmp_;
};

Status Invalid(const std::string& what) {
  return Status::InvalidArgument("FluidLimitParams", what);
}

}  // namespace

Status FluidLimitParams::Validate() const {
  if (d < 1 || d > 64) return Invalid("d must be in [1, 64]");
  if (buckets_per_subtable < 1) return Invalid("buckets_per_subtable must be >= 1");
  if (elements < 1) return Invalid("elements must be >= 1");
  if (max_load < 1 || max_load > 1000) return Invalid("max_load must be in [1, 1000]");
  if (!(tau_step > 0 && tau_step <= 1)) return Invalid("tau_step must be in (0, 1]");
  if (!(converge_tol >= 0)) return Invalid("converge_tol must be >= 0");
  if (capacity >= max_load) return Invalid("capacity must be < max_load (0 = none)");
  // Bound the work: total ODE time / tau_step RK4 steps.
  const double tau = (static_cast<double>(elements) + static_cast<double>(churn_steps)) /
                     static_cast<double>(buckets_per_subtable);
  if (tau / tau_step > 1e9) {
    return Invalid("(elements + churn_steps) / buckets_per_subtable / tau_step must be <= 1e9");
  }
  return Status::OK();
}

Status ComputeFluidLimit(const FluidLimitParams& p, FluidLimitResult* out) {
  Status s = p.Validate();
  if (!s.ok()) return s;

  const double B = static_cast<double>(p.buckets_per_subtable);
  const double load = static_cast<double>(p.elements) / B;  // m / B
  FluidModel model(p.d, p.max_load, 1.0 / load, p.capacity);
  std::vector<double> y(model.size(), 0.0);
  for (uint32_t i = 0; i < p.d; ++i) y[model.idx(i, 0)] = 1.0;

  // Phase 1: insertion only, tau in [0, m / B].
  model.Run(&y, load, p.tau_step, /*churn=*/false);
  // Phase 2: churn, tau = steps / B, in chunks of one relaxation time
  // (m / B). Once the state is stationary (every relative rate below
  // kStationary; transients decay at rate >= B/m, so what is left to change
  // is below kStationary * m / B relative) the rest of the interval cannot
  // move it in double precision: the accumulators, whose rates are then
  // constant, are advanced analytically. This keeps long churn runs (small B,
  // many steps) cheap; the paper's 512 tau stop after 168.
  const double churn_tau = static_cast<double>(p.churn_steps) / B;
  const double chunk = std::max(load, 1.0);
  for (double done = 0; done < churn_tau;) {
    const double len = std::min(chunk, churn_tau - done);
    model.Run(&y, len, p.tau_step, /*churn=*/true);
    done += len;
    if (done < churn_tau && model.MaxRelativeRate(y) < kStationary) {
      model.AdvanceAccumulators(&y, churn_tau - done);
      break;
    }
  }
  double churn_run = churn_tau;

  bool converged = false;
  if (p.converge_tol > 0) {
    // Continue in chunks of one relaxation time (m / B) until stationary.
    const double cap = 1e4 * load;
    while (true) {
      if (model.MaxRelativeRate(y) < p.converge_tol) {
        converged = true;
        break;
      }
      if (churn_run >= cap) break;
      model.Run(&y, load, p.tau_step, /*churn=*/true);
      churn_run += load;
    }
  }

  FluidLimitResult r;
  r.subtable_load_ge.assign(p.d, std::vector<double>(p.max_load + 1, 0.0));
  r.load_ge.assign(p.max_load + 1, 0.0);
  for (uint32_t i = 0; i < p.d; ++i) {
    for (uint32_t k = 0; k <= p.max_load; ++k) {
      const double v = std::max(0.0, y[model.idx(i, k)]);
      r.subtable_load_ge[i][k] = v;
      r.load_ge[k] += v / p.d;
    }
  }
  r.tau_end = load + churn_run;
  r.churn_steps_run = churn_run * B;
  r.converged = converged;
  for (uint32_t k = 1; k <= p.max_load; ++k) r.mean_load += r.load_ge[k];
  r.truncated_mass = y[model.acc() + 1] / p.d;
  if (p.capacity > 0) {
    r.expected_overflows = B * y[model.acc()];
    r.overflow_probability = -std::expm1(-r.expected_overflows);
  }
  *out = std::move(r);
  return Status::OK();
}

std::vector<double> FluidLimitLoadGe(const FluidLimitParams& params) {
  FluidLimitResult r;
  if (!ComputeFluidLimit(params, &r).ok()) return {};
  return r.load_ge;
}

}  // namespace dlcbf
