#include "dplace/base/isolated.h"

#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>

namespace dplace {
namespace {

// Writes all of `bytes`; false on a closed pipe.
bool WriteAll(int fd, const std::string& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

StatusOr<std::string> RunIsolated(const std::function<StatusOr<std::string>()>& work,
                                  const std::string& what, const IsolatedLimits& limits) {
  const double limit_s = limits.seconds;
  int fds[2];
  if (::pipe(fds) != 0) return Internal(what + ": pipe: " + std::strerror(errno));
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return Internal(what + ": fork: " + std::strerror(errno));
  }
  if (pid == 0) {
    ::close(fds[0]);
#if !defined(__SANITIZE_ADDRESS__)  // ASan reserves terabytes of address space up front
    if (limits.memory_bytes > 0) {
      const auto bytes = static_cast<rlim_t>(limits.memory_bytes);
      const rlimit cap{.rlim_cur = bytes, .rlim_max = bytes};
      ::setrlimit(RLIMIT_AS, &cap);
    }
#endif
    // First byte: 'o' and the result, or 'e' and the error message.
    // Nothing may unwind out of the child (into the caller's code, running on in a copy).
    StatusOr<std::string> result = [&]() -> StatusOr<std::string> {
      try {
        return work();
      } catch (const std::bad_alloc&) {
        char budget[64] = "";
        if (limits.memory_bytes > 0) {
          std::snprintf(budget, sizeof(budget), " (its budget: %.3g GiB)",
                        limits.memory_bytes / (1u << 30));
        }
        return InvalidInput(what + " ran out of memory" + budget);
      } catch (const std::exception& e) {
        return InvalidInput(what + " failed: " + e.what());
      }
    }();
    const bool written = result.ok() ? WriteAll(fds[1], "o" + *result)
                                     : WriteAll(fds[1], "e" + result.status().message());
    ::_exit(written ? 0 : 1);
  }
  ::close(fds[1]);
  std::string bytes;
  char buffer[1 << 16];
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(limit_s);
  bool timed_out = false;
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - std::chrono::steady_clock::now())
                          .count();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{.fd = fds[0], .events = POLLIN, .revents = 0};
    if (::poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 1000))) <= 0) continue;
    const ssize_t n = ::read(fds[0], buffer, sizeof(buffer));
    if (n <= 0) break;
    bytes.append(buffer, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  if (timed_out) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) {
    char seconds[32];
    std::snprintf(seconds, sizeof(seconds), "%.3g", limit_s);
    return InvalidInput(what + " ran past " + seconds + " s and was stopped");
  }
  if (WIFSIGNALED(status)) {
    return InvalidInput(what + " crashed (" + std::string(::strsignal(WTERMSIG(status))) + ")" +
                        (limits.on_crash.empty() ? "" : ": " + limits.on_crash));
  }
  if (bytes.empty() && WIFEXITED(status) && WEXITSTATUS(status) != 0) {
    // A crash a sanitizer caught: its handler reports it and exits, with no signal.
    return InvalidInput(what + " crashed (exit status " + std::to_string(WEXITSTATUS(status)) +
                        ")" + (limits.on_crash.empty() ? "" : ": " + limits.on_crash));
  }
  if (bytes.empty()) return InvalidInput(what + " gave no result");
  if (bytes[0] == 'e') return InvalidInput(bytes.substr(1));
  return bytes.substr(1);
}

}  // namespace dplace
