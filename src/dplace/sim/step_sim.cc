#include "dplace/sim/step_sim.h"

#include <algorithm>

#include "dplace/sim/constraints.h"

namespace dplace::sim {
namespace {

enum EventType : int32_t { kOpEnd = 0, kTransferEnd = 1 };

struct Later {
  template <typename E>
  bool operator()(const E& a, const E& b) const {
    return a.time != b.time ? a.time > b.time : a.seq > b.seq;
  }
};

}  // namespace

StepSimulator::StepSimulator(const Problem& problem) : problem_(problem) {
  const auto n = static_cast<size_t>(problem.num_devices());
  const graph::Graph& g = problem.g();
  ready_.resize(n);
  busy_.resize(n);
  dirty_.resize(n);
  channel_free_.resize(n * n);
  channel_queue_.resize(n * n);
  channel_head_.resize(n * n);
  stamp_.resize(n);
  transfer_of_device_.resize(n);
  memory_.resize(n);
  peak_.resize(n);
  busy_s_.resize(n);
  pending_.resize(static_cast<size_t>(g.num_ops()));
  start_.resize(static_cast<size_t>(g.num_ops()));
  local_remaining_.resize(static_cast<size_t>(g.num_tensors()));
  out_pending_.resize(static_cast<size_t>(g.num_tensors()));
  size_t slots = 0;
  for (OpId i = 0; i < g.num_ops(); ++i) slots += g.Inputs(i).size();
  // For each (tensor, consumer) pair of the consumer CSR: the pair's slot in the inputs CSR.
  const graph::TensorId* inputs_base = g.Inputs(0).data();
  for (graph::TensorId t = 0; t < g.num_tensors(); ++t) {
    for (OpId c : g.Consumers(t)) {
      auto inputs = g.Inputs(c);
      const auto k = std::lower_bound(inputs.begin(), inputs.end(), t) - inputs.begin();
      consumer_slot_.push_back(static_cast<int32_t>((inputs.data() - inputs_base) + k));
    }
  }
  // Flat per-op copies of what the hot loop reads: the Op structs are large and strided.
  param_bytes_.resize(static_cast<size_t>(g.num_ops()));
  scratch_bytes_.resize(static_cast<size_t>(g.num_ops()));
  start_bytes_.resize(static_cast<size_t>(g.num_ops()));
  for (OpId i = 0; i < g.num_ops(); ++i) {
    const graph::Op& o = g.op(i);
    param_bytes_[static_cast<size_t>(i)] = o.param_bytes;
    scratch_bytes_[static_cast<size_t>(i)] = o.scratch_bytes;
    double bytes = o.scratch_bytes;
    for (int32_t k = 0; k < o.num_outputs; ++k) bytes += g.tensor(o.first_output + k).bytes;
    start_bytes_[static_cast<size_t>(i)] = bytes;
  }
  input_copy_.resize(slots);
}

void StepSimulator::Push(double time, int32_t type, int32_t index) {
  events_.push_back({time, seq_++, index * 2 + type});
  std::push_heap(events_.begin(), events_.end(), Later{});
}

void StepSimulator::MarkReady(DeviceId d, double time, OpId op) {
  auto& heap = ready_[static_cast<size_t>(d)];
  heap.emplace_back(time, op);
  std::push_heap(heap.begin(), heap.end(), std::greater<>{});
  if (!dirty_[static_cast<size_t>(d)]) {
    dirty_[static_cast<size_t>(d)] = 1;
    dirty_list_.push_back(d);
  }
}

void StepSimulator::Allocate(DeviceId d, double bytes, double time, Timeline* timeline) {
  if (bytes == 0) return;
  double& m = memory_[static_cast<size_t>(d)];
  m += bytes;
  peak_[static_cast<size_t>(d)] = std::max(peak_[static_cast<size_t>(d)], m);
  if (timeline) timeline->memory.push_back({d, time, m});
}

void StepSimulator::Free(DeviceId d, double bytes, double time, Timeline* timeline) {
  if (bytes == 0) return;
  double& m = memory_[static_cast<size_t>(d)];
  m -= bytes;
  if (timeline) timeline->memory.push_back({d, time, m});
}

void StepSimulator::StartOp(DeviceId d, double time, OpId op, const Placement&,
                            Timeline* timeline) {
  busy_[static_cast<size_t>(d)] = 1;
  start_[static_cast<size_t>(op)] = time;
  Allocate(d, start_bytes_[static_cast<size_t>(op)], time, timeline);
  Push(time + problem_.costs.OpTime(op, d), kOpEnd, op);
}

void StepSimulator::SendTensor(graph::TensorId t, DeviceId src, double time,
                               const Placement& placement, Timeline* timeline) {
  const graph::Graph& g = problem_.g();
  const graph::Tensor& tensor = g.tensor(t);
  const auto n = static_cast<size_t>(problem_.num_devices());
  int32_t local = 0, sent = 0;
  for (OpId c : g.Consumers(t)) {
    const DeviceId dst = placement[static_cast<size_t>(c)];
    if (dst == src) {
      ++local;
      if (--pending_[static_cast<size_t>(c)] == 0) MarkReady(src, time, c);
      continue;
    }
    if (stamp_[static_cast<size_t>(dst)] == t) continue;
    stamp_[static_cast<size_t>(dst)] = t;
    double& channel = channel_free_[static_cast<size_t>(src) * n + static_cast<size_t>(dst)];
    const double start = std::max(time, channel);
    const double end = start + cost::TransferTime(tensor, problem_.c().LinkBetween(src, dst));
    channel = end;
    const auto index = static_cast<int32_t>(transfers_.size());
    transfers_.push_back({t, src, dst, start, end, 0});
    transfer_of_device_[static_cast<size_t>(dst)] = index;
    ++sent;
    // Only the transfer at the head of a channel has an event; the ones queued behind it start
    // when it ends (EndTransfer), which keeps the event heap as small as the number of channels.
    const size_t channel_index = static_cast<size_t>(src) * n + static_cast<size_t>(dst);
    auto& queue = channel_queue_[channel_index];
    queue.push_back(index);
    if (queue.size() == channel_head_[channel_index] + 1) {
      Allocate(dst, tensor.bytes, start, timeline);
      Push(end, kTransferEnd, index);
    }
  }
  local_remaining_[static_cast<size_t>(t)] = local;
  out_pending_[static_cast<size_t>(t)] = sent;
  if (sent == 0) return;
  // Second pass: each remote consumer reads the copy on its device.
  auto consumers = g.Consumers(t);
  const int32_t* slots = consumer_slot_.data() + (consumers.data() - g.Consumers(0).data());
  for (size_t k = 0; k < consumers.size(); ++k) {
    const DeviceId dst = placement[static_cast<size_t>(consumers[k])];
    if (dst == src) continue;
    const int32_t index = transfer_of_device_[static_cast<size_t>(dst)];
    ++transfers_[static_cast<size_t>(index)].remaining;
    input_copy_[static_cast<size_t>(slots[k])] = index;
  }
}

void StepSimulator::EndOp(OpId op, double time, const Placement& placement, Timeline* timeline) {
  const graph::Graph& g = problem_.g();
  const DeviceId d = placement[static_cast<size_t>(op)];
  busy_[static_cast<size_t>(d)] = 0;
  if (!dirty_[static_cast<size_t>(d)]) {
    dirty_[static_cast<size_t>(d)] = 1;
    dirty_list_.push_back(d);
  }
  busy_s_[static_cast<size_t>(d)] += time - start_[static_cast<size_t>(op)];
  makespan_ = std::max(makespan_, time);
  if (timeline) timeline->ops.push_back({op, d, start_[static_cast<size_t>(op)], time});
  Free(d, scratch_bytes_[static_cast<size_t>(op)], time, timeline);
  auto inputs = g.Inputs(op);
  const auto first_slot = static_cast<size_t>(inputs.data() - g.Inputs(0).data());
  for (size_t k = 0; k < inputs.size(); ++k) {
    const graph::TensorId t = inputs[k];
    const int32_t copy = input_copy_[first_slot + k];
    if (copy >= 0) {
      Transfer& tr = transfers_[static_cast<size_t>(copy)];
      if (--tr.remaining == 0) Free(d, g.tensor(t).bytes, time, timeline);
    } else if (--local_remaining_[static_cast<size_t>(t)] == 0 &&
               out_pending_[static_cast<size_t>(t)] == 0) {
      Free(d, g.tensor(t).bytes, time, timeline);
    }
  }
  const graph::TensorId first = g.FirstOutput(op), last = g.FirstOutput(op + 1);
  for (graph::TensorId t = first; t < last; ++t) SendTensor(t, d, time, placement, timeline);
}

void StepSimulator::EndTransfer(int32_t index, double time, const Placement& placement,
                                Timeline* timeline) {
  const graph::Graph& g = problem_.g();
  const Transfer tr = transfers_[static_cast<size_t>(index)];
  makespan_ = std::max(makespan_, time);
  const size_t channel_index =
      static_cast<size_t>(tr.src) * static_cast<size_t>(problem_.num_devices()) +
      static_cast<size_t>(tr.dst);
  const size_t head = ++channel_head_[channel_index];
  const auto& queue = channel_queue_[channel_index];
  if (head < queue.size()) {
    // The next transfer was requested while this one ran, so it starts now.
    const Transfer& next = transfers_[static_cast<size_t>(queue[head])];
    Allocate(next.dst, g.tensor(next.tensor).bytes, time, timeline);
    Push(next.end, kTransferEnd, queue[head]);
  }
  if (timeline) timeline->transfers.push_back({tr.tensor, tr.src, tr.dst, tr.start, tr.end});
  if (--out_pending_[static_cast<size_t>(tr.tensor)] == 0 &&
      local_remaining_[static_cast<size_t>(tr.tensor)] == 0) {
    Free(tr.src, g.tensor(tr.tensor).bytes, time, timeline);
  }
  for (OpId c : g.Consumers(tr.tensor)) {
    if (placement[static_cast<size_t>(c)] != tr.dst) continue;
    if (--pending_[static_cast<size_t>(c)] == 0) MarkReady(tr.dst, time, c);
  }
}

void StepSimulator::Simulate(const Placement& placement, Timeline* timeline) {
  const graph::Graph& g = problem_.g();
  events_.clear();
  seq_ = 0;
  transfers_.clear();
  dirty_list_.clear();
  makespan_ = 0;
  for (auto& heap : ready_) heap.clear();
  std::fill(busy_.begin(), busy_.end(), 0);
  std::fill(dirty_.begin(), dirty_.end(), 0);
  std::fill(channel_free_.begin(), channel_free_.end(), 0.0);
  for (auto& queue : channel_queue_) queue.clear();
  std::fill(channel_head_.begin(), channel_head_.end(), 0);
  std::fill(stamp_.begin(), stamp_.end(), -1);
  std::fill(memory_.begin(), memory_.end(), 0.0);
  std::fill(busy_s_.begin(), busy_s_.end(), 0.0);
  std::fill(input_copy_.begin(), input_copy_.end(), -1);
  for (OpId i = 0; i < g.num_ops(); ++i) {
    memory_[static_cast<size_t>(placement[static_cast<size_t>(i)])] +=
        param_bytes_[static_cast<size_t>(i)];
  }
  peak_ = memory_;
  if (timeline) {
    for (DeviceId d = 0; d < problem_.num_devices(); ++d) {
      timeline->memory.push_back({d, 0, memory_[static_cast<size_t>(d)]});
    }
  }
  for (OpId i = 0; i < g.num_ops(); ++i) {
    pending_[static_cast<size_t>(i)] = static_cast<int32_t>(g.Inputs(i).size());
    if (pending_[static_cast<size_t>(i)] == 0) MarkReady(placement[static_cast<size_t>(i)], 0, i);
  }
  double now = 0;
  while (true) {
    // Start work on every device whose state changed, then advance to the next event time.
    for (DeviceId d : dirty_list_) {
      dirty_[static_cast<size_t>(d)] = 0;
      auto& heap = ready_[static_cast<size_t>(d)];
      if (busy_[static_cast<size_t>(d)] || heap.empty()) continue;
      std::pop_heap(heap.begin(), heap.end(), std::greater<>{});
      const OpId op = heap.back().second;
      heap.pop_back();
      StartOp(d, now, op, placement, timeline);
    }
    dirty_list_.clear();
    if (events_.empty()) break;
    now = events_.front().time;
    while (!events_.empty() && events_.front().time == now) {
      std::pop_heap(events_.begin(), events_.end(), Later{});
      const Event e = events_.back();
      events_.pop_back();
      if ((e.code & 1) == kOpEnd) {
        EndOp(e.code >> 1, now, placement, timeline);
      } else {
        EndTransfer(e.code >> 1, now, placement, timeline);
      }
    }
  }
}

double StepSimulator::Makespan(const Placement& placement) {
  Simulate(placement, nullptr);
  return makespan_;
}

StepResult StepSimulator::Run(const Placement& placement, const StepOptions& options) {
  StepResult result;
  Simulate(placement, options.record_timeline ? &result.timeline : nullptr);
  Evaluation& e = result.evaluation;
  e.objective = Objective::kStep;
  e.value = makespan_;
  e.lower_bound = problem_.step_lower_bound;
  e.devices.resize(static_cast<size_t>(problem_.num_devices()));
  for (OpId i = 0; i < problem_.num_ops(); ++i) {
    ++e.devices[static_cast<size_t>(placement[static_cast<size_t>(i)])].ops;
  }
  for (DeviceId d = 0; d < problem_.num_devices(); ++d) {
    DeviceReport& r = e.devices[static_cast<size_t>(d)];
    r.busy_s = busy_s_[static_cast<size_t>(d)];
    r.load = r.busy_s;
    r.peak_memory_bytes = peak_[static_cast<size_t>(d)];
    r.memory_capacity_bytes = problem_.c().device(d).memory_bytes;
  }
  e.reason = FindViolation(problem_, placement);
  if (e.reason.empty()) e.reason = FindMemoryViolation(problem_, e.devices);
  e.feasible = e.reason.empty();
  return result;
}

StepResult SimulateStep(const Problem& problem, const Placement& placement,
                        const StepOptions& options) {
  StepSimulator simulator(problem);
  return simulator.Run(placement, options);
}

}  // namespace dplace::sim
