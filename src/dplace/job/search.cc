#include "dplace/job/search.h"

#include <algorithm>
#include <cmath>
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
  if (!RowOf(c.schedule).splits_weight_gradient) {
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
  std::vector<std::vector<Action>> actions;
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
  const bool split = RowOf(c.schedule).splits_weight_gradient;
  for (int vs_index = 0; vs_index < stages; ++vs_index) {
    const StagePlan& sp = plan.stages[static_cast<size_t>(vs_index)];
    const Variant& v = VariantOf(vs, sp);
    ev.terms.push_back(
        TermsOf(v.k, v.c, sp.layers, sp.recompute, vs_index == 0, vs_index == stages - 1));
  }
  ev.actions = actions;
  for (int r = 0; r < ranks; ++r) {
    double parameters = 0;
    for (int chunk = 0; chunk < c.virtual_stages; ++chunk) {
      parameters += ev.terms[Vs(chunk, ranks, r)].parameters;
    }
    const Variant& v = VariantOf(vs, plan.stages[static_cast<size_t>(r)]);
    Memory mem = ResidentMemory(v.c, parameters, v.k.layer_parameters);
    double now = 0;
    for (const Action& a : ev.actions[static_cast<size_t>(r)]) {
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
  const std::vector<double> ends =
      SimulateActions(ev.actions, work, ranks, c.virtual_stages, send_s);
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

// Piper's DP (Tarnawski et al. 2021) for one configuration without virtual stages: every split
// into pp contiguous stages with a recomputation mode each that fits memory and is Pareto-optimal
// in (slowest stage, sum of stages), stage s in layout layouts[s].
// Each split comes with a lower bound on its step, so the caller can skip those that cannot win;
// stages of `cutoff_s` or more are left out (the slowest stage runs every micro-batch, so such a
// split takes at least microbatches x cutoff_s).
struct Split {
  std::vector<StagePlan> stages;
  double bound_s = 0;
};

std::vector<Split> ParetoSplits(const Job& job, const hw::Machine& m, const Config& c,
                                const std::vector<const Variant*>& layouts,
                                const std::vector<Recompute>& modes, bool even,
                                const Actions& actions, double cutoff_s) {
  const int P = c.pp, L = static_cast<int>(job.model.layers);
  const std::vector<int> held = HeldMicrobatches(actions, RowOf(c.schedule).splits_weight_gradient);
  // The step ends with the slowest rank's optimizer step and weight gathers after the pipeline:
  // the most of those over the stages is the front's third dimension.
  struct Point {
    double max, sum, after;
    int prev;  // index in the front of (s - 1, i - n)
    int n;
    Recompute r;
  };
  // fronts[s][i]: the first s stages hold layers [0, i).
  std::vector<std::vector<std::vector<Point>>> fronts(
      static_cast<size_t>(P + 1), std::vector<std::vector<Point>>(static_cast<size_t>(L + 1)));
  fronts[0][0].push_back({0, 0, 0, -1, 0, Recompute::kNone});
  for (int s = 0; s < P; ++s) {
    const bool first = s == 0, last = s == P - 1;
    const Variant& layout = *layouts[static_cast<size_t>(s)];
    // What a stage of n layers with mode r costs here, and whether it fits.
    std::vector<double> cost(static_cast<size_t>(L + 1) * 3, kInf), after(cost.size(), 0);
    int largest = 0;  // work and memory grow with the layers: past the largest that fits, none does
    for (int n = 1; n <= L; ++n) {
      for (Recompute r : modes) {
        const StageTerms t = TermsOf(layout.k, layout.c, n, r, first, last);
        const double bytes =
            ResidentMemory(layout.c, t.parameters, layout.k.layer_parameters).total() +
            held[static_cast<size_t>(s)] * t.activation_bytes;
        // A stage slower than the cutoff cannot be in a plan that beats the best so far.
        if (bytes <= m.gpu.memory_bytes && t.work.total() < cutoff_s) {
          cost[static_cast<size_t>(n) * 3 + static_cast<int>(r)] = t.work.total();
          after[static_cast<size_t>(n) * 3 + static_cast<int>(r)] = AfterS(layout.k, t.parameters);
          largest = n;
        }
      }
    }
    for (int i = s; i <= L; ++i) {
      const auto& from = fronts[static_cast<size_t>(s)][static_cast<size_t>(i)];
      if (from.empty()) continue;
      const int most = std::min(L - i - (P - s - 1), last ? L : largest);
      if (last && L - i > largest) continue;
      for (int n = last ? most : 1; n <= most; ++n) {
        if (even && n != L / P) continue;
        for (Recompute r : modes) {
          const size_t option = static_cast<size_t>(n) * 3 + static_cast<int>(r);
          const double w = cost[option];
          if (w == kInf) continue;
          auto& to =
              fronts[static_cast<size_t>(s) + 1][static_cast<size_t>(i) + static_cast<size_t>(n)];
          for (size_t p = 0; p < from.size(); ++p) {
            to.push_back({std::max(from[p].max, w), from[p].sum + w,
                          std::max(from[p].after, after[option]), static_cast<int>(p), n, r});
          }
        }
      }
    }
    // Keep each front's Pareto-optimal points.
    for (auto& front : fronts[static_cast<size_t>(s) + 1]) {
      std::sort(front.begin(), front.end(), [](const Point& a, const Point& b) {
        if (a.max != b.max) return a.max < b.max;
        return a.sum != b.sum ? a.sum < b.sum : a.after < b.after;
      });
      // Sorted by max, a point is dominated when one kept before it is no worse in the others.
      std::vector<Point> kept;
      for (const Point& p : front) {
        const bool dominated = std::any_of(kept.begin(), kept.end(), [&](const Point& q) {
          return q.sum <= p.sum && q.after <= p.after;
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
    int i = L, idx = static_cast<int>(p);
    for (int s = P; s > 0; --s) {
      const Point& pt =
          fronts[static_cast<size_t>(s)][static_cast<size_t>(i)][static_cast<size_t>(idx)];
      const Config& lc = layouts[static_cast<size_t>(s - 1)]->c;
      stages[static_cast<size_t>(s - 1)] = {
          .first_layer = i - pt.n, .layers = pt.n, .tp = lc.tp, .dp = lc.dp, .recompute = pt.r};
      i -= pt.n;
      idx = pt.prev;
    }
    // Stage s runs every micro-batch's tasks after the stages before it ran the first one's
    // forwards, and its forwards and backwards before they run the last one's backwards (its
    // weight gradients, when apart, may run meanwhile); the slowest rank's optimizer step comes
    // after.
    double pipeline = 0, forwards = 0, backwards = 0;
    for (int s = 0; s < P; ++s) {
      const StagePlan& sp = stages[static_cast<size_t>(s)];
      const Variant& layout = *layouts[static_cast<size_t>(s)];
      const Work w = TermsOf(layout.k, layout.c, sp.layers, sp.recompute, s == 0, s == P - 1).work;
      const double m_tasks = c.microbatches * w.total();
      const double m_fb = c.microbatches * (w.forward_s + w.backward_s);
      pipeline = std::max(pipeline, forwards + std::max(m_tasks, m_fb + backwards));
      forwards += w.forward_s;
      backwards += w.backward_s;
    }
    out.push_back({std::move(stages), pipeline + final_front[p].after});
  }
  return out;
}

// The least the slowest stage of any split in `layouts` can take: each stage holds at most the
// layers it runs within a time T and fits memory (in its cheapest mode that fits; fewer layers
// fit wherever more do, and take less), and T is the least at which the stages hold them all.
// Stages between the first and the last share a layout: each is granted the least-held memory
// of them, which only lowers the bound. kInf when no T does.
double LeastSlowestStage(const Job& job, const hw::Machine& m, const Config& c,
                         const std::vector<const Variant*>& layouts,
                         const std::vector<Recompute>& modes, const std::vector<int>& held) {
  const int P = c.pp, L = static_cast<int>(job.model.layers);
  struct Position {
    const Variant* layout;
    int held;
    bool first, last;
    int count;
    std::vector<double> work;  // cheapest fitting work of n layers, kInf if none fits
  };
  std::vector<Position> positions = {{layouts.front(), held.front(), true, P == 1, 1, {}}};
  if (P > 2) {
    const int least = *std::min_element(held.begin() + 1, held.end() - 1);
    positions.push_back({layouts[1], least, false, false, P - 2, {}});
  }
  if (P > 1) positions.push_back({layouts.back(), held.back(), false, true, 1, {}});
  std::vector<double> candidates;
  for (Position& pos : positions) {
    pos.work.assign(static_cast<size_t>(L) + 1, kInf);
    for (int n = 1; n <= L; ++n) {
      for (Recompute r : modes) {
        const StageTerms t = TermsOf(pos.layout->k, pos.layout->c, n, r, pos.first, pos.last);
        const double bytes =
            ResidentMemory(pos.layout->c, t.parameters, pos.layout->k.layer_parameters).total() +
            pos.held * t.activation_bytes;
        if (bytes <= m.gpu.memory_bytes) {
          pos.work[static_cast<size_t>(n)] =
              std::min(pos.work[static_cast<size_t>(n)], t.work.total());
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

// The stage layouts a mixed configuration searches: the first and the last stage (embedding,
// head) each in any variant, the stages between in one, not all stages alike (those are the
// uniform configurations' plans); a uniform configuration its one layout.
std::vector<std::vector<const Variant*>> LayoutsOf(const Config& c, const Variants& vs) {
  const size_t P = static_cast<size_t>(c.pp);
  if (vs.size() == 1) return {std::vector<const Variant*>(P, &vs[0])};
  std::vector<std::vector<const Variant*>> out;
  const size_t middles = P > 2 ? vs.size() : 1;
  for (const Variant& first : vs) {
    for (size_t mid = 0; mid < middles; ++mid) {
      for (const Variant& last : vs) {
        std::vector<const Variant*> l(P, &vs[mid]);
        l.front() = &first;
        l.back() = &last;
        const bool alike =
            std::all_of(l.begin(), l.end(), [&](const Variant* v) { return v == l.front(); });
        if (!alike) out.push_back(std::move(l));
      }
    }
  }
  return out;
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
          for (const ScheduleRow& row : kSchedules) {
            if (fixed.schedule && *fixed.schedule != row.schedule) continue;
            // Without a pipeline there is one schedule; 1F1B names it.
            if (pp == 1 && row.schedule != Schedule::kOneFOneB) continue;
            std::vector<int> chunks{1};
            if (row.virtual_stages) {
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
  for (const Candidate& cand : order) {
    const Config& c = configs[cand.index];
    const auto f = static_cast<size_t>(FamilyOf(c));
    if (best[f] && cand.bound >= best[f]->iteration_s) continue;
    const Actions actions = ScheduleActions(c.schedule, c.pp, c.virtual_stages, c.microbatches);
    const Variants& vs = variants[cand.index];
    std::vector<Split> splits;
    if (c.virtual_stages == 1) {
      const double cutoff = best[f] ? best[f]->iteration_s / c.microbatches : kInf;
      const std::vector<int> held =
          HeldMicrobatches(actions, RowOf(c.schedule).splits_weight_gradient);
      for (const std::vector<const Variant*>& layouts : LayoutsOf(c, vs)) {
        // A layout whose stages cannot hold the layers, or whose least slowest stage runs every
        // micro-batch for longer than the best so far takes, cannot win.
        if (vs.size() > 1) {
          const double slowest = LeastSlowestStage(job, m, c, layouts, modes, held);
          if (slowest == kInf) continue;
          if (best[f] && c.microbatches * slowest >= best[f]->iteration_s) continue;
        }
        std::vector<Split> more =
            ParetoSplits(job, m, c, layouts, modes, fixed.even_stages, actions, cutoff);
        std::move(more.begin(), more.end(), std::back_inserter(splits));
      }
      std::stable_sort(splits.begin(), splits.end(),
                       [](const Split& a, const Split& b) { return a.bound_s < b.bound_s; });
    } else if (auto even = EvenSplit(job, m, c, vs, modes, actions)) {
      splits.push_back({std::move(*even), 0});
    }
    // Splits by their bound, least first: past the best so far, none can win.
    for (Split& split : splits) {
      if (best[f] && split.bound_s >= best[f]->iteration_s) break;
      JudgedPlan j = JudgeWith(job, m, c, vs, PlanOf(c, std::move(split.stages)), actions);
      ++result.judged;
      if (!j.fits) continue;
      if (!best[f] || j.iteration_s < best[f]->iteration_s) best[f] = std::move(j);
    }
  }
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
