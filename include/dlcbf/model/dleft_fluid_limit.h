// Fluid limit (mean-field ODE) of d-left hashing with deletions.
//
// What it is
//   The deterministic limit, as the number of buckets grows with the load per
//   bucket fixed, of the bucket-load distribution of a d-left hash table
//   (Vöcking's scheme: d subtables of B buckets, one uniform choice per
//   subtable, place in the least loaded choice, ties to the left). It models
//   the experiment of Bonomi et al., ESA 2006, §2.3 and §5.1: insert m
//   elements into an empty table, then repeat "delete a uniformly random
//   element, insert a new one" for a number of steps. The derivation, the
//   equations and reference numbers are in filter_policy/dleft_fluid_limit.cc.
//
// Why it exists
//   It predicts, without simulation, the fraction of buckets with load >= k
//   (paper Table 1, "Steady State" column), hence how rarely a bucket of L
//   cells overflows (paper §5.2), which is how a dlCBF is sized. The
//   paper-reproduction tool tools/dlcbf_sim prints it next to simulated
//   results.
//
// Cost: O(d * max_load) per RK4 stage; the paper's setting (d = 4,
// B = 2048, m = 49152, 2^20 churn steps, step 1/64) takes about 12k steps
// (the churn stops early once stationary), about 8 ms of CPU.
#pragma once

#include <cstdint>
#include <vector>

#include "dlcbf/core/status.h"

namespace dlcbf {

struct FluidLimitParams {
  // Number of subtables (choices), d in [1, 64].
  uint32_t d = 4;
  // Buckets per subtable, B >= 1. Only m / B matters in the limit, and B
  // converts churn steps to ODE time (tau = steps / B).
  uint64_t buckets_per_subtable = 2048;
  // Elements m >= 1 held in the table during the churn phase (all subtables
  // together). Average load per bucket is m / (d * B).
  uint64_t elements = 49152;
  // Churn steps (one random deletion followed by one insertion each) after
  // the insertion phase. 0 = insertion only. Integration stops early once
  // the state is stationary to ~1e-14 relative (the result is the same to
  // double precision), so huge values are cheap.
  uint64_t churn_steps = uint64_t{1} << 20;
  // Loads tracked: k = 0 .. max_load, in [1, 1000]. The table has no
  // capacity limit in the model; load_ge[max_load + 1] is taken as 0, so
  // choose max_load well above the loads of interest (mass lost at the top
  // is reported in FluidLimitResult::truncated_mass).
  uint32_t max_load = 20;
  // RK4 step in ODE time units (tau), in (0, 1]. The fastest rate in the
  // system is about max(1, max_load * B / m), so 1/64 is far inside RK4's
  // stability region for any sensible load.
  double tau_step = 1.0 / 64;
  // When > 0, the churn phase continues after churn_steps until
  // max_{i,k} |dx[i][k]/dtau| / x[i][k] < converge_tol (over the x[i][k] >
  // 1e-280) or 10^4 * m / B time units have elapsed; FluidLimitResult::
  // converged tells which. 0 = run exactly churn_steps.
  double converge_tol = 0;
  // Cells per bucket L for the overflow estimate, 0 = none. Must be
  // < max_load. See FluidLimitResult::expected_overflows.
  uint32_t capacity = 0;

  // OK, or InvalidArgument naming the offending field.
  Status Validate() const;
};

struct FluidLimitResult {
  // load_ge[k] = (1/d) * sum_i x[i][k]: fraction of all buckets with load
  // >= k, k = 0 .. max_load (load_ge[0] = 1).
  std::vector<double> load_ge;
  // subtable_load_ge[i][k] = x[i][k], the same per subtable.
  std::vector<std::vector<double>> subtable_load_ge;
  // ODE time at the end: m / B (insertion) + churn time.
  double tau_end = 0;
  // Churn steps actually modelled (>= churn_steps when converge_tol > 0).
  double churn_steps_run = 0;
  bool converged = false;  // only meaningful when converge_tol > 0
  // Mean load per bucket, sum_{k>=1} load_ge[k]; equals m / (d * B) up to
  // integration error and truncated_mass.
  double mean_load = 0;
  // Elements per bucket lost because they would have made a load above
  // max_load (should be ~0).
  double truncated_mass = 0;
  // With capacity L > 0: expected number of insertions over the whole run
  // (insertion and churn phases) that find all d choices at load >= L, i.e.
  // B * integral of prod_i x[i][L] dtau, and 1 - exp(-that), the Poisson
  // estimate of the probability that a run sees at least one overflow with
  // Relocation::kNone (paper §5.2). 0 when capacity == 0.
  double expected_overflows = 0;
  double overflow_probability = 0;
};

// Integrates the ODE with classical RK4 in double precision. Returns
// InvalidArgument (from params.Validate()) and leaves *out untouched for bad
// parameters.
Status ComputeFluidLimit(const FluidLimitParams& params,
                                  FluidLimitResult* out);

// Convenience: FluidLimitResult::load_ge, or an empty vector when
// params.Validate() fails.
std::vector<double> FluidLimitLoadGe(const FluidLimitParams& params);

}  // namespace dlcbf
