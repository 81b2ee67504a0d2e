#include "dplace/job/search.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <iterator>
#include <limits>

namespace dplace::job {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr int64_t kMaxMicrobatches = 8192;

// Index of chunk `chunk` of rank `rank` among the virtual stages (chunk * ranks + rank).
size_t Vs(int chunk, int ranks, int rank) {
  return static_cast<size_t>(chunk) * static_cast<size_t>(ranks) + static_cast<size_t>(rank);
}
constexpr Recompute kModes[] = {Recompute::kNone, Recompute::kSelective, Recompute::kFull};

// A virtual stage of `n` layers: its parameters, activation bytes a micro-batch, and work (with
// ZeRO-3's gathers where compute does not hide them; W folded into B unless the schedule splits
// it off).
struct StageTerms {
  double parameters = 0, activation_bytes = 0;
  Work work;
  double tp_s = 0, recompute_s = 0;
};

StageTerms TermsOf(const Costs& k, const Config& c, int n, Recompute r, bool first, bool last) {
  StageTerms s;
  const Work& layer = k.layer[static_cast<size_t>(r)];
  s.work = {n * layer.forward_s, n * layer.backward_s, n * layer.weight_s};
  s.parameters = n * k.layer_parameters;
  s.activation_bytes = n * k.layer_activation_bytes[static_cast<size_t>(r)];
  s.tp_s = n * k.layer_tp_s;
  s.recompute_s = n * k.layer_recompute_s[static_cast<size_t>(r)];
  auto add = [&s](const Work& w) {
    s.work.forward_s += w.forward_s;
    s.work.backward_s += w.backward_s;
    s.work.weight_s += w.weight_s;
  };
  if (first) {
    add(k.embedding);
    s.parameters += k.embedding_parameters;
    s.activation_bytes += k.embedding_activation_bytes;
  }
  if (last) {
    add(k.head);
    s.parameters += k.head_parameters;
    s.activation_bytes += k.head_activation_bytes;
  }
  // Per micro-batch collectives of ZeRO 2 and 3, prefetched under the compute they feed: only
  // what it does not hide counts.
  const double gather = k.zero3_s_per_parameter * s.parameters;  // half forward, half backward
  const double reduce = k.microbatch_reduce_s_per_parameter * s.parameters;
  if (gather + reduce > 0) {
    s.work.forward_s += std::max(0.0, gather / 2 - s.work.forward_s);
    s.work.backward_s += std::max(0.0, gather / 2 + reduce - s.work.backward_s - s.work.weight_s);
  }
  if (!RowOf(c.schedule).splits_backward) {
    s.work.backward_s += s.work.weight_s;
    s.work.weight_s = 0;
  }
  return s;
}

bool Divides(int64_t d, int64_t n) { return d > 0 && n % d == 0; }

std::vector<int> Divisors(int64_t n) {
  std::vector<int> out;
  for (int64_t d = 1; d <= n; ++d) {
    if (n % d == 0) out.push_back(static_cast<int>(d));
  }
  return out;
}

// Even split of `layers` over `stages` (the first stages one more where it does not divide).
std::vector<StagePlan> EvenStages(const Job& job, const Config& c, Recompute r) {
  const int stages = c.pp * c.virtual_stages;
  const int layers = static_cast<int>(job.model.layers);
  std::vector<StagePlan> out;
  int at = 0;
  for (int s = 0; s < stages; ++s) {
    const int n = layers / stages + (s < layers % stages ? 1 : 0);
    out.push_back({.first_layer = at, .layers = n, .tp = c.tp, .dp = c.dp, .recompute = r});
    at += n;
  }
  return out;
}

struct Evaluated {
  std::vector<Memory> memory;
  std::vector<StageTerms> terms;  // per virtual stage
};

using Actions = std::vector<std::vector<Action>>;

// A stage's configuration and costs: the configuration's own, or under a mixed configuration one
// of its variants (StageVariants), told apart by their TP degree.
struct Variant {
  Config c;
  Costs k;
};
using Variants = std::vector<Variant>;

Variants VariantsOf(const Job& job, const hw::Machine& m, const Config& c) {
  Variants out;
  for (const Config& v : StageVariants(job, m, c)) out.push_back({v, CostsOf(job, m, v)});
  return out;
}

const Variant& VariantOf(const Variants& vs, const StagePlan& sp) {
  for (const Variant& v : vs) {
    if (v.c.tp == sp.tp) return v;
  }
  return vs.front();
}

// What a rank does after its pipeline and gradient reduction: the optimizer step and (ZeRO 1 and
// 2) the new weights' all-gather.
double AfterS(const Costs& k, double parameters) {
  return (k.optimizer_s_per_parameter + k.gather_s_per_parameter) * parameters;
}

// A rank's gradient reduction over its data-parallel group, once a step (ZeRO 0 and 1).
double ReduceS(const Costs& k, const Config& c, double parameters) {
  if (c.dp * c.cp <= 1) return 0;
  return k.reduce_latency_s + k.reduce_s_per_parameter * parameters;
}

Evaluated MemoryOf(const Job& job, const Config& c, const Variants& vs, const ParallelPlan& plan,
                   const Actions& actions) {
  Evaluated ev;
  const int ranks = c.pp, stages = c.pp * c.virtual_stages;
  const bool split = RowOf(c.schedule).splits_backward;
  for (int vs_index = 0; vs_index < stages; ++vs_index) {
    const StagePlan& sp = plan.stages[static_cast<size_t>(vs_index)];
    const Variant& v = VariantOf(vs, sp);
    ev.terms.push_back(
        TermsOf(v.k, v.c, sp.layers, sp.recompute, vs_index == 0, vs_index == stages - 1));
  }
  for (int r = 0; r < ranks; ++r) {
    double parameters = 0;
    for (int chunk = 0; chunk < c.virtual_stages; ++chunk) {
      parameters += ev.terms[Vs(chunk, ranks, r)].parameters;
    }
    const Variant& v = VariantOf(vs, plan.stages[static_cast<size_t>(r)]);
    Memory mem = ResidentMemory(v.c, parameters, v.k.layer_parameters);
    double now = 0;
    for (const Action& a : actions[static_cast<size_t>(r)]) {
      const double bytes = ev.terms[Vs(a.chunk, ranks, r)].activation_bytes;
      if (a.kind == ActionKind::kForward) now += bytes;
      if (a.kind == (split ? ActionKind::kWeight : ActionKind::kBackward)) now -= bytes;
      mem.activations = std::max(mem.activations, now);
    }
    ev.memory.push_back(mem);
  }
  (void)job;
  return ev;
}

double Peak(const std::vector<Memory>& memory) {
  double most = 0;
  for (const Memory& m : memory) most = std::max(most, m.total());
  return most;
}

JudgedPlan JudgeWith(const Job& job, const hw::Machine& m, const Config& c, const Variants& vs,
                     ParallelPlan plan, const Actions& actions) {
  Evaluated ev = MemoryOf(job, c, vs, plan, actions);
  const int ranks = c.pp, stages = c.pp * c.virtual_stages;
  std::vector<Work> work;
  for (const StageTerms& t : ev.terms) work.push_back(t.work);
  // Between stages of different layouts a send takes the slower of theirs.
  double send_s = 0;
  for (const StagePlan& sp : plan.stages) send_s = std::max(send_s, VariantOf(vs, sp).k.send_s);
  const std::vector<double> ends = SimulateActions(actions, work, ranks, c.virtual_stages, send_s);
  JudgedPlan j;
  j.family = FamilyOf(c);
  double slowest = -1, optimizer = 0;
  for (int r = 0; r < ranks; ++r) {
    const Variant& v = VariantOf(vs, plan.stages[static_cast<size_t>(r)]);
    const Costs& k = v.k;
    const int group = v.c.dp * v.c.cp;
    double parameters = 0, busy = 0, tp = 0, recompute = 0;
    int layers = 0;
    for (int chunk = 0; chunk < c.virtual_stages; ++chunk) {
      const size_t stage = Vs(chunk, ranks, r);
      const StageTerms& t = ev.terms[stage];
      parameters += t.parameters;
      busy += c.microbatches * t.work.total();
      tp += c.microbatches * t.tp_s;
      recompute += c.microbatches * t.recompute_s;
      layers += plan.stages[stage].layers;
    }
    // The gradient reduction runs in buckets under the last micro-batch's backward (Megatron-LM's
    // --overlap-grad-reduce, FSDP's): what that backward does not hide, and at least the last
    // bucket (one layer's) is exposed. ZeRO >= 1 then all-gathers the updated weights.
    double exposed = 0;
    if (group > 1) {
      const double reduce = ReduceS(k, v.c, parameters);
      const Work& last = work[static_cast<size_t>(r)];  // chunk 0 runs the rank's last backward
      exposed = std::max(reduce / std::max(1, layers), reduce - last.backward_s - last.weight_s);
    }
    const double after = k.optimizer_s_per_parameter * parameters;
    const double gather = AfterS(k, parameters) - after;
    const double end = ends[static_cast<size_t>(r)] + exposed;
    optimizer = std::max(optimizer, after + gather);
    if (end > slowest) {
      slowest = end;
      j.parts = {.compute_s = busy - tp - recompute,
                 .bubble_s = std::max(0.0, ends[static_cast<size_t>(r)] - busy),
                 .tp_s = tp,
                 .recompute_s = recompute,
                 .data_parallel_s = exposed + gather,
                 .optimizer_s = after};
    }
  }
  j.iteration_s = slowest + optimizer;
  const double tokens = static_cast<double>(job.global_batch) * job.seq_len;
  const double model_flops = ModelFlops(job.model, job.seq_len, tokens);
  double recompute_flops = 0;
  for (const StagePlan& sp : plan.stages) {
    const double per_token =
        sp.recompute == Recompute::kFull
            ? LayerGemmFlopsPerToken(job.model) + AttentionFlopsPerToken(job.model, job.seq_len)
        : sp.recompute == Recompute::kSelective ? AttentionFlopsPerToken(job.model, job.seq_len)
                                                : 0;
    recompute_flops += sp.layers * per_token * tokens;
  }
  const double gpus = c.tp * c.pp * c.dp * c.cp;
  const double peak = GemmPeak(m.gpu, Dtype::kBf16);
  j.tokens_per_s = tokens / j.iteration_s;
  j.mfu = model_flops / (j.iteration_s * gpus * peak);
  j.hfu = (model_flops + recompute_flops) / (j.iteration_s * gpus * peak);
  j.model_tflops_per_gpu = model_flops / j.iteration_s / gpus / 1e12;
  j.memory = std::move(ev.memory);
  j.fits = Peak(j.memory) <= m.gpu.memory_bytes;
  (void)stages;
  j.plan = std::move(plan);
  return j;
}

// A stage of n layers in mode r, in `layout`, holding `held` micro-batches' activations: its
// terms and whether it fits memory.
struct FittedStage {
  StageTerms t;
  bool fits = false;
};

FittedStage FitStage(const hw::Machine& m, const Variant& layout, int n, Recompute r, int held,
                     bool first, bool last) {
  FittedStage out{TermsOf(layout.k, layout.c, n, r, first, last)};
  const double bytes =
      ResidentMemory(layout.c, out.t.parameters, layout.k.layer_parameters).total() +
      held * out.t.activation_bytes;
  out.fits = bytes <= m.gpu.memory_bytes;
  return out;
}

// What the schedule's orders (one chunk a rank) fix of a step, for its bound: the weight gradients
// each rank runs before its last backward, and those the first rank runs after it.
struct OrderCounts {
  std::vector<int> weights_before_last_backward;
  int trailing_weights_first = 0;
};

OrderCounts CountsOf(const Actions& actions) {
  OrderCounts out;
  for (const std::vector<Action>& rank : actions) {
    int weights = 0, before = 0;
    for (const Action& a : rank) {
      if (a.kind == ActionKind::kWeight) ++weights;
      if (a.kind == ActionKind::kBackward) before = weights;
    }
    out.weights_before_last_backward.push_back(before);
    if (out.weights_before_last_backward.size() == 1) out.trailing_weights_first = weights - before;
  }
  return out;
}

// What each stage of a split may be: stage s in variant v (the configuration itself, or under a
// mixed configuration any of its StageVariants) with n layers in mode r, its work and what it does
// after the pipeline, or none where it does not fit or takes `cutoff_s` or more (the slowest stage
// runs every micro-batch, so such a split takes at least microbatches x cutoff_s, past the best so
// far).
struct StageOption {
  Work work;
  double total = kInf;  // kInf: not an option
  double after = 0;
};

class StageOptions {
 public:
  StageOptions(const Job& job, const hw::Machine& m, const Config& c, const Variants& vs,
               const std::vector<Recompute>& modes, const std::vector<int>& held,
               const Actions& actions, double cutoff_s)
      : P_(c.pp),
        V_(static_cast<int>(vs.size())),
        L_(static_cast<int>(job.model.layers)),
        modes_(modes),
        counts_(CountsOf(actions)) {
    options_.resize(static_cast<size_t>(P_) * static_cast<size_t>(V_) *
                    static_cast<size_t>(L_ + 1) * 3);
    largest_.assign(static_cast<size_t>(P_) * static_cast<size_t>(V_), 0);
    for (int s = 0; s < P_; ++s) {
      for (int v = 0; v < V_; ++v) {
        const Variant& variant = vs[static_cast<size_t>(v)];
        int& largest = largest_[Cell(s, v)];
        // Work and memory grow with the layers: past the largest that is an option, none is.
        for (int n = 1; n <= L_ && largest == n - 1; ++n) {
          for (Recompute r : modes) {
            const FittedStage f =
                FitStage(m, variant, n, r, held[static_cast<size_t>(s)], s == 0, s == P_ - 1);
            if (!f.fits || f.t.work.total() >= cutoff_s) continue;
            options_[Index(s, v, n, r)] = {f.t.work, f.t.work.total(),
                                           AfterS(variant.k, f.t.parameters)};
            largest = n;
          }
          // A mode no faster in any task than another that fits is no option: with the ranks'
          // orders fixed, no task ends earlier for it (and its optimizer step is the same).
          for (Recompute r : modes) {
            StageOption& o = options_[Index(s, v, n, r)];
            for (Recompute q : modes) {
              const StageOption& other = options_[Index(s, v, n, q)];
              if (q == r || other.total == kInf || o.total == kInf) continue;
              const bool no_faster = o.work.forward_s >= other.work.forward_s &&
                                     o.work.backward_s >= other.work.backward_s &&
                                     o.work.weight_s >= other.work.weight_s;
              if (no_faster && (o.total > other.total || q < r)) o = StageOption{};
            }
          }
        }
      }
    }
  }
  const StageOption& at(int s, int v, int n, Recompute r) const {
    return options_[Index(s, v, n, r)];
  }
  // The most layers stage s holds in variant v (0: none fit).
  int largest(int s, int v) const { return largest_[Cell(s, v)]; }
  // The most in any variant.
  int largest(int s) const {
    int most = 0;
    for (int v = 0; v < V_; ++v) most = std::max(most, largest(s, v));
    return most;
  }
  int variants() const { return V_; }
  const std::vector<Recompute>& modes() const { return modes_; }
  const OrderCounts& counts() const { return counts_; }

 private:
  size_t Cell(int s, int v) const {
    return static_cast<size_t>(s) * static_cast<size_t>(V_) + static_cast<size_t>(v);
  }
  size_t Index(int s, int v, int n, Recompute r) const {
    return (Cell(s, v) * static_cast<size_t>(L_ + 1) + static_cast<size_t>(n)) * 3 +
           static_cast<size_t>(r);
  }
  int P_, V_, L_;
  std::vector<Recompute> modes_;
  OrderCounts counts_;
  std::vector<StageOption> options_;
  std::vector<int> largest_;
};

// A split's lower bound on its step, stage by stage: stage s runs every micro-batch's tasks after
// the stages before it ran the first one's forwards; and its forwards, backwards and the weight
// gradients its order runs before its last backward, then the stages before it their last
// backwards, then the first stage its trailing weight gradients. The slowest rank's optimizer step
// comes after. Adding a stage never lowers it. (Under 1F1B the second is the fill and drain of
// Piper's bound; under zero bubble it counts the weight gradients a rank cannot defer.)
struct FillBound {
  double pipeline = 0, forwards = 0, backwards = 0, after = 0, trailing = 0;
  int stages = 0;

  void Add(const StageOption& o, int microbatches, const OrderCounts& order) {
    const size_t s = static_cast<size_t>(stages++);
    if (s == 0) trailing = order.trailing_weights_first * o.work.weight_s;
    const double last_backward = microbatches * (o.work.forward_s + o.work.backward_s) +
                                 order.weights_before_last_backward[s] * o.work.weight_s;
    pipeline = std::max(pipeline, forwards + std::max(microbatches * o.total,
                                                      last_backward + backwards + trailing));
    forwards += o.work.forward_s;
    backwards += o.work.backward_s;
    after = std::max(after, o.after);
  }
  double bound_s() const { return pipeline + after; }
};

struct Split {
  std::vector<StagePlan> stages;
  double bound_s = 0;
};

// Which variants a split's stages take so far: all one (its index), or more than one (kMixed).
// Under a mixed configuration only splits of more than one are its plans (those of one are the
// uniform configurations'); under a uniform configuration every split is of its one.
constexpr int kMixed = -1;
constexpr int kNoStage = -2;
int Together(int alike, int v) { return alike == kNoStage || alike == v ? v : kMixed; }

// Piper's DP (Tarnawski et al. 2021) for one configuration without virtual stages: every split
// into pp contiguous stages, each with a variant (its (t, d)) and a recomputation mode, that fits
// memory and is Pareto-optimal in (slowest stage, sum of stages, the most any stage does after the
// pipeline, the slowest send between stages), with its bound; none that cannot beat `threshold_s`.
std::vector<Split> ParetoSplits(const Config& c, const Variants& vs, const StageOptions& options,
                                int L, bool even, double threshold_s) {
  const int P = c.pp, V = options.variants();
  struct Point {
    double max, sum, after, send;
    int prev;  // index in the front of (s - 1, i - n)
    int n;
    int variant;
    Recompute r;
    int alike;  // Together of the stages so far
  };
  // fronts[s][i]: the first s stages hold layers [0, i).
  std::vector<std::vector<std::vector<Point>>> fronts(
      static_cast<size_t>(P + 1), std::vector<std::vector<Point>>(static_cast<size_t>(L + 1)));
  fronts[0][0].push_back({0, 0, 0, 0, -1, 0, 0, Recompute::kNone, kNoStage});
  for (int s = 0; s < P; ++s) {
    const bool last = s == P - 1;
    for (int i = s; i <= L; ++i) {
      const auto& from = fronts[static_cast<size_t>(s)][static_cast<size_t>(i)];
      if (from.empty()) continue;
      for (int v = 0; v < V; ++v) {
        const int most = std::min(L - i - (P - s - 1), last ? L : options.largest(s, v));
        if (last && L - i > options.largest(s, v)) continue;
        const double send = vs[static_cast<size_t>(v)].k.send_s;
        for (int n = last ? most : 1; n <= most; ++n) {
          if (even && n != L / P) continue;
          for (Recompute r : options.modes()) {
            const StageOption& o = options.at(s, v, n, r);
            if (o.total == kInf) continue;
            auto& to =
                fronts[static_cast<size_t>(s) + 1][static_cast<size_t>(i) + static_cast<size_t>(n)];
            for (size_t p = 0; p < from.size(); ++p) {
              const Point next{std::max(from[p].max, o.total),
                               from[p].sum + o.total,
                               std::max(from[p].after, o.after),
                               std::max(from[p].send, send),
                               static_cast<int>(p),
                               n,
                               v,
                               r,
                               Together(from[p].alike, v)};
              // Its slowest stage runs every micro-batch, and its optimizer step comes after.
              if (c.microbatches * next.max + next.after >= threshold_s) continue;
              if (c.mixed_tp && last && next.alike != kMixed) continue;
              to.push_back(next);
            }
          }
        }
      }
    }
    // Keep each front's Pareto-optimal points. A split of one variant so far is dominated only by
    // one of the same variant or a mixed one: extended alike, it stays a split of one variant,
    // which a mixed configuration does not take, so it must not hide a mixed split.
    for (auto& front : fronts[static_cast<size_t>(s) + 1]) {
      std::sort(front.begin(), front.end(), [](const Point& a, const Point& b) {
        if (a.max != b.max) return a.max < b.max;
        if (a.sum != b.sum) return a.sum < b.sum;
        if (a.after != b.after) return a.after < b.after;
        return a.send < b.send;
      });
      // Sorted by max, a point is dominated when one kept before it is no worse in the others.
      std::vector<Point> kept;
      for (const Point& p : front) {
        const bool dominated = std::any_of(kept.begin(), kept.end(), [&](const Point& q) {
          return q.sum <= p.sum && q.after <= p.after && q.send <= p.send &&
                 (!c.mixed_tp || q.alike == kMixed || q.alike == p.alike);
        });
        if (!dominated) kept.push_back(p);
      }
      front = std::move(kept);
    }
  }
  std::vector<Split> out;
  const auto& final_front = fronts[static_cast<size_t>(P)][static_cast<size_t>(L)];
  for (size_t p = 0; p < final_front.size(); ++p) {
    std::vector<StagePlan> stages(static_cast<size_t>(P));
    FillBound bound;
    std::vector<const StageOption*> chosen(static_cast<size_t>(P));
    int i = L, idx = static_cast<int>(p);
    for (int s = P; s > 0; --s) {
      const Point& pt =
          fronts[static_cast<size_t>(s)][static_cast<size_t>(i)][static_cast<size_t>(idx)];
      const Config& lc = vs[static_cast<size_t>(pt.variant)].c;
      stages[static_cast<size_t>(s - 1)] = {
          .first_layer = i - pt.n, .layers = pt.n, .tp = lc.tp, .dp = lc.dp, .recompute = pt.r};
      chosen[static_cast<size_t>(s - 1)] = &options.at(s - 1, pt.variant, pt.n, pt.r);
      i -= pt.n;
      idx = pt.prev;
    }
    for (const StageOption* o : chosen) bound.Add(*o, c.microbatches, options.counts());
    out.push_back({std::move(stages), bound.bound_s()});
  }
  return out;
}

// Every split whose bound is below `threshold_s`, by branch and bound over the stages. The step
// is not a function of the DP's dimensions alone — under zero bubble a rank's deferred weight
// gradients end it, under 1F1B and GPipe the fill and drain run through the stages before and
// after the slowest, so which stages are heavy matters, not only how heavy the heaviest is: past
// the DP's front, the splits that could still beat the best judged one are judged. A search's
// calls share a budget of partial splits extended and splits returned; `*complete` says whether
// every split below the threshold was.
struct BelowBudget {
  int64_t nodes = 1000000;
  int64_t splits = 4000;
};

std::vector<Split> SplitsBelow(const Config& c, const Variants& vs, const StageOptions& options,
                               int L, bool even, double threshold_s, BelowBudget* budget,
                               bool* complete) {
  const int P = c.pp, V = options.variants();
  std::vector<Split> out;
  *complete = true;
  std::vector<StagePlan> stages;
  // The most layers stages s.. can hold.
  std::vector<int> room(static_cast<size_t>(P) + 1, 0);
  for (int s = P - 1; s >= 0; --s) {
    room[static_cast<size_t>(s)] = room[static_cast<size_t>(s) + 1] + options.largest(s);
  }
  // The layers left run their forward and backward on some stage before the last micro-batch's
  // last backward ends: a bound on what the stages left add, however split.
  double least_layer = kInf;
  for (const Variant& v : vs) {
    for (Recompute r : options.modes()) {
      const Work& w = v.k.layer[static_cast<size_t>(r)];
      least_layer = std::min(least_layer, w.forward_s + w.backward_s);
    }
  }
  // The least the stages s.. add to the pipeline's bound after the forwards before them, holding
  // layers [i, L): the largest, over them, of the forwards of those before it among them + the
  // micro-batches' work on it (FillBound's first term), at its least over their splits.
  const size_t width = static_cast<size_t>(L) + 1;
  std::vector<double> rest_fill((static_cast<size_t>(P) + 1) * width, kInf);
  auto fill_at = [&](int s, int i) -> double& {
    return rest_fill[static_cast<size_t>(s) * width + static_cast<size_t>(i)];
  };
  fill_at(P, L) = 0;
  for (int s = P - 1; s >= 0; --s) {
    for (int i = 0; i < L; ++i) {
      double least_fill = kInf;
      for (int v = 0; v < V; ++v) {
        for (int n = 1; i + n <= L && n <= options.largest(s, v); ++n) {
          const double after = fill_at(s + 1, i + n);
          if (after == kInf) continue;
          for (Recompute r : options.modes()) {
            const StageOption& o = options.at(s, v, n, r);
            if (o.total == kInf) continue;
            least_fill =
                std::min(least_fill, std::max(c.microbatches * o.total, o.work.forward_s + after));
          }
        }
      }
      fill_at(s, i) = least_fill;
    }
  }
  std::function<void(int, int, int, const FillBound&)> extend = [&](int s, int i, int alike,
                                                                    const FillBound& acc) {
    if (s == P) {
      if (i == L && (!c.mixed_tp || alike == kMixed)) {
        out.push_back({stages, acc.bound_s()});
        --budget->splits;
      }
      return;
    }
    if (--budget->nodes < 0 || budget->splits <= 0) {
      *complete = false;
      return;
    }
    const int left = L - i;
    if (left > room[static_cast<size_t>(s)]) return;
    const int least = s == P - 1 ? left : 1, most = s == P - 1 ? left : left - (P - s - 1);
    for (int v = 0; v < V; ++v) {
      for (int n = least; n <= std::min(most, options.largest(s, v)); ++n) {
        if (even && n != L / P) continue;
        for (Recompute r : options.modes()) {
          const StageOption& o = options.at(s, v, n, r);
          if (o.total == kInf) continue;
          FillBound next = acc;
          next.Add(o, c.microbatches, options.counts());
          if (next.bound_s() >= threshold_s) continue;
          const double rest = (L - i - n) * least_layer;
          if (next.forwards + next.backwards + rest + next.after >= threshold_s) continue;
          if (next.forwards + fill_at(s + 1, i + n) + next.after >= threshold_s) continue;
          const Config& lc = vs[static_cast<size_t>(v)].c;
          stages.push_back(
              {.first_layer = i, .layers = n, .tp = lc.tp, .dp = lc.dp, .recompute = r});
          extend(s + 1, i + n, Together(alike, v), next);
          stages.pop_back();
        }
      }
    }
  };
  extend(0, 0, kNoStage, FillBound{});
  return out;
}

// The least the slowest stage of any split can take: each stage holds at most the layers it runs
// within a time T and fits memory (in its cheapest variant and mode that fits; fewer layers fit
// wherever more do, and take less), and T is the least at which the stages hold them all. Stages
// between the first and the last are each granted the least-held memory of them, which only
// lowers the bound. kInf when no T does.
double LeastSlowestStage(const Job& job, const hw::Machine& m, const Config& c, const Variants& vs,
                         const std::vector<Recompute>& modes, const std::vector<int>& held) {
  const int P = c.pp, L = static_cast<int>(job.model.layers);
  struct Position {
    int held;
    bool first, last;
    int count;
    std::vector<double> work;  // cheapest fitting work of n layers, kInf if none fits
  };
  std::vector<Position> positions = {{held.front(), true, P == 1, 1, {}}};
  if (P > 2) {
    const int least = *std::min_element(held.begin() + 1, held.end() - 1);
    positions.push_back({least, false, false, P - 2, {}});
  }
  if (P > 1) positions.push_back({held.back(), false, true, 1, {}});
  std::vector<double> candidates;
  for (Position& pos : positions) {
    pos.work.assign(static_cast<size_t>(L) + 1, kInf);
    for (int n = 1; n <= L; ++n) {
      for (const Variant& v : vs) {
        for (Recompute r : modes) {
          const FittedStage f = FitStage(m, v, n, r, pos.held, pos.first, pos.last);
          if (f.fits) {
            pos.work[static_cast<size_t>(n)] =
                std::min(pos.work[static_cast<size_t>(n)], f.t.work.total());
          }
        }
      }
      if (pos.work[static_cast<size_t>(n)] == kInf) break;
      candidates.push_back(pos.work[static_cast<size_t>(n)]);
    }
  }
  auto holds = [&](double T) {
    int64_t layers = 0;
    for (const Position& pos : positions) {
      int n = 0;
      while (n < L && pos.work[static_cast<size_t>(n) + 1] <= T) ++n;
      if (n == 0) return false;
      layers += static_cast<int64_t>(n) * pos.count;
    }
    return layers >= L;
  };
  std::sort(candidates.begin(), candidates.end());
  const auto least = std::partition_point(candidates.begin(), candidates.end(),
                                          [&](double T) { return !holds(T); });
  return least == candidates.end() ? kInf : *least;
}

// Interleaved (and any even split): each rank the cheapest mode that fits it; none when some rank
// fits with no mode.
std::optional<std::vector<StagePlan>> EvenSplit(const Job& job, const hw::Machine& m,
                                                const Config& c, const Variants& k,
                                                const std::vector<Recompute>& modes,
                                                const Actions& actions) {
  // A rank's memory depends on its own chunks' mode only: each mode is tried on every rank at once.
  const int ranks = c.pp;
  std::vector<StagePlan> stages = EvenStages(job, c, modes.front());
  std::vector<bool> placed(static_cast<size_t>(ranks), false);
  for (Recompute mode : modes) {
    std::vector<StagePlan> trial = stages;
    for (int vs = 0; vs < ranks * c.virtual_stages; ++vs) {
      if (!placed[static_cast<size_t>(vs % ranks)]) trial[static_cast<size_t>(vs)].recompute = mode;
    }
    const Evaluated ev = MemoryOf(job, c, k, PlanOf(c, trial), actions);
    for (int r = 0; r < ranks; ++r) {
      if (placed[static_cast<size_t>(r)] ||
          ev.memory[static_cast<size_t>(r)].total() > m.gpu.memory_bytes) {
        continue;
      }
      placed[static_cast<size_t>(r)] = true;
      for (int chunk = 0; chunk < c.virtual_stages; ++chunk) {
        stages[Vs(chunk, ranks, r)].recompute = mode;
      }
    }
  }
  for (bool p : placed) {
    if (!p) return std::nullopt;
  }
  return stages;
}

std::vector<Recompute> ModesOf(const Fixed& fixed) {
  if (fixed.recompute) return {*fixed.recompute};
  return {std::begin(kModes), std::end(kModes)};
}

}  // namespace

ParallelPlan PlanOf(const Config& c, std::vector<StagePlan> stages) {
  return {.tp = c.tp,
          .pp = c.pp,
          .dp = c.dp,
          .cp = c.cp,
          .zero = c.zero,
          .sequence_parallel = c.sequence_parallel,
          .micro_batch = c.micro_batch,
          .microbatches = c.microbatches,
          .virtual_stages = c.virtual_stages,
          .schedule = c.schedule,
          .stages = std::move(stages)};
}

Config ConfigOf(const ParallelPlan& p) {
  const bool mixed = std::any_of(p.stages.begin(), p.stages.end(),
                                 [&](const StagePlan& s) { return s.tp != p.stages.front().tp; });
  return {.mixed_tp = mixed,
          .tp = p.tp,
          .pp = p.pp,
          .dp = p.dp,
          .cp = p.cp,
          .zero = p.zero,
          .sequence_parallel = p.sequence_parallel,
          .micro_batch = p.micro_batch,
          .microbatches = p.microbatches,
          .virtual_stages = p.virtual_stages,
          .schedule = p.schedule};
}

Family FamilyOf(const Config& c) {
  if (c.mixed_tp) return Family::kThreeD;
  if (c.pp == 1 && c.tp == 1) return c.zero >= 3 ? Family::kFsdp : Family::kDataParallel;
  if (c.pp == 1) return Family::kTensor;
  return c.tp == 1 ? Family::kPipeline : Family::kThreeD;
}

std::string_view FamilyName(Family f) {
  for (const FamilyRow& row : kFamilies) {
    if (row.family == f) return row.name;
  }
  return "?";
}

double JudgedPlan::peak_memory() const { return Peak(memory); }

JudgedPlan Judge(const Job& job, const hw::Machine& m, const ParallelPlan& plan) {
  const Config c = ConfigOf(plan);
  return JudgeWith(job, m, c, VariantsOf(job, m, c), plan,
                   ScheduleActions(c.schedule, c.pp, c.virtual_stages, c.microbatches));
}

std::vector<Config> StageVariants(const Job& job, const hw::Machine& m, const Config& c) {
  if (!c.mixed_tp) return {c};
  std::vector<Config> out;
  const int group = c.tp * c.dp;  // GPUs of a stage (times cp)
  const int64_t sequences = static_cast<int64_t>(c.micro_batch) * c.dp;  // a micro-batch's
  for (int t : Divisors(group)) {
    const int d = group / t;
    if (!Divides(t, job.model.heads) || !Divides(t, job.model.kv_heads)) continue;
    if (t > m.gpus_per_node() && !job.tp_across_nodes) continue;
    if (sequences % d != 0) continue;  // ZeRO over a group of one shards nothing
    Config v = c;
    v.mixed_tp = false;
    v.tp = t;
    v.dp = d;
    v.micro_batch = static_cast<int>(sequences / d);
    v.sequence_parallel = c.sequence_parallel && t > 1;
    out.push_back(v);
  }
  return out;
}

std::vector<Config> EnumerateConfigs(const Job& job, const hw::Machine& m, const Fixed& fixed) {
  std::vector<Config> out;
  const int n = m.num_gpus();
  const int64_t layers = job.model.layers, batch = job.global_batch;
  auto allowed = [](const std::optional<int>& f, int v) { return !f || *f == v; };
  for (int t : Divisors(n)) {
    if (!allowed(fixed.tp, t) || !Divides(t, job.model.heads) || !Divides(t, job.model.kv_heads)) {
      continue;
    }
    if (t > m.gpus_per_node() && !job.tp_across_nodes) continue;
    for (int cp : Divisors(n / t)) {
      if (!allowed(fixed.cp, cp) || (cp > 1 && !Divides(2LL * cp, job.seq_len))) continue;
      // Context parallelism is for long sequences: searched from 8k tokens, or where fixed.
      if (cp > 1 && !fixed.cp && job.seq_len < 8192) continue;
      for (int pp : Divisors(n / (t * cp))) {
        if (!allowed(fixed.pp, pp) || pp > layers) continue;
        const int dp = n / (t * cp * pp);
        if (!allowed(fixed.dp, dp) || !Divides(dp, batch)) continue;
        for (int b : Divisors(batch / dp)) {
          if (!allowed(fixed.micro_batch, b)) continue;
          const int64_t per_pipeline = batch / (static_cast<int64_t>(b) * dp);
          // A step of more micro-batches than this is no schedule anyone runs, and its action
          // orders would not fit in memory.
          if (per_pipeline > kMaxMicrobatches) continue;
          const int microbatches = static_cast<int>(per_pipeline);
          for (const ScheduleRow& row : sched::Schedules()) {
            if (fixed.schedule && *fixed.schedule != row.schedule) continue;
            // Without a pipeline there is one schedule; 1F1B names it.
            if (pp == 1 && row.schedule != Schedule::k1F1B) continue;
            std::vector<int> chunks{1};
            if (row.interleaves) {
              chunks.clear();
              if (microbatches % pp != 0) continue;
              for (int v : Divisors(layers / pp)) {
                if (v >= 2 && layers % (static_cast<int64_t>(pp) * v) == 0) chunks.push_back(v);
              }
            }
            for (int v : chunks) {
              if (!allowed(fixed.virtual_stages, v)) continue;
              for (int zero = 0; zero <= 3; ++zero) {
                if (!allowed(fixed.zero, zero) || (zero > 0 && dp * cp == 1)) continue;
                for (bool sp : {false, true}) {
                  if (sp && t == 1) continue;
                  if (fixed.sequence_parallel && *fixed.sequence_parallel != sp) continue;
                  const Config c{.tp = t,
                                 .pp = pp,
                                 .dp = dp,
                                 .cp = cp,
                                 .zero = zero,
                                 .sequence_parallel = sp,
                                 .micro_batch = b,
                                 .microbatches = microbatches,
                                 .virtual_stages = v,
                                 .schedule = row.schedule};
                  if (fixed.even_stages && layers % pp != 0) continue;
                  if (fixed.allow && !fixed.allow(c)) continue;
                  out.push_back(c);
                }
              }
            }
          }
        }
      }
    }
  }
  // Stages of their own (t, d), t x d the configuration's: one configuration for each set of
  // uniform ones with the same GPUs a stage and sequences a micro-batch, named by its variant of
  // least TP (with SP, of least TP above 1). A pipeline's stages only, not interleaved.
  if (fixed.tp || fixed.dp || fixed.micro_batch || fixed.even_stages || fixed.allow) return out;
  const size_t uniform = out.size();
  for (size_t i = 0; i < uniform; ++i) {
    Config c = out[i];
    if (c.pp < 2 || c.virtual_stages > 1) continue;
    c.mixed_tp = true;
    const std::vector<Config> variants = StageVariants(job, m, c);
    if (variants.size() < 2) continue;
    const auto named = std::find_if(variants.begin(), variants.end(), [&](const Config& v) {
      return v.tp > 1 || !c.sequence_parallel;
    });
    if (named != variants.end() && named->tp == c.tp) out.push_back(c);
  }
  return out;
}

SearchResult Search(const Job& job, const hw::Machine& m, const Fixed& fixed) {
  SearchResult result;
  const std::vector<Config> configs = EnumerateConfigs(job, m, fixed);
  result.configurations = static_cast<int64_t>(configs.size());
  const std::vector<Recompute> modes = ModesOf(fixed);
  struct Candidate {
    double bound;
    size_t index;
  };
  std::vector<Candidate> order;
  std::vector<Variants> variants;
  variants.reserve(configs.size());
  for (size_t i = 0; i < configs.size(); ++i) {
    const Config& c = configs[i];
    variants.push_back(VariantsOf(job, m, c));
    // The micro-batches' work spread evenly over the ranks bounds the step; some rank holds at
    // least the average of the parameters: if even that does not fit, no split does. Under
    // stages of their own (t, d), each piece (a layer, the embedding, the head) at its least
    // over the variants, and the least average.
    const Variants& vs = variants.back();
    const int L = static_cast<int>(job.model.layers);
    double work = 0, average = kInf;
    if (vs.size() == 1) {
      work = TermsOf(vs[0].k, vs[0].c, L, Recompute::kNone, true, true).work.total();
    } else {
      double layer = kInf, embedding = kInf, head = kInf;
      for (const Variant& v : vs) {
        layer = std::min(layer, v.k.layer[static_cast<size_t>(Recompute::kNone)].total());
        embedding = std::min(embedding, v.k.embedding.total());
        head = std::min(head, v.k.head.total());
      }
      work = L * layer + embedding + head;
    }
    for (const Variant& v : vs) {
      const double parameters = TermsOf(v.k, v.c, L, Recompute::kNone, true, true).parameters;
      average =
          std::min(average, ResidentMemory(v.c, parameters / c.pp, v.k.layer_parameters).total());
    }
    const double bound = c.microbatches * work / c.pp;
    if (average > m.gpu.memory_bytes) continue;
    order.push_back({bound, i});
  }
  // Uniform configurations first, by bound: their best bounds the mixed ones, which only win by
  // beating every layout of their own.
  std::sort(order.begin(), order.end(), [&](const Candidate& a, const Candidate& b) {
    const bool ma = configs[a.index].mixed_tp, mb = configs[b.index].mixed_tp;
    if (ma != mb) return mb;
    return a.bound != b.bound ? a.bound < b.bound : a.index < b.index;
  });
  std::vector<std::optional<JudgedPlan>> best(std::size(kFamilies));
  // The best of every family so far.
  auto fastest = [&] {
    double out = kInf;
    for (const auto& b : best) {
      if (b) out = std::min(out, b->iteration_s);
    }
    return out;
  };
  BelowBudget budget;
  std::vector<const Candidate*> second_pass;
  // A configuration's DP front judged (and, with a pipeline, kept for later); or, `past_front`,
  // every split of it whose bound is below the best of every family judged, within the budget.
  // That second pass comes after the first, when the best is known: a family's best (an
  // alternative) is then the DP's, the best plan proved.
  auto visit = [&](const Candidate& cand, bool past_front) {
    const Config& c = configs[cand.index];
    const auto f = static_cast<size_t>(FamilyOf(c));
    const double threshold = past_front ? fastest() : best[f] ? best[f]->iteration_s : kInf;
    if (cand.bound >= threshold) return;
    const Actions actions = ScheduleActions(c.schedule, c.pp, c.virtual_stages, c.microbatches);
    const Variants& vs = variants[cand.index];
    // Splits by their bound, least first: past the best so far, none can win.
    auto judge = [&](std::vector<Split> splits) {
      std::stable_sort(splits.begin(), splits.end(),
                       [](const Split& a, const Split& b) { return a.bound_s < b.bound_s; });
      for (Split& split : splits) {
        if (best[f] && split.bound_s >= best[f]->iteration_s) break;
        JudgedPlan j = JudgeWith(job, m, c, vs, PlanOf(c, std::move(split.stages)), actions);
        ++result.judged;
        if (!j.fits) continue;
        if (!best[f] || j.iteration_s < best[f]->iteration_s) best[f] = std::move(j);
      }
    };
    if (c.virtual_stages > 1) {
      if (auto even = EvenSplit(job, m, c, vs, modes, actions)) judge({{std::move(*even), 0}});
      return;
    }
    const int L = static_cast<int>(job.model.layers);
    const std::vector<int> held = HeldMicrobatches(actions, RowOf(c.schedule).splits_backward);
    // A mixed configuration whose stages cannot hold the layers, or whose least slowest stage runs
    // every micro-batch for longer than the best so far takes, cannot win.
    if (vs.size() > 1) {
      const double slowest = LeastSlowestStage(job, m, c, vs, modes, held);
      if (slowest == kInf || c.microbatches * slowest >= threshold) return;
    }
    const StageOptions options(job, m, c, vs, modes, held, actions, threshold / c.microbatches);
    std::vector<Split> splits;
    bool proved = true;
    if (past_front) {
      splits = SplitsBelow(c, vs, options, L, fixed.even_stages, threshold, &budget, &proved);
    } else {
      splits = ParetoSplits(c, vs, options, L, fixed.even_stages, threshold);
    }
    judge(std::move(splits));
    if (!proved) ++result.unproved;
    if (!past_front && c.pp > 1) second_pass.push_back(&cand);
  };
  for (const Candidate& cand : order) visit(cand, false);
  for (const Candidate* cand : second_pass) visit(*cand, true);
  for (auto& b : best) {
    if (!b) continue;
    if (!result.best || b->iteration_s < result.best->iteration_s) result.best = *b;
    result.family_best.push_back(std::move(*b));
  }
  if (!result.best) {
    // Nothing fits: the plan needing least memory per GPU (every stage recomputing in full).
    for (size_t i = 0; i < configs.size(); ++i) {
      const Config& c = configs[i];
      if (c.mixed_tp) continue;  // its variants are uniform configurations of their own
      ParallelPlan plan = PlanOf(c, EvenStages(job, c, modes.back()));
      const Actions actions = ScheduleActions(c.schedule, c.pp, c.virtual_stages, c.microbatches);
      const double peak = Peak(MemoryOf(job, c, variants[i], plan, actions).memory);
      if (!result.least_memory || peak < result.least_memory->peak_memory()) {
        result.least_memory = JudgeWith(job, m, c, variants[i], std::move(plan), actions);
      }
    }
  }
  return result;
}

}  // namespace dplace::job
