#include "dplace/sim/step_sim.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "dplace/sim/constraints.h"

namespace dplace::sim {
namespace {

// An event's code is index * 4 + type: the op or transfer index, and what happens to it.
enum EventType : int32_t {
  kOpEnd = 0,
  kTransferEnd = 1,  // the tensor has arrived (and, unless latency is kArrival, left its channel)
  kChannelFree = 2,  // latency kArrival: the transfer's bytes are out; the channel is free
};
constexpr int32_t kTypeBits = 2;
constexpr int32_t kTypeMask = (1 << kTypeBits) - 1;

struct Later {
  template <typename E>
  bool operator()(const E& a, const E& b) const {
    return a.time != b.time ? a.time > b.time : a.seq > b.seq;
  }
};

}  // namespace

// Checkpoints of one simulator take at most this much memory, and there are at most kCheckpoints.
constexpr double kCheckpointBytes = 64.0 * 1024 * 1024;
constexpr int64_t kCheckpoints = 32;

StepSimulator::StepSimulator(const Problem& problem)
    : problem_(problem),
      per_device_(problem.step_model.channels == Channels::kPerDevice),
      arrival_(problem.step_model.latency == LatencyMode::kArrival),
      eager_(problem.step_model.issue == Issue::kProgramOrder) {
  const size_t n = problem.c().devices().size();
  const graph::Graph& g = problem.g();
  const size_t num_ops = g.ops().size();
  s_.ready.resize(n);
  s_.busy.resize(n);
  s_.dirty.resize(n);
  s_.channel_free.resize(n * n);
  s_.channel_queue.resize(n * n);
  s_.channel_head.resize(n * n);
  s_.memory.resize(n);
  s_.peak.resize(n);
  s_.busy_s.resize(n);
  s_.work_started.resize(n);
  s_.started.resize(n);
  work_.resize(n);
  if (eager_) {
    rank_.resize(num_ops);
    int32_t rank = 0;
    for (OpId op : g.TopologicalOrder()) rank_[op] = rank++;
    host_.resize(n);
    for (DeviceId d{0}; d < problem.num_devices(); ++d)
      host_[d] = problem.c().device(d).kind == "cpu";
    order_.resize(n);
  }
  s_.pending.resize(num_ops);
  s_.start.resize(num_ops);
  s_.local_remaining.resize(g.tensors().size());
  s_.out_pending.resize(g.tensors().size());
  stamp_.resize(n);
  transfer_of_device_.resize(n);
  timeline_params_.resize(n);
  size_t slots = 0;
  for (OpId i{0}; i < g.num_ops(); ++i) slots += g.Inputs(i).size();
  s_.input_copy.resize(slots);
  // For each (tensor, consumer) pair of the consumer CSR: the pair's slot in the inputs CSR.
  const graph::TensorId* inputs_base = g.Inputs(graph::OpId(0)).data();
  for (graph::TensorId t{0}; t < g.num_tensors(); ++t) {
    for (OpId c : g.Consumers(t)) {
      auto inputs = g.Inputs(c);
      const auto k = std::lower_bound(inputs.begin(), inputs.end(), t) - inputs.begin();
      consumer_slot_.push_back(static_cast<int32_t>((inputs.data() - inputs_base) + k));
    }
  }
  // Views: no bytes of their own on their producer's device, and the producer's input slot that
  // holds their base is released when the view is.
  const auto num_tensors = g.tensors().size();
  for (auto& bytes : local_bytes_) bytes.resize(num_tensors);
  view_slot_.assign(num_tensors, -1);
  deferred_.assign(slots, 0);
  slot_tensor_.assign(inputs_base, inputs_base + slots);
  for (graph::TensorId t{0}; t < g.num_tensors(); ++t) {
    const graph::Tensor& tensor = g.tensor(t);
    for (int cpu : {0, 1}) local_bytes_[cpu][t] = tensor.view ? 0 : tensor.BytesOn(cpu == 1);
    if (tensor.view_of < 0) continue;
    auto inputs = g.Inputs(tensor.producer);
    const auto k = std::lower_bound(inputs.begin(), inputs.end(), tensor.view_of) - inputs.begin();
    const auto slot = static_cast<int32_t>((inputs.data() - inputs_base) + k);
    if (deferred_[static_cast<size_t>(slot)]) continue;  // a second view of one base: released once
    view_slot_[t] = slot;
    deferred_[static_cast<size_t>(slot)] = 1;
  }
  // Flat per-op copies of what the hot loop reads: the Op structs are large and strided.
  param_bytes_.resize(num_ops);
  scratch_bytes_.resize(num_ops);
  for (auto& bytes : start_bytes_) bytes.resize(num_ops);
  for (OpId i{0}; i < g.num_ops(); ++i) {
    const graph::Op& o = g.op(i);
    param_bytes_[i] = o.param_bytes;
    scratch_bytes_[i] = o.scratch_bytes;
    for (int cpu : {0, 1}) {
      double bytes = o.scratch_bytes;
      for (int32_t k = 0; k < o.num_outputs; ++k) bytes += local_bytes_[cpu][o.first_output + k];
      start_bytes_[cpu][i] = bytes;
    }
  }
  cpu_.resize(n);
  for (DeviceId d{0}; d < problem.num_devices(); ++d)
    cpu_[d] = problem.c().device(d).kind == "cpu" ? 1 : 0;
  auto allowed = [&problem](OpId op, DeviceId d) { return problem.Allowed(op, d); };
  tail_.assign(num_ops, 0.0);
  const auto& order = g.TopologicalOrder();
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    double after = 0;
    for (OpId s : g.Successors(*it)) after = std::max(after, tail_[s]);
    tail_[*it] = problem.costs.MinOpTime(*it, problem.num_devices(), allowed) + after;
  }
  // A checkpoint's size, counting a transfer per input slot (the most a run can have).
  const double state_bytes =
      12.0 * static_cast<double>(num_ops) + 8.0 * static_cast<double>(g.num_tensors()) +
      (4.0 + sizeof(Transfer)) * static_cast<double>(slots) + 64.0 * static_cast<double>(n * n + 1);
  const int64_t checkpoints =
      std::clamp<int64_t>(static_cast<int64_t>(kCheckpointBytes / state_bytes), 1, kCheckpoints);
  checkpoint_interval_ = std::max<int64_t>(1, (g.num_ops() + checkpoints - 1) / checkpoints);
}

void StepSimulator::Push(double time, int32_t type, int32_t index) {
  s_.events.push_back({time, s_.seq++, (index << kTypeBits) | type});
  std::push_heap(s_.events.begin(), s_.events.end(), Later{});
}

template <bool kEager>
void StepSimulator::MarkReady(DeviceId d, double time, OpId op) {
  auto& heap = s_.ready[d];
  // Eager: the device looks only at its ready op first in program order.
  heap.emplace_back(kEager ? static_cast<double>(rank_[op]) : time, op);
  std::push_heap(heap.begin(), heap.end(), std::greater<>{});
  if (!s_.dirty[d]) {
    s_.dirty[d] = 1;
    s_.dirty_list.push_back(d);
  }
}

// Inlined into the hot loop (the compiler left them calls; 4% more instructions a run).
[[gnu::always_inline]] inline void StepSimulator::Allocate(DeviceId d, double bytes, double time,
                                                           Timeline* timeline) {
  if (bytes == 0) return;
  double& m = s_.memory[d];
  m += bytes;
  s_.peak[d] = std::max(s_.peak[d], m);
  if (timeline) timeline->memory.push_back({d, time, timeline_params_[d] + m});
}

[[gnu::always_inline]] inline void StepSimulator::Free(DeviceId d, double bytes, double time,
                                                       Timeline* timeline) {
  if (bytes == 0) return;
  double& m = s_.memory[d];
  m -= bytes;
  if (timeline) timeline->memory.push_back({d, time, timeline_params_[d] + m});
}

[[gnu::always_inline]] inline void StepSimulator::StartOp(DeviceId d, double time, OpId op,
                                                          Timeline* timeline) {
  s_.busy[d] = 1;
  s_.start[op] = time;
  const double duration = problem_.costs.OpTime(op, d);
  s_.work_started[d] += duration;
  Allocate(d, start_bytes_[cpu_[d]][op], time, timeline);
  Push(time + duration, kOpEnd, op.value());
}

template <bool kEager>
void StepSimulator::SendTensor(graph::TensorId t, DeviceId src, double time,
                               const Placement& placement, Timeline* timeline) {
  const graph::Graph& g = problem_.g();
  const graph::Tensor& tensor = g.tensor(t);
  int32_t local = 0, sent = 0;
  for (OpId c : g.Consumers(t)) {
    const DeviceId dst = placement[c];
    if (dst == src) {
      ++local;
      if (--s_.pending[c] == 0) MarkReady<kEager>(src, time, c);
      continue;
    }
    if (stamp_[dst] == t) continue;
    stamp_[dst] = t;
    const size_t channel_index = Channel(src, dst);
    double& channel = s_.channel_free[channel_index];
    const double start = std::max(time, channel);
    const TransferSpan span =
        SpanOf(tensor, problem_.c().LinkBetween(src, dst), problem_.step_model.latency);
    const double free = start + span.occupy_s;
    // In the default model `then_s` is 0 and the sum is `free` bit for bit.
    const double end = free + span.then_s;
    channel = free;
    const auto index = static_cast<int32_t>(s_.transfers.size());
    s_.transfers.push_back({t, src, dst, start, end, free, 0});
    transfer_of_device_[dst] = index;
    ++sent;
    // Only the transfer at the head of a channel has events; the ones queued behind it start
    // when it leaves the channel (FreeChannel), which keeps the event heap small.
    auto& queue = s_.channel_queue[channel_index];
    queue.push_back(index);
    if (queue.size() == s_.channel_head[channel_index] + 1) StartTransfer(index, start, timeline);
  }
  s_.local_remaining[t] = local;
  s_.out_pending[t] = sent;
  if (sent == 0) return;
  // Second pass: each remote consumer reads the copy on its device.
  auto consumers = g.Consumers(t);
  const int32_t* slots =
      consumer_slot_.data() + (consumers.data() - g.Consumers(graph::TensorId(0)).data());
  for (size_t k = 0; k < consumers.size(); ++k) {
    const DeviceId dst = placement[consumers[k]];
    if (dst == src) continue;
    const int32_t index = transfer_of_device_[dst];
    ++s_.transfers[static_cast<size_t>(index)].remaining;
    s_.input_copy[static_cast<size_t>(slots[k])] = index;
  }
}

bool StepSimulator::MayStart(DeviceId d, OpId op) const {
  const auto& mine = order_[d];
  if (mine[static_cast<size_t>(s_.started[d])] != op) return false;  // an earlier op waits
  const auto ended = static_cast<size_t>(s_.host_ended);
  // A CPU op runs on the issuing thread once the host ops before it have ended; any other op is
  // issued once the host ops before it in the program have ended.
  if (host_[d]) return host_order_[ended] == op;
  return ended == host_order_.size() || rank_[op] < rank_[host_order_[ended]];
}

template <bool kEager>
void StepSimulator::EndOp(OpId op, double time, const Placement& placement, Timeline* timeline) {
  const graph::Graph& g = problem_.g();
  const DeviceId d = placement[op];
  s_.busy[d] = 0;
  if (kEager && host_[d]) {
    // The issuing thread moves on: every device may have an op it can start now.
    ++s_.host_ended;
    for (DeviceId e{0}; e < problem_.num_devices(); ++e) {
      if (!s_.dirty[e]) {
        s_.dirty[e] = 1;
        s_.dirty_list.push_back(e);
      }
    }
  }
  if (!s_.dirty[d]) {
    s_.dirty[d] = 1;
    s_.dirty_list.push_back(d);
  }
  ++s_.ops_ended;
  s_.busy_s[d] += time - s_.start[op];
  s_.makespan = std::max(s_.makespan, time);
  if (timeline) timeline->ops.push_back({op, d, s_.start[op], time});
  Free(d, scratch_bytes_[op], time, timeline);
  auto inputs = g.Inputs(op);
  const auto first_slot = static_cast<size_t>(inputs.data() - g.Inputs(graph::OpId(0)).data());
  for (size_t k = 0; k < inputs.size(); ++k) {
    // The base of a view output is released when the view is (FreeLocal).
    if (!deferred_[first_slot + k]) ReleaseInput(first_slot + k, d, time, timeline);
  }
  const graph::TensorId first = g.FirstOutput(op), last = g.FirstOutput(op + 1);
  for (graph::TensorId t = first; t < last; ++t) {
    SendTensor<kEager>(t, d, time, placement, timeline);
  }
}

void StepSimulator::ReleaseInput(size_t slot, DeviceId d, double time, Timeline* timeline) {
  const graph::TensorId t = slot_tensor_[slot];
  const int32_t copy = s_.input_copy[slot];
  if (copy >= 0) {
    Transfer& tr = s_.transfers[static_cast<size_t>(copy)];
    if (--tr.remaining == 0) Free(d, problem_.g().tensor(t).BytesOn(cpu_[tr.src]), time, timeline);
  } else if (--s_.local_remaining[t] == 0 && s_.out_pending[t] == 0) {
    FreeLocal(t, d, time, timeline);
  }
}

void StepSimulator::FreeLocal(graph::TensorId t, DeviceId d, double time, Timeline* timeline) {
  Free(d, local_bytes_[cpu_[d]][t], time, timeline);
  const int32_t base_slot = view_slot_[t];
  if (base_slot >= 0) ReleaseInput(static_cast<size_t>(base_slot), d, time, timeline);
}

void StepSimulator::StartTransfer(int32_t index, double time, Timeline* timeline) {
  const Transfer& tr = s_.transfers[static_cast<size_t>(index)];
  Allocate(tr.dst, problem_.g().tensor(tr.tensor).BytesOn(cpu_[tr.src]), time, timeline);
  if (arrival_) Push(tr.free, kChannelFree, index);
  Push(tr.end, kTransferEnd, index);
}

void StepSimulator::FreeChannel(size_t channel, double time, Timeline* timeline) {
  const size_t head = ++s_.channel_head[channel];
  const auto& queue = s_.channel_queue[channel];
  // The next transfer was requested while this one held the channel, so it starts now.
  if (head < queue.size()) StartTransfer(queue[head], time, timeline);
}

template <bool kEager>
void StepSimulator::EndTransfer(int32_t index, double time, const Placement& placement,
                                Timeline* timeline) {
  const graph::Graph& g = problem_.g();
  const Transfer tr = s_.transfers[static_cast<size_t>(index)];
  s_.makespan = std::max(s_.makespan, time);
  if (!arrival_) FreeChannel(Channel(tr.src, tr.dst), time, timeline);
  if (timeline) timeline->transfers.push_back({tr.tensor, tr.src, tr.dst, tr.start, tr.end});
  if (--s_.out_pending[tr.tensor] == 0 && s_.local_remaining[tr.tensor] == 0) {
    FreeLocal(tr.tensor, tr.src, time, timeline);
  }
  for (OpId c : g.Consumers(tr.tensor)) {
    if (placement[c] != tr.dst) continue;
    if (--s_.pending[c] == 0) MarkReady<kEager>(tr.dst, time, c);
  }
}

void StepSimulator::Reset(const Placement& placement, Timeline* timeline) {
  const graph::Graph& g = problem_.g();
  s_.now = 0;
  s_.ops_ended = 0;
  s_.events.clear();
  s_.seq = 0;
  // Only the channels a transfer used since the last reset hold anything: resetting just those
  // keeps a reset linear in the devices, not in their pairs (a million on 1,024 devices).
  for (const Transfer& tr : s_.transfers) {
    const size_t channel = Channel(tr.src, tr.dst);
    s_.channel_free[channel] = 0;
    s_.channel_queue[channel].clear();
    s_.channel_head[channel] = 0;
  }
  s_.transfers.clear();
  s_.dirty_list.clear();
  s_.makespan = 0;
  for (auto& heap : s_.ready) heap.clear();
  std::fill(s_.busy.begin(), s_.busy.end(), 0);
  std::fill(s_.dirty.begin(), s_.dirty.end(), 0);
  std::fill(stamp_.begin(), stamp_.end(), graph::TensorId(-1));
  std::fill(s_.memory.begin(), s_.memory.end(), 0.0);
  std::fill(s_.peak.begin(), s_.peak.end(), 0.0);
  std::fill(s_.busy_s.begin(), s_.busy_s.end(), 0.0);
  std::fill(s_.work_started.begin(), s_.work_started.end(), 0.0);
  std::fill(s_.input_copy.begin(), s_.input_copy.end(), -1);
  if (eager_) {
    std::fill(s_.started.begin(), s_.started.end(), 0);
    s_.host_ended = 0;
    for (auto& ops : order_) ops.clear();
    host_order_.clear();
    for (OpId op : g.TopologicalOrder()) {
      order_[placement[op]].push_back(op);
      if (host_[placement[op]]) host_order_.push_back(op);
    }
  }
  if (timeline) {
    std::fill(timeline_params_.begin(), timeline_params_.end(), 0.0);
    for (OpId i{0}; i < g.num_ops(); ++i) {
      timeline_params_[placement[i]] += param_bytes_[i];
    }
    for (DeviceId d{0}; d < problem_.num_devices(); ++d) {
      timeline->memory.push_back({d, 0, timeline_params_[d]});
    }
  }
  for (OpId i{0}; i < g.num_ops(); ++i) {
    s_.pending[i] = static_cast<int32_t>(g.Inputs(i).size());
    if (s_.pending[i] == 0) {
      if (eager_) {
        MarkReady<true>(placement[i], 0, i);
      } else {
        MarkReady<false>(placement[i], 0, i);
      }
    }
  }
}

double StepSimulator::Continue(const Placement& placement, Timeline* timeline, bool record,
                               double give_up_above) {
  return eager_ ? ContinueAs<true>(placement, timeline, record, give_up_above)
                : ContinueAs<false>(placement, timeline, record, give_up_above);
}

template <bool kEager>
double StepSimulator::ContinueAs(const Placement& placement, Timeline* timeline, bool record,
                                 double give_up_above) {
  while (true) {
    if (record &&
        s_.ops_ended >= static_cast<int64_t>(num_checkpoints_ + 1) * checkpoint_interval_) {
      if (num_checkpoints_ == checkpoints_.size()) {
        checkpoints_.push_back(s_);
      } else {
        checkpoints_[num_checkpoints_] = s_;  // reuses the old checkpoint's buffers
      }
      ++num_checkpoints_;
    }
    // Start work on every device whose state changed, then advance to the next event time.
    for (DeviceId d : s_.dirty_list) {
      s_.dirty[d] = 0;
      auto& heap = s_.ready[d];
      if (s_.busy[d] || heap.empty()) continue;
      if constexpr (kEager) {
        if (!MayStart(d, heap.front().second)) continue;
        ++s_.started[d];
      }
      std::pop_heap(heap.begin(), heap.end(), std::greater<>{});
      const OpId op = heap.back().second;
      heap.pop_back();
      // The margin covers the rounding of the sums, so giving up is never wrong.
      const double bound = s_.now + std::max(tail_[op], work_[d] - s_.work_started[d]);
      if (bound > give_up_above * (1 + 1e-9)) return bound;
      StartOp(d, s_.now, op, timeline);
    }
    s_.dirty_list.clear();
    if (s_.events.empty()) return 0;
    const double now = s_.now = s_.events.front().time;
    while (!s_.events.empty() && s_.events.front().time == now) {
      std::pop_heap(s_.events.begin(), s_.events.end(), Later{});
      const Event e = s_.events.back();
      s_.events.pop_back();
      const int32_t index = e.code >> kTypeBits;
      switch (e.code & kTypeMask) {
        case kOpEnd:
          EndOp<kEager>(graph::OpId(index), now, placement, timeline);
          if (record) base_end_[OpId(index)] = now;
          break;
        case kTransferEnd:
          EndTransfer<kEager>(index, now, placement, timeline);
          break;
        default: {  // kChannelFree
          const Transfer& tr = s_.transfers[static_cast<size_t>(index)];
          FreeChannel(Channel(tr.src, tr.dst), now, timeline);
        }
      }
    }
  }
}

void StepSimulator::CountWork(const Placement& placement) {
  std::fill(work_.begin(), work_.end(), 0.0);
  for (OpId i : placement.ids()) {
    work_[placement[i]] += problem_.costs.OpTime(i, placement[i]);
  }
}

int StepSimulator::RestoreFor(const Placement& placement) {
  // The base run looks at an op's device first when the op's first producer ends (or at the start,
  // for an op without inputs): the earliest such moment over the changed ops.
  const graph::Graph& g = problem_.g();
  double first_look = std::numeric_limits<double>::infinity();
  for (OpId i : placement.ids()) {
    if (placement[i] == base_[i]) continue;
    const auto inputs = g.Inputs(i);
    if (inputs.empty()) first_look = 0;
    for (graph::TensorId t : inputs) {
      first_look = std::min(first_look, base_end_[g.tensor(t).producer]);
    }
  }
  // The last checkpoint taken before that moment: everything up to it happened in both runs.
  const auto begin = checkpoints_.begin();
  const auto after = std::partition_point(begin, begin + static_cast<ptrdiff_t>(num_checkpoints_),
                                          [&](const State& c) { return c.now < first_look; });
  if (after == begin) {
    Reset(placement, nullptr);
    return -1;
  }
  s_ = *(after - 1);
  std::fill(stamp_.begin(), stamp_.end(),
            graph::TensorId(-1));  // tensors the abandoned run sent are sent again
  return static_cast<int>(after - begin) - 1;
}

void StepSimulator::SetBase(const Placement& base) {
  if (eager_) {
    // A moved op changes the program order of its old and new device from the start of the step,
    // so no checkpoint of the base holds: every run is a full one.
    base_ = base;
    base_end_.assign(base.size(), 0.0);
    num_checkpoints_ = 0;
    return;
  }
  int kept = -1;
  if (base_.size() == base.size()) {
    kept = RestoreFor(base);
  } else {
    base_end_.assign(base.size(), 0.0);
    Reset(base, nullptr);
  }
  num_checkpoints_ = static_cast<size_t>(kept) + 1;
  base_ = base;
  Continue(base, nullptr, /*record=*/true);
}

StepResult StepSimulator::RunNear(const Placement& placement) {
  return RunNear(placement, std::numeric_limits<double>::infinity());
}

const Placement& StepSimulator::Runs(const Placement& placement) {
  if (!problem_.mapped_modules) return placement;
  dispatched_ = Dispatched(problem_, placement);
  return dispatched_;
}

StepResult StepSimulator::RunNear(const Placement& given, double give_up_above) {
  const Placement& placement = Runs(given);
  if (base_.size() != placement.size())
    Reset(placement, nullptr);
  else
    RestoreFor(placement);
  // Only a run that may give up reads each device's total compute.
  if (give_up_above < std::numeric_limits<double>::infinity()) CountWork(placement);
  const double above = Continue(placement, nullptr, /*record=*/false, give_up_above);
  if (above == 0) return Report(placement);
  StepResult result;
  Evaluation& e = result.evaluation;
  e.objective = Objective::kStep;
  e.value = above;
  e.feasible = false;
  e.reason = "the step takes more than " + std::to_string(give_up_above) + " s";
  return result;
}

std::vector<OpId> StepSimulator::CriticalPath(const Placement& given) {
  const Placement& placement = Runs(given);
  Reset(placement, nullptr);
  Continue(placement, nullptr, /*record=*/false);
  return TracePath(placement);
}

Evaluation StepSimulator::RunTimed(const Placement& given, Timing* timing) {
  const Placement& placement = Runs(given);
  Reset(placement, nullptr);
  Continue(placement, nullptr, /*record=*/false);
  Evaluation e = Report(placement).evaluation;
  const graph::Graph& g = problem_.g();
  timing->start_s.assign(g.ops().size(), 0);
  timing->end_s.assign(g.ops().size(), 0);
  for (OpId op : g.op_ids()) {
    timing->start_s[op] = s_.start[op];
    timing->end_s[op] = s_.start[op] + problem_.costs.OpTime(op, placement[op]);
  }
  timing->makespan_s = s_.makespan;
  timing->critical_path = TracePath(placement);
  return e;
}

std::vector<OpId> StepSimulator::TracePath(const Placement& placement) const {
  const graph::Graph& g = problem_.g();
  auto end_of = [&](OpId op) {  // computed as StartOp computes the op's end event
    return s_.start[op] + problem_.costs.OpTime(op, placement[op]);
  };
  // Per device, its ops by end time: the op that kept a device busy ended when the next started.
  PerDevice<std::vector<std::pair<double, OpId>>> ended(problem_.c().devices().size());
  OpId last{-1};
  for (OpId op : g.op_ids()) {
    ended[placement[op]].emplace_back(end_of(op), op);
    if (last < 0 || end_of(op) > end_of(last)) last = op;
  }
  for (auto& list : ended) std::sort(list.begin(), list.end());
  std::vector<OpId> path;
  PerOp<char> on_path(g.ops().size());
  for (OpId op = last; op >= 0 && !on_path[op];) {  // zero-time ops can tie
    on_path[op] = 1;
    path.push_back(op);
    const double start = s_.start[op];
    if (start <= 0) break;
    // The input that arrived last, if it arrived as the op started.
    auto inputs = g.Inputs(op);
    const auto first_slot = static_cast<size_t>(inputs.data() - g.Inputs(graph::OpId(0)).data());
    OpId next{-1};
    for (size_t k = 0; k < inputs.size() && next < 0; ++k) {
      int32_t copy = s_.input_copy[first_slot + k];
      if (copy < 0) {
        const OpId producer = g.tensor(inputs[k]).producer;
        if (end_of(producer) == start) next = producer;
        continue;
      }
      if (s_.transfers[static_cast<size_t>(copy)].end != start) continue;
      // Back along the channel while a transfer waited for the one ahead of it.
      while (true) {
        const Transfer& tr = s_.transfers[static_cast<size_t>(copy)];
        const OpId producer = g.tensor(tr.tensor).producer;
        if (end_of(producer) == tr.start) {
          next = producer;
          break;
        }
        const auto& queue = s_.channel_queue[Channel(tr.src, tr.dst)];
        const auto it = std::lower_bound(queue.begin(), queue.end(), copy);
        if (it == queue.begin()) {
          next = producer;
          break;
        }
        copy = *(it - 1);
      }
    }
    if (next < 0) {  // the device was busy: the op that ended as this one started
      const auto& list = ended[placement[op]];
      const auto it = std::lower_bound(list.begin(), list.end(), std::make_pair(start, OpId{-1}));
      if (it != list.end() && it->first == start && it->second != op) next = it->second;
    }
    op = next;
  }
  return path;
}

double StepSimulator::Makespan(const Placement& given) {
  const Placement& placement = Runs(given);
  Reset(placement, nullptr);
  Continue(placement, nullptr, /*record=*/false);
  return s_.makespan;
}

StepResult StepSimulator::Run(const Placement& given, const StepOptions& options) {
  const Placement& placement = Runs(given);
  Timeline timeline;
  Reset(placement, options.record_timeline ? &timeline : nullptr);
  Continue(placement, options.record_timeline ? &timeline : nullptr, /*record=*/false);
  StepResult result = Report(placement);
  result.timeline = std::move(timeline);
  return result;
}

StepResult StepSimulator::Report(const Placement& placement) const {
  StepResult result;
  Evaluation& e = result.evaluation;
  e.objective = Objective::kStep;
  e.value = s_.makespan;
  e.devices.resize(problem_.c().devices().size());
  for (OpId i : problem_.g().op_ids()) {
    DeviceReport& r = e.devices[placement[i]];
    ++r.ops;
    r.peak_memory_bytes += param_bytes_[i];
  }
  for (DeviceId d{0}; d < problem_.num_devices(); ++d) {
    DeviceReport& r = e.devices[d];
    r.busy_s = s_.busy_s[d];
    r.load = r.busy_s;
    r.peak_memory_bytes += s_.peak[d];
    r.memory_capacity_bytes = problem_.c().device(d).memory_bytes;
  }
  e.reason = std::isfinite(e.value)
                 ? FindViolation(problem_, placement)
                 : "the step time is not finite: op or transfer times overflow a double";
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
