// `dplace bench` on a suite with regimes (bench_regimes.cc).
#pragma once

#include "dplace/cli/commands.h"
#include "dplace/run/suite.h"

namespace dplace::cli {

Status RunRegimeBench(const BenchFlags& flags, const run::Suite& suite);

}  // namespace dplace::cli
