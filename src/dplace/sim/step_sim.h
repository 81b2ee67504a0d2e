// The step simulator: a discrete-event simulation of one training/inference step of a placed graph,
// with memory accounting. Semantics (DESIGN.md §3, docs/semantics.md):
//  - a device runs one op at a time; an op is ready when every input tensor is present on its
//  device;
//  - an idle device starts, among its ready ops, the one that became ready first (ties: lower op
//  id);
//  - when an op ends, each output tensor is sent once to every other device hosting a consumer; a
//    transfer occupies the directed channel src -> dst for latency + bytes / bandwidth (or the
//    tensor's measured transfer time), one transfer at a time, first come first served;
//  - memory: parameters resident all step; outputs allocated at producer start, freed when the last
//    local consumer ends and outgoing transfers are done (outputs nobody consumes stay to the end);
//    a received copy is allocated at transfer start and freed when its last consumer there ends;
//    scratch is held while the op runs;
//  - makespan = end of the last op or transfer.
#pragma once

#include <cstdint>
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
  // Makespan only, without feasibility checks: the hot path of search.
  double Makespan(const Placement& placement);

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
    double start, end;
    int32_t remaining;  // consumers on dst that have not ended
  };

  void Simulate(const Placement& placement, Timeline* timeline);
  void Push(double time, int32_t type, int32_t index);
  void MarkReady(DeviceId d, double time, OpId op);
  void StartOp(DeviceId d, double time, OpId op, const Placement& placement, Timeline* timeline);
  void EndOp(OpId op, double time, const Placement& placement, Timeline* timeline);
  void SendTensor(graph::TensorId t, DeviceId src, double time, const Placement& placement,
                  Timeline* timeline);
  void EndTransfer(int32_t index, double time, const Placement& placement, Timeline* timeline);
  void Allocate(DeviceId d, double bytes, double time, Timeline* timeline);
  void Free(DeviceId d, double bytes, double time, Timeline* timeline);

  const Problem& problem_;
  std::vector<Event> events_;  // binary heap, earliest (time, seq) on top
  uint32_t seq_ = 0;
  std::vector<std::vector<std::pair<double, OpId>>> ready_;  // per device, min-heaps
  std::vector<char> busy_, dirty_;
  std::vector<DeviceId> dirty_list_;
  std::vector<double> channel_free_;  // [src * n + dst]
  // Per channel [src * n + dst]: its transfers in request order; those before head have ended.
  std::vector<std::vector<int32_t>> channel_queue_;
  std::vector<size_t> channel_head_;
  std::vector<int32_t> pending_;                        // per op: inputs not yet present
  std::vector<double> start_;                           // per op
  std::vector<int32_t> local_remaining_, out_pending_;  // per tensor
  std::vector<int32_t> consumer_slot_;  // per consumer-CSR entry: its slot in the inputs CSR
  std::vector<int32_t> input_copy_;     // per op input slot: transfer index, or -1 when local
  std::vector<int32_t> stamp_, transfer_of_device_;  // per device, scratch for SendTensor
  std::vector<Transfer> transfers_;
  std::vector<double> memory_, peak_, busy_s_;
  std::vector<double> param_bytes_, scratch_bytes_, start_bytes_;  // per op
  double makespan_ = 0;
};

// Convenience: one simulation with a fresh simulator.
StepResult SimulateStep(const Problem& problem, const Placement& placement,
                        const StepOptions& options = {});

}  // namespace dplace::sim
