// The step simulator: a discrete-event simulation of one training/inference step of a placed graph,
// with memory accounting. Semantics (DESIGN.md §3, docs/semantics.md):
//  - a device runs one op at a time; an op is ready when every input tensor is present on its
//  device;
//  - an idle device starts, among its ready ops, the one that became ready first (ties: lower op
//  id); under the eager runtime (StepModel::issue kProgramOrder) it starts its ops in program
//  order instead, and ops on CPU devices run on the thread that issues every op (step_model.h);
//  - when an op ends, each output tensor is sent once to every other device hosting a consumer; a
//    transfer occupies the directed channel src -> dst for latency + bytes / bandwidth (or the
//    tensor's measured transfer time), one transfer at a time, first come first served; the
//    problem's StepModel may make the channel one bus per source device, and latency a delay of
//    the arrival that does not hold the channel (step_model.h);
//  - memory: parameters resident all step; outputs allocated at producer start, freed when the last
//    local consumer ends and outgoing transfers are done (outputs nobody consumes stay to the end);
//    a received copy is allocated at transfer start and freed when its last consumer there ends;
//    scratch is held while the op runs;
//  - makespan = end of the last op or transfer.
// Under the eager runtime with the module rule (Problem::mapped_modules) every run simulates the
// placement as dispatched (sim::Dispatched): a parent module's own ops run where it or their
// inputs are, whatever the placement says of them.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <vector>

#include "dplace/sim/evaluation.h"

namespace dplace::sim {

struct StepOptions {
  bool record_timeline = false;  // fill StepResult::timeline (costs time and memory)
};

struct StepResult {
  Evaluation evaluation;
  Timeline timeline;  // empty unless StepOptions::record_timeline
};

// Reusable simulator for one problem: buffers are kept between runs, so search does not allocate.
class StepSimulator {
 public:
  explicit StepSimulator(const Problem& problem);
  // Simulates a placement that passed CheckShape. Constraint or memory violations make the result
  // infeasible with a reason; the makespan is computed all the same.
  StepResult Run(const Placement& placement, const StepOptions& options = {});
  // Makespan only, without feasibility checks.
  double Makespan(const Placement& placement);

  // Incremental simulation, for search. SetBase simulates `base` and keeps checkpoints of the
  // simulator's state along the way (about 32, fewer for huge graphs). RunNear(p) then returns
  // exactly what Run(p) returns, but re-simulates only from the last checkpoint before the first
  // moment an op placed differently from the base is looked at (the end of its earliest producer,
  // in the base run); until then both runs are the same event for event. A move late in the step
  // costs little; a move of a source op costs a full run. SetBase with a placement near the
  // current base re-simulates from a checkpoint too.
  void SetBase(const Placement& base);
  StepResult RunNear(const Placement& placement);
  // RunNear that gives up as soon as the step is sure to take longer than `give_up_above`: when
  // an op starts so late that the ops after it, each at its fastest, end after that, or that its
  // device's ops not yet started, one after another, end after that. A run given up on returns an
  // infeasible evaluation whose value is that lower bound (and no devices).
  // Searches pass the worst step time they would still accept.
  StepResult RunNear(const Placement& placement, double give_up_above);

  // The ops of `placement`'s critical path, the last to end first: from the op that ends last,
  // back through what each op waited for, which is its input that arrived last (its producer, or
  // the transfer and what that waited for: the producer or the transfer ahead of it on its
  // channel), else the op before it on its device. Simulates the placement in full; the base of
  // RunNear is kept.
  std::vector<OpId> CriticalPath(const Placement& placement);
  // Run, and per op its start and end and the critical path of that run (one simulation).
  Evaluation RunTimed(const Placement& placement, Timing* timing);

 private:
  // 16 bytes, so the heap moves little memory. `seq` orders simultaneous events by creation (a run
  // creates fewer than 2^32 events: about three per op); `code` = index * 2 + type.
  struct Event {
    double time;
    uint32_t seq;
    int32_t code;
  };
  struct Transfer {
    graph::TensorId tensor;
    DeviceId src, dst;
    double start, end;  // end: when the tensor has arrived
    double free;        // when the channel is free again (end, unless latency is kArrival)
    int32_t remaining;  // consumers on dst that have not ended
  };
  // Everything a run changes: a checkpoint is a copy of it, taken between two event times.
  struct State {
    double now = 0;  // time of the last events handled
    int64_t ops_ended = 0;
    std::vector<Event> events;  // binary heap, earliest (time, seq) on top
    uint32_t seq = 0;
    IdVector<DeviceId, std::vector<std::pair<double, OpId>>> ready;  // min-heaps
    IdVector<DeviceId, char> busy, dirty;
    std::vector<DeviceId> dirty_list;
    std::vector<double> channel_free;  // [Channel(src, dst)]
    // Per channel: its transfers in request order; those before head have left the channel.
    std::vector<std::vector<int32_t>> channel_queue;
    std::vector<size_t> channel_head;
    IdVector<OpId, int32_t> pending;  // inputs not yet present
    IdVector<OpId, double> start;
    IdVector<graph::TensorId, int32_t> local_remaining, out_pending;
    std::vector<int32_t> input_copy;  // per op input slot: transfer index, or -1 when local
    std::vector<Transfer> transfers;
    // Per device: bytes of outputs, copies and scratch held now and at most (parameters are
    // resident all step and added when reporting), seconds of compute.
    IdVector<DeviceId, double> memory, peak, busy_s;
    // Per device: seconds of compute of the ops started (for giving up early).
    IdVector<DeviceId, double> work_started;
    // Eager runtime: per device, how many of its ops (order_) have started; how many host ops
    // (host_order_) have ended.
    IdVector<DeviceId, int32_t> started;
    int32_t host_ended = 0;
    double makespan = 0;
  };

  void Reset(const Placement& placement, Timeline* timeline);
  // Runs events until none is left; with `record`, keeps a checkpoint every
  // checkpoint_interval_ ended ops.
  // With a finite `give_up_above`, stops when an op starts on device d at a time t with
  // t + tail_[op] or t + (work_[d] - s_.work_started[d]) above it, and returns that bound (else 0).
  double Continue(const Placement& placement, Timeline* timeline, bool record,
                  double give_up_above = std::numeric_limits<double>::infinity());
  // Continue for the eager runtime or not: the hot loop and what it calls are compiled once for
  // each, so a run pays no runtime test for the other.
  template <bool kEager>
  double ContinueAs(const Placement& placement, Timeline* timeline, bool record,
                    double give_up_above);
  // Makes the state that of the base run just before `placement` (which differs from the base)
  // can make a difference: a checkpoint, or a fresh start. Returns the checkpoint's index, or -1.
  int RestoreFor(const Placement& placement);
  StepResult Report(const Placement& placement) const;
  // The critical path of the run just simulated (CriticalPath's rule).
  std::vector<OpId> TracePath(const Placement& placement) const;
  void Push(double time, int32_t type, int32_t index);
  template <bool kEager>
  void MarkReady(DeviceId d, double time, OpId op);
  void StartOp(DeviceId d, double time, OpId op, Timeline* timeline);
  template <bool kEager>
  void EndOp(OpId op, double time, const Placement& placement, Timeline* timeline);
  // An op on `d` is done with input `slot`: frees the copy or the local tensor when it was the
  // last to need it.
  void ReleaseInput(size_t slot, DeviceId d, double time, Timeline* timeline);
  // Frees tensor `t` on its producer's device `d`, and releases a view's base.
  void FreeLocal(graph::TensorId t, DeviceId d, double time, Timeline* timeline);
  // The channel a transfer src -> dst takes, as an index into the channel arrays (n * n of them;
  // one bus per device uses the first n).
  size_t Channel(DeviceId src, DeviceId dst) const {
    return per_device_ ? src.index() : src.index() * problem_.c().devices().size() + dst.index();
  }
  template <bool kEager>
  void SendTensor(graph::TensorId t, DeviceId src, double time, const Placement& placement,
                  Timeline* timeline);
  // Transfer `index` takes its channel at `time` (its start): allocates its copy, and pushes its
  // arrival (and, with latency kArrival, the moment its channel is free again).
  void StartTransfer(int32_t index, double time, Timeline* timeline);
  // The transfer at the head of `channel` has left it at `time`: the next one queued starts.
  void FreeChannel(size_t channel, double time, Timeline* timeline);
  template <bool kEager>
  void EndTransfer(int32_t index, double time, const Placement& placement, Timeline* timeline);
  void Allocate(DeviceId d, double bytes, double time, Timeline* timeline);
  void Free(DeviceId d, double bytes, double time, Timeline* timeline);

  const Problem& problem_;
  const bool per_device_;  // problem_.step_model.channels == Channels::kPerDevice
  const bool arrival_;     // problem_.step_model.latency == LatencyMode::kArrival
  const bool eager_;       // problem_.step_model.issue == Issue::kProgramOrder
  // Eager runtime: each op's place in program order; whether a device is a CPU (its ops run on
  // the issuing thread); per device, its ops in program order, and the CPU devices' ops in program
  // order (set by Reset from the placement).
  IdVector<OpId, int32_t> rank_;
  IdVector<DeviceId, char> host_;
  IdVector<DeviceId, std::vector<OpId>> order_;
  std::vector<OpId> host_order_;
  // Eager runtime: whether device d may start `op`, the smallest-ranked of its ready ops, now.
  bool MayStart(DeviceId d, OpId op) const;
  // The placement a run simulates: `placement` as dispatched as a device map (sim::Dispatched)
  // when the problem has the module rule, else `placement` itself.
  const Placement& Runs(const Placement& placement);
  Placement dispatched_;
  State s_;
  std::vector<int32_t> consumer_slot_;  // per consumer-CSR entry: its slot in the inputs CSR
  // Scratch for SendTensor: the last tensor sent to each device, and its transfer there.
  IdVector<DeviceId, graph::TensorId> stamp_;
  IdVector<DeviceId, int32_t> transfer_of_device_;
  IdVector<OpId, double> param_bytes_, scratch_bytes_;
  // Sizes as a device of another kind [0] or of kind "cpu" [1] holds them (Tensor::cpu_bytes:
  // a CPU dropout's kept noise), chosen per device by cpu_: per op, what it allocates when it
  // starts (scratch and outputs); per tensor, its bytes on its producer's device (views: 0).
  std::array<IdVector<OpId, double>, 2> start_bytes_;
  std::array<IdVector<graph::TensorId, double>, 2> local_bytes_;
  IdVector<DeviceId, int32_t> cpu_;  // 1 for a device of kind "cpu"
  // Per tensor: the input slot of a view's base, or -1.
  IdVector<graph::TensorId, int32_t> view_slot_;
  std::vector<char> deferred_;                // per input slot: released with a view, not at op end
  std::vector<graph::TensorId> slot_tensor_;  // per input slot: its tensor
  IdVector<DeviceId, double> timeline_params_;  // parameters of the run with a timeline
  // Per op: the longest path from its start to the end of the step, every op at its fastest.
  IdVector<OpId, double> tail_;
  // Per device: seconds of compute of the ops the placement being simulated puts there (set by
  // RunNear with a cut-off; the only runs that read it).
  IdVector<DeviceId, double> work_;
  void CountWork(const Placement& placement);
  // Incremental runs: the base placement, when each of its ops ended, checkpoints in time order.
  Placement base_;
  IdVector<OpId, double> base_end_;
  std::vector<State> checkpoints_;  // the first num_checkpoints_ are the base run's
  size_t num_checkpoints_ = 0;
  int64_t checkpoint_interval_ = 1;
};

// Convenience: one simulation with a fresh simulator.
StepResult SimulateStep(const Problem& problem, const Placement& placement,
                        const StepOptions& options = {});

}  // namespace dplace::sim
