#include "dplace/report/chrome_trace.h"

namespace dplace::report {
namespace {

constexpr double kMicros = 1e6;  // trace timestamps are microseconds

int Pid(sim::DeviceId d) { return d.value() + 1; }
int LinkTid(sim::DeviceId dst) { return dst.value() + 1; }  // tid 0 is compute

Json Meta(const char* what, int pid, int tid, const std::string& name) {
  return {{"ph", "M"}, {"name", what}, {"pid", pid}, {"tid", tid}, {"args", {{"name", name}}}};
}

}  // namespace

Json ChromeTrace(const sim::Problem& problem, const sim::Timeline& timeline) {
  const graph::Graph& g = problem.g();
  const hw::Cluster& c = problem.c();
  Json events = Json::array();
  for (sim::DeviceId d{0}; d < c.num_devices(); ++d) {
    events.push_back(
        Meta("process_name", Pid(d), 0, c.device(d).name + " (" + c.device(d).kind + ")"));
    events.push_back({{"ph", "M"},
                      {"name", "process_sort_index"},
                      {"pid", Pid(d)},
                      {"tid", 0},
                      {"args", {{"sort_index", d}}}});
    events.push_back(Meta("thread_name", Pid(d), 0, "compute"));
    for (sim::DeviceId dst{0}; dst < c.num_devices(); ++dst) {
      if (dst != d)
        events.push_back(
            Meta("thread_name", Pid(d), LinkTid(dst), "link to " + c.device(dst).name));
    }
  }
  for (const sim::OpInterval& op : timeline.ops) {
    const graph::Op& o = g.op(op.op);
    events.push_back({{"ph", "X"},
                      {"cat", "op"},
                      {"name", o.name},
                      {"pid", Pid(op.device)},
                      {"tid", 0},
                      {"ts", op.start_s * kMicros},
                      {"dur", (op.end_s - op.start_s) * kMicros},
                      {"args", {{"type", o.type}, {"kind", graph::OpKindName(o.kind)}}}});
  }
  int flow = 0;
  for (const sim::TransferInterval& t : timeline.transfers) {
    const graph::Tensor& tensor = g.tensor(t.tensor);
    const std::string name = g.op(tensor.producer).name + ":" + std::to_string(tensor.index);
    events.push_back({{"ph", "X"},
                      {"cat", "transfer"},
                      {"name", name},
                      {"pid", Pid(t.src)},
                      {"tid", LinkTid(t.dst)},
                      {"ts", t.start_s * kMicros},
                      {"dur", (t.end_s - t.start_s) * kMicros},
                      {"args", {{"bytes", tensor.bytes}, {"to", c.device(t.dst).name}}}});
    // Arrow from the transfer to the receiving device's next op.
    events.push_back({{"ph", "s"},
                      {"cat", "transfer"},
                      {"name", name},
                      {"id", flow},
                      {"pid", Pid(t.src)},
                      {"tid", LinkTid(t.dst)},
                      {"ts", t.start_s * kMicros}});
    events.push_back({{"ph", "f"},
                      {"cat", "transfer"},
                      {"name", name},
                      {"id", flow},
                      {"pid", Pid(t.dst)},
                      {"tid", 0},
                      {"ts", t.end_s * kMicros}});
    ++flow;
  }
  for (const sim::MemorySample& m : timeline.memory) {
    events.push_back({{"ph", "C"},
                      {"name", "memory"},
                      {"pid", Pid(m.device)},
                      {"ts", m.time_s * kMicros},
                      {"args", {{"bytes", m.bytes}}}});
  }
  return {{"traceEvents", events},
          {"displayTimeUnit", "ms"},
          {"otherData", {{"graph", g.name()}, {"cluster", c.name()}}}};
}

Json PipelineTrace(const sim::Problem& problem, const sim::PipelineResult& result) {
  const hw::Cluster& c = problem.c();
  Json events = Json::array();
  for (const sim::PipelineStage& stage : result.stages) {
    events.push_back(Meta("process_name", Pid(stage.device), 0,
                          c.device(stage.device).name + " (" + c.device(stage.device).kind + ")"));
    events.push_back(Meta("thread_name", Pid(stage.device), 0,
                          std::string(sched::ScheduleName(result.schedule))));
  }
  for (const sim::PipelineTask& t : result.tasks) {
    events.push_back({{"ph", "X"},
                      {"cat", t.kind == sim::TaskKind::kForward ? "forward" : "backward"},
                      {"name", static_cast<char>(t.kind) + std::to_string(t.microbatch)},
                      {"pid", Pid(t.device)},
                      {"tid", 0},
                      {"ts", t.start_s * kMicros},
                      {"dur", (t.end_s - t.start_s) * kMicros}});
  }
  return {{"traceEvents", events},
          {"displayTimeUnit", "ms"},
          {"otherData",
           {{"graph", problem.g().name()},
            {"cluster", c.name()},
            {"schedule", sched::ScheduleName(result.schedule)},
            {"microbatches", result.microbatches}}}};
}

}  // namespace dplace::report
