#include "dplace/job/piper.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <tuple>
#include <unordered_map>

#include "dplace/base/units.h"

namespace dplace::job {
namespace {

constexpr double kInf = 1e30;  // Piper's infinity
constexpr size_t kMaxIdeals = 40000;

using Bits = std::vector<uint64_t>;

bool Has(const Bits& b, int i) { return (b[static_cast<size_t>(i) / 64] >> (i % 64)) & 1U; }
void Set(Bits* b, int i) { (*b)[static_cast<size_t>(i) / 64] |= uint64_t{1} << (i % 64); }
bool SubsetOf(const Bits& a, const Bits& b) {
  for (size_t w = 0; w < a.size(); ++w) {
    if ((a[w] & ~b[w]) != 0) return false;
  }
  return true;
}

struct BitsHash {
  size_t operator()(const Bits& b) const {
    size_t h = 0;
    for (uint64_t w : b) h = h * 1000003 ^ std::hash<uint64_t>()(w);
    return h;
  }
};

double OptionTps(const PiperInstance& in, const PiperOption& o, double edge_bytes, int d) {
  const double allreduce = 4.0 * (d - 1) * o.parameter_bytes / d / in.microbatches;
  return (edge_bytes / d + allreduce) / in.bandwidth_bytes_per_s + o.time_per_sample_s / d;
}

double EdgeBytes(const PiperLayer& layer, const PiperOption& o, const Bits& stage) {
  double bytes = 0;
  for (size_t p = 0; p < layer.preds.size(); ++p) {
    if (!Has(stage, layer.preds[p])) bytes += 2 * (layer.pred_bytes[p] + o.sync_fw[p]);
  }
  for (size_t s = 0; s < layer.succs.size(); ++s) {
    if (!Has(stage, layer.succs[s])) bytes += 2 * (layer.succ_bytes[s] + o.sync_bw[s]);
  }
  return bytes;
}

// Piper's knapsack heuristic for one stage, degree d, y micro-batches held: every layer its
// fastest option; if that does not fit, swap options in order of time gained per byte saved until
// it does. Returns the stage's time per sample (kInf where even the leanest options do not fit)
// and, in `choice`, each layer's option.
// Buffers the DP's inner loops reuse (a stage is planned some 10^7 times on large DAGs).
struct Scratch {
  std::vector<double> best_tps, best_mem;
  std::vector<std::tuple<double, size_t, size_t>> swaps;  // (time per byte saved, layer, option)
};

double Knapsack(const PiperInstance& in, const std::vector<int>& layers, int t,
                const std::vector<std::vector<double>>& edge_bytes, int d, int y,
                std::vector<int>* choice, Scratch* scratch) {
  const size_t n = layers.size();
  choice->assign(n, 0);
  double memory = 0, lean = 0, tps = 0;
  std::vector<double>& best_tps = scratch->best_tps;
  std::vector<double>& best_mem = scratch->best_mem;
  best_tps.resize(n);
  best_mem.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const auto& options = in.layers[static_cast<size_t>(layers[i])].options[static_cast<size_t>(t)];
    double fastest = kInf * 10, least = kInf * 10;
    for (size_t l = 0; l < options.size(); ++l) {
      const double v = OptionTps(in, options[l], edge_bytes[i][l], d);
      if (v < fastest) {
        fastest = v;
        (*choice)[i] = static_cast<int>(l);
      }
      least = std::min(least, options[l].memory_a * y + options[l].memory_b);
    }
    const PiperOption& f = options[static_cast<size_t>((*choice)[i])];
    best_tps[i] = fastest;
    best_mem[i] = f.memory_a * y + f.memory_b;
    tps += fastest;
    memory += best_mem[i];
    lean += least;
  }
  if (memory <= in.memory_bytes) return tps;
  if (lean > in.memory_bytes) return kInf;
  double excess = memory - in.memory_bytes;
  auto& swaps = scratch->swaps;
  swaps.clear();
  for (size_t i = 0; i < n; ++i) {
    const auto& options = in.layers[static_cast<size_t>(layers[i])].options[static_cast<size_t>(t)];
    for (size_t l = 0; l < options.size(); ++l) {
      const double saving = best_mem[i] - (options[l].memory_a * y + options[l].memory_b);
      if (saving <= 1e-9) continue;
      const double slower = OptionTps(in, options[l], edge_bytes[i][l], d) - best_tps[i];
      swaps.emplace_back(slower / saving, i, l);
    }
  }
  std::sort(swaps.begin(), swaps.end());
  for (const auto& [ratio, i, l] : swaps) {
    if (excess < 1e-9) break;
    const auto& options = in.layers[static_cast<size_t>(layers[i])].options[static_cast<size_t>(t)];
    const double mem = options[l].memory_a * y + options[l].memory_b;
    const double v = OptionTps(in, options[l], edge_bytes[i][l], d);
    excess -= best_mem[i] - mem;
    tps += v - best_tps[i];
    best_mem[i] = mem;
    best_tps[i] = v;
    (*choice)[i] = static_cast<int>(l);
  }
  return tps;
}

// Every layer of a stage at its fastest option (for degree d), as Knapsack picks them first: the
// stage's time per sample, and its memory for y micro-batches held, summed as Knapsack sums it.
struct Fastest {
  double tps = 0;
  std::vector<double> memory_a, memory_b;

  void Of(const PiperInstance& in, const std::vector<int>& layers, int t,
          const std::vector<std::vector<double>>& edge_bytes, int d) {
    tps = 0;
    memory_a.clear();
    memory_b.clear();
    for (size_t i = 0; i < layers.size(); ++i) {
      const auto& options =
          in.layers[static_cast<size_t>(layers[i])].options[static_cast<size_t>(t)];
      double best = kInf * 10;
      size_t at = 0;
      for (size_t l = 0; l < options.size(); ++l) {
        const double v = OptionTps(in, options[l], edge_bytes[i][l], d);
        if (v < best) best = v, at = l;
      }
      tps += best;
      memory_a.push_back(options[at].memory_a);
      memory_b.push_back(options[at].memory_b);
    }
  }
  bool Fits(const PiperInstance& in, int y) const {
    double memory = 0;
    for (size_t i = 0; i < memory_a.size(); ++i) memory += memory_a[i] * y + memory_b[i];
    return memory <= in.memory_bytes;
  }
};

// Whether every layer of the stage has options at degree t, and then per layer and option the
// bytes of its edges that leave the stage (EdgeBytes).
bool CrossingBytes(const PiperInstance& in, const std::vector<int>& layers, const Bits& stage,
                   int t, std::vector<std::vector<double>>* edge_bytes) {
  for (int v : layers) {
    const auto& opts = in.layers[static_cast<size_t>(v)].options;
    if (static_cast<size_t>(t) >= opts.size() || opts[static_cast<size_t>(t)].empty()) return false;
  }
  // Resized, not cleared: each layer's vector keeps its room from the last stage.
  if (edge_bytes->size() < layers.size()) edge_bytes->resize(layers.size());
  for (size_t i = 0; i < layers.size(); ++i) {
    const PiperLayer& layer = in.layers[static_cast<size_t>(layers[i])];
    std::vector<double>& per_option = (*edge_bytes)[i];
    per_option.clear();
    for (const PiperOption& o : layer.options[static_cast<size_t>(t)]) {
      per_option.push_back(EdgeBytes(layer, o, stage));
    }
  }
  return true;
}

void MembersOf(const Bits& b, std::vector<int>* out) {
  out->clear();
  for (size_t w = 0; w < b.size(); ++w) {
    for (uint64_t bits = b[w]; bits != 0; bits &= bits - 1) {
      out->push_back(static_cast<int>(w * 64) + std::countr_zero(bits));
    }
  }
}

std::vector<int> Members(const Bits& b) {
  std::vector<int> out;
  MembersOf(b, &out);
  return out;
}

}  // namespace

StatusOr<PiperPlan> PlanPiper(const PiperInstance& in) {
  const int n = static_cast<int>(in.layers.size());
  const int K = in.max_devices;
  const int S = std::min(in.microbatches, K);  // bound on the sum of data-parallel degrees
  const size_t words = static_cast<size_t>(n + 63) / 64;
  // Successor-closed sets (the pipeline's tails), grown from the empty set.
  std::vector<Bits> ideals{Bits(words, 0)};
  std::unordered_map<Bits, int, BitsHash> index{{ideals[0], 0}};
  for (size_t at = 0; at < ideals.size(); ++at) {
    for (int v = 0; v < n; ++v) {
      if (Has(ideals[at], v)) continue;
      bool ready = true;
      for (int w : in.layers[static_cast<size_t>(v)].succs) ready = ready && Has(ideals[at], w);
      if (!ready) continue;
      Bits grown = ideals[at];
      Set(&grown, v);
      if (index.emplace(grown, static_cast<int>(ideals.size())).second) {
        ideals.push_back(std::move(grown));
        if (ideals.size() > kMaxIdeals) {
          return InvalidInput(
              "the graph has more than 40,000 successor-closed sets (Piper's "
              "limit)");
        }
      }
    }
  }
  // By size: a set's subsets come first (BFS from the empty set adds one layer a step).
  const size_t m = ideals.size();
  if (static_cast<int>(Members(ideals.back()).size()) != n) {
    return InvalidInput("the layer graph has a cycle");
  }
  const size_t cells = static_cast<size_t>(K + 1) * (S + 1);
  // The DP's table: a (devices, sum of degrees) cell per set, kept to 2 GiB.
  constexpr double kMaxCells = 2.0 * (1 << 30) / sizeof(double);
  if (static_cast<double>(cells) * static_cast<double>(m) > kMaxCells) {
    return InvalidInput("Piper's DP over " + std::to_string(m) + " successor-closed sets x " +
                        std::to_string(K + 1) + " device counts x " + std::to_string(S + 1) +
                        " sums of data-parallel degrees needs more than 2 GiB; ask for fewer "
                        "devices (--gpus)");
  }
  std::vector<std::vector<double>> dp(m, std::vector<double>(cells, kInf));
  // Per set and device count, the sums s where its row of the table drops (and 0).
  std::vector<std::vector<std::vector<int>>> drops(
      m, std::vector<std::vector<int>>(static_cast<size_t>(K) + 1, std::vector<int>{0}));
  auto at = [S](int k, int s) { return static_cast<size_t>(k) * (S + 1) + s; };
  std::fill(dp[0].begin(), dp[0].end(), 0.0);
  std::vector<double> tps(static_cast<size_t>(S + 1));
  std::vector<int> choice, layers;
  std::vector<double> by_y;
  std::vector<std::vector<double>> edge_bytes;
  Bits stage(words);
  Fastest fastest;
  Scratch scratch;
  for (size_t id = 1; id < m; ++id) {
    for (size_t sub = 0; sub < id; ++sub) {
      if (!SubsetOf(ideals[sub], ideals[id]) || ideals[sub] == ideals[id]) continue;
      for (size_t w = 0; w < words; ++w) stage[w] = ideals[id][w] & ~ideals[sub][w];
      MembersOf(stage, &layers);
      for (int t = 1; t <= K; ++t) {
        if (!CrossingBytes(in, layers, stage, t, &edge_bytes)) continue;
        for (int d = 1; d * t <= K && d <= S; ++d) {
          if (in.microbatches % d != 0) continue;
          // The stage's time for each number of micro-batches it holds, y = ceil(s / d): its
          // layers' fastest options where they fit (the knapsack's first answer, found once for
          // every y), else the knapsack.
          fastest.Of(in, layers, t, edge_bytes, d);
          by_y.assign(static_cast<size_t>(S / d) + 2, kInf);
          for (int y = 1; y <= S / d + 1; ++y) {
            by_y[static_cast<size_t>(y)] =
                fastest.Fits(in, y) ? fastest.tps
                                    : Knapsack(in, layers, t, edge_bytes, d, y, &choice, &scratch);
            if (by_y[static_cast<size_t>(y)] >= kInf) break;  // more held fits no better
          }
          bool rising = true;  // the stage is no faster holding more
          for (int s = d; s <= S; ++s) {
            tps[static_cast<size_t>(s)] = by_y[static_cast<size_t>((s + d - 1) / d)];
            rising = rising &&
                     (s == d || tps[static_cast<size_t>(s)] >= tps[static_cast<size_t>(s) - 1]);
          }
          const std::vector<double>& before = dp[sub];
          std::vector<double>& here = dp[id];
          for (int k = t * d; k <= K; ++k) {
            const int rest = k - t * d;
            if (!rising) {
              for (int s = d; s <= S; ++s) {
                const double v = std::max(before[at(rest, s - d)], tps[static_cast<size_t>(s)]);
                if (v < here[at(k, s)]) here[at(k, s)] = v;
              }
              continue;
            }
            // The rest's row falls in s and the stage's rises: the candidates max(row(s - d),
            // stage(s)) are only needed where the row drops (between drops it stays and the
            // stage rises; the pass below takes the least over s' <= s), and past the first drop
            // f where the stage is the slower, none after it (Piper's faster transition).
            const std::vector<int>& f = drops[sub][static_cast<size_t>(rest)];
            auto row_slower = [&](size_t i) {
              const int s = f[i] + d;
              return s <= S && before[at(rest, f[i])] > tps[static_cast<size_t>(s)];
            };
            size_t lo = 0, hi = f.size();  // the first drop where the row is not the slower
            while (lo < hi) {
              const size_t mid = (lo + hi) / 2;
              if (row_slower(mid)) {
                lo = mid + 1;
              } else {
                hi = mid;
              }
            }
            for (size_t i = 0; i < lo; ++i) {
              double& cell = here[at(k, f[i] + d)];
              cell = std::min(cell, before[at(rest, f[i])]);
            }
            if (const int s = lo < f.size() ? f[lo] + d : S + 1; s <= S) {
              double& cell = here[at(k, s)];
              cell = std::min(cell, std::max(before[at(rest, f[lo])], tps[static_cast<size_t>(s)]));
            }
          }
        }
      }
    }
    // At most k devices and a sum of at most s; where each row drops.
    std::vector<double>& here = dp[id];
    for (int k = 0; k <= K; ++k) {
      std::vector<int>& row_drops = drops[id][static_cast<size_t>(k)];
      row_drops.assign(1, 0);
      for (int s = 0; s <= S; ++s) {
        double v = here[at(k, s)];
        if (k > 0) v = std::min(v, here[at(k - 1, s)]);
        if (s > 0) v = std::min(v, here[at(k, s - 1)]);
        here[at(k, s)] = v;
        if (s > 0 && v < here[at(k, s - 1)]) row_drops.push_back(s);
      }
    }
  }
  const size_t full = m - 1;  // the whole graph is the largest set, found last
  PiperPlan plan;
  plan.ideals = static_cast<int>(m);
  plan.time_per_sample_s = dp[full][at(K, S)];
  if (plan.time_per_sample_s > 5e29) {
    return InvalidInput("no plan of Piper's space fits " + std::to_string(K) + " devices of " +
                        FormatBytes(in.memory_bytes));
  }
  // The fewest devices (then the smallest sum) reaching the optimum, then back through the DP.
  int k_used = K, s_used = S;
  for (int k = 0; k <= K && k_used == K; ++k) {
    for (int s = 1; s <= S; ++s) {
      if (dp[full][at(k, s)] <= plan.time_per_sample_s + 1e-9) {
        k_used = k;
        s_used = s;
        break;
      }
    }
  }
  size_t id = full;
  int k = k_used, s = s_used;
  while (id != 0) {
    // The least cell at most (k, s) as good as it: a transition wrote it (the table's other
    // cells take the least of the cells below them).
    const double target = dp[id][at(k, s)] + 1e-9;
    for (int k2 = 0, done = 0; k2 <= k && done == 0; ++k2) {
      for (int s2 = 0; s2 <= s; ++s2) {
        if (dp[id][at(k2, s2)] <= target) {
          k = k2;
          s = s2;
          done = 1;
          break;
        }
      }
    }
    bool found = false;
    for (size_t sub = 0; sub < id && !found; ++sub) {
      if (!SubsetOf(ideals[sub], ideals[id]) || ideals[sub] == ideals[id]) continue;
      for (size_t w = 0; w < words; ++w) stage[w] = ideals[id][w] & ~ideals[sub][w];
      MembersOf(stage, &layers);
      for (int t = 1; t <= k && !found; ++t) {
        if (!CrossingBytes(in, layers, stage, t, &edge_bytes)) continue;
        for (int d = 1; d * t <= k && d <= s && !found; ++d) {
          if (in.microbatches % d != 0) continue;
          const double stage_tps =
              Knapsack(in, layers, t, edge_bytes, d, (s + d - 1) / d, &choice, &scratch);
          const double v = std::max(dp[sub][at(k - t * d, s - d)], stage_tps);
          if (std::abs(v - dp[id][at(k, s)]) < 1e-9 && v < 5e29) {
            plan.stages.push_back({layers, t, d, choice});
            plan.devices += t * d;
            plan.dp_sum += d;
            k -= t * d;
            s -= d;
            id = sub;
            found = true;
          }
        }
      }
    }
    if (!found) return Internal("Piper's DP: no stage reconstructs the optimum");
  }
  // Each step took the earliest stage off a tail of the pipeline: the stages are in order.
  return plan;
}

double PiperTimePerSample(const PiperInstance& in, const std::vector<PiperStage>& stages) {
  const int n = static_cast<int>(in.layers.size());
  const size_t words = static_cast<size_t>(n + 63) / 64;
  double worst = 0;
  int suffix = 0;
  for (size_t i = stages.size(); i-- > 0;) {
    const PiperStage& st = stages[i];
    suffix += st.d;
    Bits members(words, 0);
    for (int v : st.layers) Set(&members, v);
    const int y = (suffix + st.d - 1) / st.d;
    double tps = 0, memory = 0;
    for (size_t j = 0; j < st.layers.size(); ++j) {
      const PiperLayer& layer = in.layers[static_cast<size_t>(st.layers[j])];
      const PiperOption& o =
          layer.options[static_cast<size_t>(st.t)][static_cast<size_t>(st.option[j])];
      tps += OptionTps(in, o, EdgeBytes(layer, o, members), st.d);
      memory += o.memory_a * y + o.memory_b;
    }
    if (memory > in.memory_bytes) return std::numeric_limits<double>::infinity();
    worst = std::max(worst, tps);
  }
  return worst;
}

}  // namespace dplace::job
