// `modules`: whole modules in program order, cut into contiguous runs over the devices, each cut
// where the evaluator judges the step best — a device map as accelerate's infer_auto_device_map
// fills devices, searched instead of filled. Its use is a step that does not fit one device, run
// by eager PyTorch (docs/semantics.md, "Device maps"): under that runtime a cut inside a block
// whose own ops read both sides (a residual add) does not run, a cut between blocks does.
//
// For every depth D of the module paths, the units (leaf modules under --unit module:64) are
// grouped into blocks: the module each lies in, cut to D segments, in the program order of their
// first op; the root's own ops join the block before them; last, every unit a block of its own
// (what a graph without module names has). Devices: the accelerators in cluster
// order, then the CPUs (what accelerate offloads to last). For k = 1 .. min(devices, blocks), the
// blocks are cut into k runs, run j on device j: first where each run's compute time is equal,
// then each cut moved to every position between its neighbours, best by the evaluator
// (feasible first, then the smaller value), for two passes or until the budget (default 3,000
// evaluations) is spent. A unit its run's device may not run goes to its fastest allowed device.
// Deterministic; the seed is not used.
#pragma once

#include <memory>

#include "dplace/place/placer.h"

namespace dplace::place {

std::unique_ptr<Placer> MakeModuleSplitsPlacer();

}  // namespace dplace::place
