// Runs a computation on a copy of the process (fork), so that a library that crashes on malformed
// input (libonnx 1.12's shape inference: SIGSEGV, SIGFPE) costs an error line, not the process.
// The child writes its result as bytes to a pipe; the parent reads them and reaps it.
#pragma once

#include <functional>
#include <string>

#include "dplace/base/status.h"

namespace dplace::io {

// Runs `work` in a forked child and returns the bytes it produced. InvalidInput, with `what` in the
// message, when `work` fails (its Status), dies on a signal, or runs past `limit_s` seconds (it is
// then killed).
StatusOr<std::string> RunIsolated(const std::function<StatusOr<std::string>()>& work,
                                  const std::string& what, double limit_s);

}  // namespace dplace::io
