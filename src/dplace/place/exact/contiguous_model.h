// The contiguous max-load problem of Tarnawski et al., NeurIPS 2020, in the form their DP and
// dplace's exact placers work on: units (co-location classes, backward ops with their forward ops)
// forming a DAG over the forward edges; a contiguous split assigns to each device a difference of
// two ideals (downward-closed unit sets) of that DAG.
//
// The units are made exactly as the paper's program makes them, so that dplace's optima are optima
// of the same problem: contract co-location classes; give backward-only classes an artificial
// forward position mirrored from their backward edges; fuse strongly connected classes; merge
// zero-time forward leaves into their one neighbour. Devices: the accelerators (every non-CPU
// device) must be identical, as must the CPUs; links are taken as uniform (the paper's setting).
#pragma once

#include <algorithm>
#include <vector>

#include "dplace/base/status.h"
#include "dplace/cost/collectives.h"
#include "dplace/sim/problem.h"

namespace dplace::place {

struct ContiguousModel {
  struct Tensor {
    graph::TensorId id;  // in the graph
    int producer;        // unit
    double cost;         // transfer cost when it crosses a device boundary
    // Under 1F1B, of a forward op's output (0 for other tensors): the storage bytes the
    // producing stage holds per micro-batch when a backward op there keeps it or a forward op
    // elsewhere reads it, and the bytes a reading stage holds (its copy).
    double kept_bytes = 0, copy_bytes = 0;
    bool producer_keeps = false;      // a backward op of the producing unit reads it
    std::vector<char> consumer_kind;  // per consumer unit: 1 a forward op reads it, 2 a backward
    int forward_consumers = 0;        // consumer units with a forward reader
    std::vector<int> consumers;       // distinct units other than the producer
  };

  int num_units = 0;
  std::vector<std::vector<sim::OpId>> unit_ops;
  sim::PerOp<int> unit_of_op;
  std::vector<std::vector<int>> preds;  // forward DAG over units, units numbered topologically
  std::vector<double> accel_s, cpu_s, bytes;
  // With Problem::StageMemory::k1F1B: per unit, what stays for the step and what a stage holds per
  // micro-batch in flight of the tensors only the unit reads (the others: Tensor's kept_bytes and
  // copy_bytes, by where their readers are); a stage's memory is then resident + in-flight x
  // (held + what it holds of the tensors crossing units), the simulator's HeldPerMicrobatch.
  std::vector<double> resident, held;
  std::vector<double> held_selective;  // held less what attention's core makes (kSelective)
  bool pipeline_memory = false;
  sim::PipelineSchedule schedule = sim::PipelineSchedule::k1F1B;
  sim::Recompute recompute = sim::Recompute::kNone;
  int microbatches = 8;
  int chunks = 1;  // under the interleaved schedule, chunks a device: the accelerators are chunks
  // Micro-batches in flight on accelerator `index` of `k` (the DP's order: k - index under 1F1B,
  // counting every accelerator a stage; sim::InFlight), and at least as few as any stage holds.
  int InFlight(int index, int k) const {
    return sim::InFlight(schedule, index, k, microbatches, chunks);
  }
  int FewestInFlight() const {
    return schedule == sim::PipelineSchedule::kGPipe ? microbatches : 1;
  }
  std::vector<char> accel_ok, cpu_ok;  // every op of the unit may run there
  std::vector<Tensor> tensors;         // tensors with at least one consumer in another unit
  std::vector<std::vector<int>> produced, consumed;  // per unit: indices into `tensors`
  std::vector<std::vector<char>> consumed_kind;      // per consumed entry: Tensor::consumer_kind
  std::vector<sim::DeviceId> accelerators, cpus;
  double accel_memory_bytes = 0;  // the most of any accelerator's
  // Accelerators of several classes (kind, speed and memory; dp only, the integer programs take
  // one): per accelerator its class, 0 the first's; per class after the first, per unit, its time
  // there (accel_s is the first class's); per class its memory. The DP's stages run on the
  // accelerators in the problem's order, and may leave any out.
  std::vector<int> accel_class;
  std::vector<std::vector<double>> class_accel_s;
  std::vector<double> class_memory_bytes;
  bool Heterogeneous() const { return class_memory_bytes.size() > 1; }
  double MemoryOf(int accelerator) const {
    return class_memory_bytes[static_cast<size_t>(accel_class[static_cast<size_t>(accelerator)])];
  }
  // Replicas (Piper, Tarnawski et al. 2021): per accelerator, the replicas its device stands for
  // (hw::Device::replicas, a grouped problem's fixed degrees); with choose_replicas
  // (Problem::replicas_auto) the DP instead gives a stage d consecutive accelerators, its replicas.
  // A stage of d replicas runs every d-th micro-batch on each (sim/pipeline_sim.h): a d-th of its
  // load a micro-batch, plus its ring all-reduce of `gradient_bytes` over `replica_link` spread
  // over the step's micro-batches (StageLoad), and holds ceil(InFlight / d) micro-batches, counting
  // every replica before it a stage.
  std::vector<int> accel_replicas;
  bool choose_replicas = false;
  std::vector<double> gradient_bytes;  // per unit: its backward ops' weight gradients
  std::vector<hw::Link>
      replica_link;               // per accelerator; with choose_replicas, the links among them
  std::vector<int> lanes_before;  // per accelerator and one past: replicas before it
  // Micro-batches a replica holds of the stage whose first accelerator is `first`, of `replicas`.
  int InFlightOn(int first, int replicas) const {
    const int n = InFlight(lanes_before[static_cast<size_t>(first)], lanes_before.back());
    return (n + replicas - 1) / replicas;
  }
  // What a stage of `replicas` over `link` adds up to, linear in its load and gradients (the
  // ILPs' coefficients): load x share + gradients x per_gradient_byte + fixed, the ring
  // all-reduce (2(d-1)/d of the gradients over the link, 2(d-1) latencies) over the micro-batches.
  struct ReplicaTerms {
    double share = 1, per_gradient_byte = 0, fixed = 0;
    double Of(double load, double gradients) const {
      return load * share + gradients * per_gradient_byte + fixed;
    }
  };
  ReplicaTerms TermsOf(int replicas, const hw::Link& link) const {
    if (replicas <= 1) return {};
    // The ring all-reduce is affine in its bytes: its value at 0 bytes and its slope.
    const double fixed = cost::RingAllReduceTime(0, replicas, link);
    return {
        .share = 1.0 / replicas,
        .per_gradient_byte = (cost::RingAllReduceTime(1, replicas, link) - fixed) / microbatches,
        .fixed = fixed / microbatches};
  }
  ReplicaTerms AccelTerms(int index) const {
    const auto i = static_cast<size_t>(index);
    return TermsOf(accel_replicas[i], replica_link[i]);
  }
  // The load of a set of `load` (compute and transfers a micro-batch) and `gradients` on
  // accelerator `index`, with its replicas.
  double AccelLoad(double load, double gradients, int index) const {
    return AccelTerms(index).Of(load, gradients);
  }
  double StageLoad(double load, double gradients, int replicas, const hw::Link& link) const {
    return TermsOf(replicas, link).Of(load, gradients);
  }
  // Whether every accelerator stands for as many replicas over the same link (their order then
  // does not matter).
  bool UniformReplicas() const {
    for (size_t i = 1; i < accel_replicas.size(); ++i) {
      if (accel_replicas[i] != accel_replicas[0] ||
          replica_link[i].bandwidth_bytes_per_s != replica_link[0].bandwidth_bytes_per_s ||
          replica_link[i].latency_s != replica_link[0].latency_s)
        return false;
    }
    return true;
  }
};

// InvalidInput when the problem is not of the paper's form (objective step, accelerators
// or CPUs not identical). With `for_contiguity` false the units are just the co-location classes
// (no mirroring, fusion or merging) and `preds` is left empty: the model of non-contiguous splits.
StatusOr<ContiguousModel> BuildContiguousModel(const sim::Problem& problem,
                                               bool for_contiguity = true);

// Load of a growing set of units, updated unit by unit (add and undo in reverse order): compute
// time on an accelerator and on a CPU, memory, and communication (every tensor crossing the set's
// border, counted once, as the max-load model does). `fixed` units never join the set during its
// life; the communication of tensors they produce into the set can only grow, so it bounds every
// superset.
class UnitSetLoad {
 public:
  explicit UnitSetLoad(const ContiguousModel& model);
  void Reset(const std::vector<char>* fixed);  // empty set; `fixed` may be null
  void Add(int unit);
  void Undo(int unit);  // must be the unit added last

  // Memory of the set as a stage with `in_flight` micro-batches in flight (op sizes: `bytes`).
  // Under 1F1B, per micro-batch, the simulator's HeldPerMicrobatch: what backward keeps, what
  // the set sends and what it receives (a storage kept and sent counted once). Recomputing
  // attention's core (sim::Recompute::kSelective), what it keeps of the rest per micro-batch and
  // the core's outputs of one; recomputing everything (kFull), what crosses its border per
  // micro-batch (the simulator's HeldWhenRecomputing: what it receives and what it sends) and
  // one micro-batch in full; kAuto the least of the three.
  double MemoryAt(int in_flight) const {
    if (!m_.pipeline_memory) return bytes;
    const double keep = resident + in_flight * (held + boundary);
    const double selective =
        resident + in_flight * (held_selective + boundary) + held - held_selective;
    const double recompute = resident + in_flight * boundary + held + boundary;
    switch (m_.recompute) {
      case sim::Recompute::kNone:
        return keep;
      case sim::Recompute::kSelective:
        return selective;
      case sim::Recompute::kFull:
        return recompute;
      case sim::Recompute::kAuto:
        break;
    }
    return std::min({keep, selective, recompute});
  }
  // What MemoryAt is never below for any superset of the set (what the set holds of the tensors
  // crossing units may shrink as it grows): for pruning.
  double MemoryFloorAt(int in_flight) const {
    if (!m_.pipeline_memory) return bytes;
    switch (m_.recompute) {
      case sim::Recompute::kNone:
        return resident + in_flight * held;
      case sim::Recompute::kSelective:
        return resident + in_flight * held_selective + held - held_selective;
      case sim::Recompute::kFull:
        return resident + held;
      case sim::Recompute::kAuto:
        break;
    }
    return resident + held;
  }

  // The set's compute on accelerator `index` (of its class), and on the fastest class.
  double AccelS(int index) const {
    const int c = m_.accel_class[static_cast<size_t>(index)];
    return c == 0 ? accel_s : class_s[static_cast<size_t>(c - 1)];
  }
  double FastestAccelS() const {
    double least = accel_s;
    for (double s : class_s) least = std::min(least, s);
    return least;
  }

  double accel_s = 0, cpu_s = 0, bytes = 0, resident = 0, held = 0, gradient_bytes = 0;
  std::vector<double> class_s;     // per accelerator class after the first: what accel_s is there
  double held_selective = 0;       // held less what attention's core makes
  double boundary = 0;             // what the set holds of the tensors crossing units
  double comm = 0;                 // every crossing tensor
  double fixed_comm = 0;           // crossing tensors produced by fixed units (monotone under Add)
  int not_accel = 0, not_cpu = 0;  // units in the set that may not run there

 private:
  bool Crossing(int t) const;
  double Holds(int t) const;  // bytes the set holds per micro-batch of tensor t
  void Toggle(int unit, double sign);

  const ContiguousModel& m_;
  const std::vector<char>* fixed_ = nullptr;
  std::vector<char> in_;
  std::vector<int> inside_consumers_;
  std::vector<int> inside_forward_, inside_backward_;  // per tensor: consumer units in the set
  int size_ = 0;                                       // units in the set
};

}  // namespace dplace::place
