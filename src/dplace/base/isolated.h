// Runs a computation on a copy of the process (fork), so that a library that crashes on malformed
// input (libonnx 1.12's shape inference: SIGSEGV, SIGFPE) costs an error line, not the process, and
// one that does not keep its own time or memory limits (CBC's presolve and root LP) is stopped at
// ours. The child writes its result as bytes to a pipe; the parent reads them and reaps it.
#pragma once

#include <functional>
#include <string>

#include "dplace/base/status.h"

namespace dplace {

struct IsolatedLimits {
  double seconds = 600;  // the child is killed after this long
  double memory_bytes =
      0;  // its address space, where the build allows a cap (not under ASan); 0: none
  std::string on_crash;  // said after "<what> crashed (<signal>)"
};

// Runs `work` in a forked child and returns the bytes it produced. InvalidInput, with `what` in the
// message, when `work` fails (its Status, or an exception: std::bad_alloc is "ran out of memory"),
// dies on a signal, or runs past the time limit (it is then killed).
StatusOr<std::string> RunIsolated(const std::function<StatusOr<std::string>()>& work,
                                  const std::string& what, const IsolatedLimits& limits);

}  // namespace dplace
