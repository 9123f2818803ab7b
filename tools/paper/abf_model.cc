// abf_model: reproduces Figs. 2-4 of Kleyko et al., "Autoscaling Bloom
// filter" (2019) with the analytic model (include/dlcbf/abf_model.h) and
// Monte-Carlo runs of this project's CountingBloomFilter, side by side.
//
//   Fig. 2  m = 10,000, k = 100, n = 500, Θ = 0..5, L_TPR = 0.97:
//           optimal T (eq. 21), TPR, FPR, ACC; model vs simulation.
//   Fig. 3  same filter, ACC vs Θ = 0..20 with T optimized, no TPR limit.
//   Fig. 4  m = 10,000, n = 50..5000 step 50: ABF (k = 100, (Θ,T) by eq. 22
//           at L_TPR = 0.9), optimized BF (k = round((m/n) ln 2), rebuilt
//           whenever k changes), non-optimized BF (k = 100), retouched BF
//           (0.1 % of the non-optimized BF's set bits cleared at random).
//
// Usage: abf_model [--json] [--trials=N] [--fig4_trials=N] [--queries=N]
//                  [--out_dir=DIR] [--plots=false] [--figs=2,3,4]
// Text tables (or one JSON object with --json) go to stdout; progress and
// plot locations go to stderr. PNGs are written with gnuplot when present.
#include <gflags/gflags.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "dlcbf/model/abf_model.h"
#include "dlcbf/core/counting_bloom_filter.h"

DEFINE_bool(json, false, "print one JSON object instead of text tables");
DEFINE_int32(trials, 40, "Monte-Carlo filters per point for Figs. 2 and 3");
DEFINE_int32(fig4_trials, 3, "Monte-Carlo repetitions of the whole Fig. 4 sweep");
DEFINE_int32(queries, 10000, "fresh (never inserted) keys per filter for the FPR");
DEFINE_string(out_dir, "out/abf_model", "directory for .dat files and PNG plots");
DEFINE_bool(plots, true, "write PNG plots with gnuplot when it is installed");
DEFINE_string(figs, "2,3,4", "which figures to compute");
DEFINE_uint64(seed, 20190101, "random seed for keys");

namespace {

using dlcbf::CountingBloomFilter;
using dlcbf::CountingBloomOptions;
namespace abf = dlcbf::abf;

constexpr uint64_t kM = 10000;
constexpr uint32_t kK = 100;
constexpr uint64_t kFig2N = 500;
constexpr double kFig2Ltpr = 0.97;
constexpr double kFig4Ltpr = 0.9;
constexpr uint32_t kCounterBits = 8;  // λ = 50 at n = 5000 needs w >= 7
constexpr uint32_t kCounterMax = (1u << kCounterBits) - 1;

bool Want(int fig) {
  return FLAGS_figs.find(std::to_string(fig)) != std::string::npos;
}

std::unique_ptr<CountingBloomFilter> MakeCbf(uint64_t m, uint32_t k, uint64_t seed) {
  CountingBloomOptions o;
  o.num_counters = m;
  o.num_probes = k;
  o.counter_bits = kCounterBits;
  o.seed = seed;
  std::unique_ptr<CountingBloomFilter> f;
  dlcbf::Status s = CountingBloomFilter::Create(o, &f);
  if (!s.ok()) {
    std::fprintf(stderr, "CountingBloomFilter::Create: %s\n", s.ToString().c_str());
    std::exit(1);
  }
  return f;
}

// Random 8-byte keys; stored and fresh keys come from one stream, so they
// are distinct with probability 1 - 2^-50.
struct Keys {
  std::vector<std::string> v;
  void Fill(std::mt19937_64* rng, size_t n) {
    v.resize(n);
    for (auto& s : v) {
      const uint64_t x = (*rng)();
      s.assign(reinterpret_cast<const char*>(&x), sizeof(x));
    }
  }
};

// The counters at a key's k positions.
void CountersOf(const CountingBloomFilter& f, uint64_t hash, std::vector<uint64_t>* pos,
                std::vector<uint32_t>* out) {
  pos->resize(f.num_probes());
  out->resize(f.num_probes());
  f.Positions(hash, pos->data());
  for (uint32_t i = 0; i < f.num_probes(); ++i) (*out)[i] = f.CounterAt((*pos)[i]);
}

uint32_t Dot(const std::vector<uint32_t>& c, uint32_t theta) {
  uint32_t d = 0;
  for (uint32_t v : c) d += v > theta ? 1 : 0;
  return d;
}

struct Rates {
  double tpr = 0, fpr = 0;
  double acc() const { return (tpr + 1.0 - fpr) / 2.0; }
};

std::string Num(double v) {
  char b[64];
  std::snprintf(b, sizeof(b), "%.6g", v);
  return b;
}

// ---------------------------------------------------------------- Figs 2, 3
struct Fig23 {
  static constexpr uint32_t kThetaMax = 20;
  abf::FilterShape shape;
  std::vector<abf::Tuning> fig2;  // Θ = 0..5 at L_TPR = 0.97
  std::vector<abf::Tuning> fig3;  // Θ = 0..20, no TPR limit
  std::vector<Rates> sim2, sim3;
  // Simulated dot-product histograms per Θ (Fig. 2 panels).
  std::vector<std::vector<double>> hist_x, hist_y;
};

Fig23 RunFig23(std::mt19937_64* rng) {
  Fig23 r;
  r.shape.m = kM;
  r.shape.k = kK;
  r.shape.n = kFig2N;
  r.shape.counter_max = kCounterMax;
  for (uint32_t th = 0; th <= 5; ++th) r.fig2.push_back(abf::OptimizeT(r.shape, th, kFig2Ltpr));
  for (uint32_t th = 0; th <= Fig23::kThetaMax; ++th) {
    r.fig3.push_back(abf::OptimizeT(r.shape, th, 0.0));
  }
  // Monte-Carlo: one dot product per (key, Θ) from the real filter.
  const uint32_t nth = Fig23::kThetaMax + 1;
  std::vector<uint64_t> tp2(6, 0), fp2(6, 0), tp3(nth, 0), fp3(nth, 0);
  r.hist_x.assign(6, std::vector<double>(kK + 1, 0));
  r.hist_y.assign(6, std::vector<double>(kK + 1, 0));
  uint64_t stored_total = 0, fresh_total = 0;
  std::vector<uint64_t> pos;
  std::vector<uint32_t> cnt;
  for (int t = 0; t < FLAGS_trials; ++t) {
    auto f = MakeCbf(kM, kK, (*rng)());
    Keys stored, fresh;
    stored.Fill(rng, kFig2N);
    fresh.Fill(rng, static_cast<size_t>(FLAGS_queries));
    for (const auto& k : stored.v) (void)f->Insert(k);  // result not needed here
    auto tally = [&](const std::string& key, bool member) {
      CountersOf(*f, f->Hash(key), &pos, &cnt);
      for (uint32_t th = 0; th < nth; ++th) {
        const uint32_t d = Dot(cnt, th);
        if (th <= 5) {
          (member ? r.hist_x : r.hist_y)[th][d] += 1;
          if (d >= r.fig2[th].T) ++(member ? tp2 : fp2)[th];
        }
        if (d >= r.fig3[th].T) ++(member ? tp3 : fp3)[th];
      }
    };
    for (const auto& k : stored.v) tally(k, true);
    for (const auto& k : fresh.v) tally(k, false);
    stored_total += stored.v.size();
    fresh_total += fresh.v.size();
    if ((t + 1) % 10 == 0) {
      std::fprintf(stderr, "fig2/3: %d/%d filters\n", t + 1, FLAGS_trials);
    }
  }
  for (uint32_t th = 0; th < nth; ++th) {
    Rates x{static_cast<double>(tp3[th]) / stored_total,
            static_cast<double>(fp3[th]) / fresh_total};
    r.sim3.push_back(x);
    if (th <= 5) {
      r.sim2.push_back(Rates{static_cast<double>(tp2[th]) / stored_total,
                             static_cast<double>(fp2[th]) / fresh_total});
      for (auto& v : r.hist_x[th]) v /= stored_total;
      for (auto& v : r.hist_y[th]) v /= fresh_total;
    }
  }
  return r;
}

// -------------------------------------------------------------------- Fig 4
struct Fig4Row {
  uint64_t n = 0;
  uint32_t theta = 0, T = 0, k_opt = 0;
  Rates abf, bf_opt, bf_fixed, rbf;           // simulation (mean of trials)
  Rates m_abf, m_bf_opt, m_bf_fixed, m_rbf;   // model (RBF: approximation)
};

struct Fig4 {
  std::vector<Fig4Row> rows;
  uint32_t builds = 0;  // times the optimized BF was built (first + rebuilds)
  uint32_t k_min = 0, k_max = 0;
};

Fig4 RunFig4(std::mt19937_64* rng) {
  Fig4 out;
  std::vector<uint64_t> ns;
  for (uint64_t n = 50; n <= 5000; n += 50) ns.push_back(n);
  out.rows.resize(ns.size());
  // Model side and the k schedule of the optimized BF.
  uint32_t prev_k = 0;
  out.k_min = UINT32_MAX;
  for (size_t i = 0; i < ns.size(); ++i) {
    Fig4Row& row = out.rows[i];
    row.n = ns[i];
    abf::FilterShape s{kM, kK, ns[i], kCounterMax};
    const abf::Tuning t = abf::OptimizeThresholds(s, kFig4Ltpr);
    row.theta = t.theta;
    row.T = t.T;
    row.m_abf = Rates{t.tpr, t.fpr};
    const abf::ModelPoint fixed = abf::Evaluate(s, 0, kK);
    row.m_bf_fixed = Rates{fixed.tpr, fixed.fpr};
    row.k_opt = dlcbf::OptimalNumProbes(kM, ns[i]);
    if (row.k_opt != prev_k) ++out.builds;
    prev_k = row.k_opt;
    out.k_min = std::min(out.k_min, row.k_opt);
    out.k_max = std::max(out.k_max, row.k_opt);
    abf::FilterShape so{kM, row.k_opt, ns[i], 0};
    const abf::ModelPoint opt = abf::Evaluate(so, 0, row.k_opt);
    row.m_bf_opt = Rates{opt.tpr, opt.fpr};
    // RBF approximation: e = round(0.001 * ones) of the m P_1 ones cleared;
    // a stored key survives if none of its k positions was cleared.
    const double ones = kM * fixed.P1;
    const double e = std::round(0.001 * ones);
    row.m_rbf = Rates{ones > 0 ? std::pow(1.0 - e / ones, kK) : 1.0,
                      std::pow((ones - e) / kM, kK)};
  }
  // Monte-Carlo sweeps: the key set grows by 50 per step, like the paper.
  const int trials = std::max(1, FLAGS_fig4_trials);
  std::vector<uint64_t> pos;
  std::vector<uint32_t> cnt;
  for (int t = 0; t < trials; ++t) {
    auto cbf = MakeCbf(kM, kK, (*rng)());  // ABF and non-optimized BF
    std::unique_ptr<CountingBloomFilter> opt;
    uint32_t opt_k = 0;
    Keys stored;
    stored.Fill(rng, ns.back());
    Keys fresh;
    fresh.Fill(rng, static_cast<size_t>(FLAGS_queries));
    std::vector<uint8_t> rbf_bits(kM);
    std::vector<uint64_t> set_positions;
    uint64_t inserted = 0;
    for (size_t i = 0; i < ns.size(); ++i) {
      Fig4Row& row = out.rows[i];
      for (; inserted < row.n; ++inserted) (void)cbf->Insert(stored.v[inserted]);  // result not needed here
      if (row.k_opt != opt_k) {  // rebuild with the new k
        opt = MakeCbf(kM, row.k_opt, (*rng)());
        opt_k = row.k_opt;
        for (uint64_t j = 0; j < row.n; ++j) (void)opt->Insert(stored.v[j]);  // result not needed here
      } else {
        for (uint64_t j = row.n - 50; j < row.n; ++j) (void)opt->Insert(stored.v[j]);  // result not needed here
      }
      // Retouched BF: the non-optimized BF's bits with 0.1 % of the ones
      // cleared uniformly at random.
      set_positions.clear();
      for (uint64_t p = 0; p < kM; ++p) {
        rbf_bits[p] = cbf->CounterAt(p) > 0;
        if (rbf_bits[p]) set_positions.push_back(p);
      }
      const size_t erase = static_cast<size_t>(std::llround(0.001 * set_positions.size()));
      for (size_t j = 0; j < erase; ++j) {  // partial Fisher-Yates
        std::uniform_int_distribution<size_t> pick(j, set_positions.size() - 1);
        std::swap(set_positions[j], set_positions[pick(*rng)]);
        rbf_bits[set_positions[j]] = 0;
      }
      uint64_t tp[4] = {0, 0, 0, 0}, fp[4] = {0, 0, 0, 0};
      auto tally = [&](const std::string& key, uint64_t* hits) {
        CountersOf(*cbf, cbf->Hash(key), &pos, &cnt);
        if (Dot(cnt, row.theta) >= row.T) ++hits[0];
        if (Dot(cnt, 0) == kK) ++hits[2];
        bool all = true;
        for (uint64_t p : pos) all = all && rbf_bits[p];
        if (all) ++hits[3];
        if (opt->Contains(key)) ++hits[1];
      };
      for (uint64_t j = 0; j < row.n; ++j) tally(stored.v[j], tp);
      for (const auto& key : fresh.v) tally(key, fp);
      Rates* sims[4] = {&row.abf, &row.bf_opt, &row.bf_fixed, &row.rbf};
      for (int f = 0; f < 4; ++f) {
        sims[f]->tpr += static_cast<double>(tp[f]) / row.n / trials;
        sims[f]->fpr += static_cast<double>(fp[f]) / fresh.v.size() / trials;
      }
      if ((i + 1) % 20 == 0) {
        std::fprintf(stderr, "fig4: trial %d/%d, n = %llu/5000\n", t + 1, trials,
                     static_cast<unsigned long long>(row.n));
      }
    }
  }
  return out;
}

// ------------------------------------------------------------------ output
std::string RatesJson(const Rates& sim, const Rates& model) {
  return "{\"tpr\":" + Num(sim.tpr) + ",\"fpr\":" + Num(sim.fpr) + ",\"acc\":" + Num(sim.acc()) +
         ",\"model_tpr\":" + Num(model.tpr) + ",\"model_fpr\":" + Num(model.fpr) +
         ",\"model_acc\":" + Num(model.acc()) + "}";
}

void WriteData(const std::string& dir, const Fig23* f23, const Fig4* f4) {
  if (f23 != nullptr) {
    std::ofstream p(dir + "/fig2_pmf.dat");
    p << "# d  then for theta=0..5: model_x model_y sim_x sim_y\n";
    std::vector<std::vector<double>> mx(6), my(6);
    for (uint32_t th = 0; th <= 5; ++th) abf::DotProductPmfs(f23->shape, th, &mx[th], &my[th]);
    for (uint32_t d = 0; d <= kK; ++d) {
      p << d;
      for (uint32_t th = 0; th <= 5; ++th) {
        p << ' ' << mx[th][d] << ' ' << my[th][d] << ' ' << f23->hist_x[th][d] << ' '
          << f23->hist_y[th][d];
      }
      p << '\n';
    }
    std::ofstream t(dir + "/fig2_T.dat");
    for (uint32_t th = 0; th <= 5; ++th) t << th << ' ' << f23->fig2[th].T << '\n';
    std::ofstream a(dir + "/fig3.dat");
    a << "# theta T model_acc sim_acc\n";
    for (uint32_t th = 0; th < f23->fig3.size(); ++th) {
      a << th << ' ' << f23->fig3[th].T << ' ' << f23->fig3[th].acc << ' ' << f23->sim3[th].acc()
        << '\n';
    }
  }
  if (f4 != nullptr) {
    std::ofstream p(dir + "/fig4.dat");
    p << "# n  abf(tpr fpr acc)  bf_opt(...)  bf_fixed(...)  rbf(...)  [simulation]\n";
    for (const auto& r : f4->rows) {
      p << r.n;
      for (const Rates* x : {&r.abf, &r.bf_opt, &r.bf_fixed, &r.rbf}) {
        p << ' ' << x->tpr << ' ' << x->fpr << ' ' << x->acc();
      }
      p << '\n';
    }
  }
}

// Returns the PNG paths written (empty if gnuplot is unavailable).
std::vector<std::string> Plot(const std::string& dir, bool f23, bool f4) {
  std::vector<std::string> pngs;
  if (std::system("command -v gnuplot >/dev/null 2>&1") != 0) return pngs;
  const std::string gp = dir + "/plots.gp";
  std::ofstream s(gp);
  s << "set terminal pngcairo size 1500,900 noenhanced\n"
       "set datafile commentschars '#'\n";
  if (f23) {
    s << "set output '" << dir << "/fig2.png'\n"
      << "set multiplot layout 2,3 title 'Fig. 2: PMFs of X (stored) and Y (absent); m=10000 "
         "k=100 n=500; lines = model, points = simulation; bar = optimal T (L_TPR=0.97)'\n"
      << "set xrange [0:100]; set xlabel 'dot product d'; set ylabel 'probability'\n";
    for (int th = 0; th <= 5; ++th) {
      const int c = 2 + 4 * th;
      s << "set title 'Theta = " << th << "'\n"
        << "plot '" << dir << "/fig2_pmf.dat' u 1:" << c << " w l lw 2 t 'X model', '' u 1:"
        << c + 1 << " w l lw 2 t 'Y model', '' u 1:" << c + 2 << " w p pt 6 t 'X sim', '' u 1:"
        << c + 3 << " w p pt 12 t 'Y sim', '" << dir << "/fig2_T.dat' u ($1==" << th
        << "?$2:1/0):(0):(0):(0.3) w vectors nohead lw 3 lc rgb 'black' t 'T'\n";
    }
    s << "unset multiplot\nunset xrange\n";
    s << "set terminal pngcairo size 800,600 noenhanced\n"
      << "set output '" << dir << "/fig3.png'\n"
      << "set title 'Fig. 3: best ACC vs Theta (T optimized, no TPR limit)'\n"
      << "set xlabel 'Theta'; set ylabel 'ACC'; set xrange [0:20]; set yrange [0.45:1]\n"
      << "plot '" << dir << "/fig3.dat' u 1:3 w lp lw 2 t 'model', '' u 1:4 w p pt 7 t 'simulation'\n"
      << "unset xrange; unset yrange\n";
    pngs.push_back(dir + "/fig2.png");
    pngs.push_back(dir + "/fig3.png");
  }
  if (f4) {
    s << "set terminal pngcairo size 1500,500 noenhanced\n"
      << "set output '" << dir << "/fig4.png'\n"
      << "set multiplot layout 1,3 title 'Fig. 4: m=10000, n=50..5000 (simulation)'\n"
      << "set xlabel 'n'; set ylabel 'rate'; set xtics 1000; set yrange [0:1.02]\n";
    const char* names[3] = {"TPR", "FPR", "ACC"};
    for (int metric = 0; metric < 3; ++metric) {
      const int c = 2 + metric;
      s << "set title '" << names[metric] << "'\n"
        << "plot '" << dir << "/fig4.dat' u 1:" << c << " w l lw 2 dt 4 t 'ABF', '' u 1:" << c + 3
        << " w l lw 2 t 'optimized BF', '' u 1:" << c + 6
        << " w l lw 2 dt 2 t 'non-optimized BF', '' u 1:" << c + 9
        << " w l lw 2 dt 3 t 'non-optimized RBF'\n";
    }
    s << "unset multiplot\n";
    pngs.push_back(dir + "/fig4.png");
  }
  s.close();
  if (std::system(("gnuplot '" + gp + "'").c_str()) != 0) {
    std::fprintf(stderr, "gnuplot failed on %s\n", gp.c_str());
    pngs.clear();
  }
  return pngs;
}

}  // namespace

int main(int argc, char** argv) {
  gflags::SetUsageMessage("Reproduce Figs. 2-4 of the autoscaling Bloom filter paper");
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  if (FLAGS_trials < 1 || FLAGS_queries < 1) {
    std::fprintf(stderr, "--trials and --queries must be >= 1\n");
    return 2;
  }
  std::mt19937_64 rng(FLAGS_seed);
  std::unique_ptr<Fig23> f23;
  std::unique_ptr<Fig4> f4;
  if (Want(2) || Want(3)) f23.reset(new Fig23(RunFig23(&rng)));
  if (Want(4)) f4.reset(new Fig4(RunFig4(&rng)));

  std::vector<std::string> pngs;
  if (FLAGS_plots) {
    if (std::system(("mkdir -p '" + FLAGS_out_dir + "'").c_str()) == 0) {
      WriteData(FLAGS_out_dir, f23.get(), f4.get());
      pngs = Plot(FLAGS_out_dir, f23 != nullptr, f4 != nullptr);
    } else {
      std::fprintf(stderr, "cannot create %s; no plots\n", FLAGS_out_dir.c_str());
    }
  }

  if (FLAGS_json) {
    std::string j = "{";
    if (f23) {
      j += "\"fig2\":[";
      for (uint32_t th = 0; th <= 5; ++th) {
        const auto& t = f23->fig2[th];
        j += std::string(th ? "," : "") + "{\"theta\":" + std::to_string(th) +
             ",\"T\":" + std::to_string(t.T) + ",\"tpr\":" + Num(t.tpr) + ",\"fpr\":" + Num(t.fpr) +
             ",\"acc\":" + Num(t.acc) + ",\"sim_tpr\":" + Num(f23->sim2[th].tpr) +
             ",\"sim_fpr\":" + Num(f23->sim2[th].fpr) + "}";
      }
      j += "],\"fig3\":[";
      for (uint32_t th = 0; th < f23->fig3.size(); ++th) {
        const auto& t = f23->fig3[th];
        j += std::string(th ? "," : "") + "{\"theta\":" + std::to_string(th) +
             ",\"T\":" + std::to_string(t.T) + ",\"acc\":" + Num(t.acc) +
             ",\"sim_acc\":" + Num(f23->sim3[th].acc()) + "}";
      }
      j += "]";
    }
    if (f4) {
      if (f23) j += ",";
      j += "\"fig4_bf_opt_builds\":" + std::to_string(f4->builds) + ",\"fig4\":[";
      for (size_t i = 0; i < f4->rows.size(); ++i) {
        const auto& r = f4->rows[i];
        j += std::string(i ? "," : "") + "{\"n\":" + std::to_string(r.n) +
             ",\"theta\":" + std::to_string(r.theta) + ",\"T\":" + std::to_string(r.T) +
             ",\"k_opt\":" + std::to_string(r.k_opt) + ",\"abf\":" + RatesJson(r.abf, r.m_abf) +
             ",\"bf_opt\":" + RatesJson(r.bf_opt, r.m_bf_opt) +
             ",\"bf_fixed\":" + RatesJson(r.bf_fixed, r.m_bf_fixed) +
             ",\"rbf\":" + RatesJson(r.rbf, r.m_rbf) + "}";
      }
      j += "]";
    }
    j += ",\"plots\":[";
    for (size_t i = 0; i < pngs.size(); ++i) j += std::string(i ? "," : "") + "\"" + pngs[i] + "\"";
    j += "]}";
    std::printf("%s\n", j.c_str());
    for (const auto& p : pngs) std::fprintf(stderr, "wrote %s\n", p.c_str());
    return 0;
  }

  if (f23) {
    std::printf("Fig. 2  m=%llu k=%u n=%llu L_TPR=%.2f (model | simulation, %d filters x %d "
                "fresh keys)\n",
                static_cast<unsigned long long>(kM), kK, static_cast<unsigned long long>(kFig2N),
                kFig2Ltpr, FLAGS_trials, FLAGS_queries);
    std::printf("  theta    T    TPR     FPR     ACC  |  sim_TPR  sim_FPR  sim_ACC\n");
    for (uint32_t th = 0; th <= 5; ++th) {
      const auto& t = f23->fig2[th];
      const auto& s = f23->sim2[th];
      std::printf("  %5u  %3u  %.4f  %.4f  %.4f |  %.4f   %.4f   %.4f\n", th, t.T, t.tpr, t.fpr,
                  t.acc, s.tpr, s.fpr, s.acc());
    }
    std::printf("\nFig. 3  best ACC vs theta (T optimized, no TPR limit)\n");
    std::printf("  theta    T   ACC(model)  ACC(sim)\n");
    for (uint32_t th = 0; th < f23->fig3.size(); ++th) {
      std::printf("  %5u  %3u   %.4f      %.4f\n", th, f23->fig3[th].T, f23->fig3[th].acc,
                  f23->sim3[th].acc());
    }
  }
  if (f4) {
    std::printf("\nFig. 4  m=%llu; ABF k=%u (theta,T) at L_TPR=%.1f; optimized BF k=%u..%u, "
                "built %u times; simulation (model)\n",
                static_cast<unsigned long long>(kM), kK, kFig4Ltpr, f4->k_min, f4->k_max,
                f4->builds);
    std::printf("     n  th   T | ABF tpr  fpr   acc        | optBF k  fpr   acc        | "
                "BF k=100 fpr       | RBF tpr fpr\n");
    for (const auto& r : f4->rows) {
      if (r.n % 500 != 0 && r.n != 50) continue;
      std::printf("  %4llu  %2u  %2u | %.3f %.3f %.3f (%.3f) | %3u %.3f %.3f (%.3f) | %.3f "
                  "(%.3f) | %.3f %.3f\n",
                  static_cast<unsigned long long>(r.n), r.theta, r.T, r.abf.tpr, r.abf.fpr,
                  r.abf.acc(), r.m_abf.acc(), r.k_opt, r.bf_opt.fpr, r.bf_opt.acc(),
                  r.m_bf_opt.acc(), r.bf_fixed.fpr, r.m_bf_fixed.fpr, r.rbf.tpr, r.rbf.fpr);
    }
  }
  if (!pngs.empty()) {
    std::printf("\nplots:");
    for (const auto& p : pngs) std::printf(" %s", p.c_str());
    std::printf("\n");
  } else if (FLAGS_plots) {
    std::printf("\nplots: gnuplot not found; data files in %s\n", FLAGS_out_dir.c_str());
  }
  return 0;
}
