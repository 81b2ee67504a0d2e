#include "dplace/graph/synthetic.h"

#include <string>

#include "dplace/base/rng.h"
#include "dplace/graph/graph_builder.h"

namespace dplace::graph {

Graph MakeLayeredGraph(const SyntheticOptions& options) {
  Rng rng(options.seed);
  GraphBuilder builder("layered_" + std::to_string(options.num_ops));
  const int width = options.width > 0 ? options.width : 1;
  for (int i = 0; i < options.num_ops; ++i) {
    Op op;
    op.name = "op" + std::to_string(i);
    op.type = "Synthetic";
    const double gpu_s = 1e-4 + 9e-4 * rng.Uniform();
    op.time_s = {{"gpu", gpu_s}, {"cpu", 10 * gpu_s}};
    op.flops = gpu_s * 1e13;
    op.param_bytes = static_cast<double>(rng.Below(1 << 20));
    const double out_bytes = static_cast<double>(1024 + rng.Below(1 << 22));
    const OpId id = builder.AddOp(std::move(op), {{out_bytes, -1}});
    if (i >= width) {
      const int layer_start = (i / width - 1) * width;
      const auto a = static_cast<OpId>(layer_start +
                                       static_cast<int>(rng.Below(static_cast<uint64_t>(width))));
      const auto b = static_cast<OpId>(layer_start +
                                       static_cast<int>(rng.Below(static_cast<uint64_t>(width))));
      builder.AddEdge(a, 0, id);
      if (b != a) builder.AddEdge(b, 0, id);
    }
  }
  auto g = builder.Build();
  DPLACE_CHECK(g.ok());
  return std::move(g).value();
}

}  // namespace dplace::graph
