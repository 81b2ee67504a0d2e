#include "dplace/base/interrupt.h"

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

namespace dplace {
namespace {

struct State {
  std::mutex mutex;  // guards heard and thread
  std::function<bool()> heard;
  std::thread::id thread;
  std::atomic<bool> installed{false};
  std::atomic<bool> fired{false};
  std::atomic<int64_t> last_asked_ns{0};
};

State& Global() {
  static State state;
  return state;
}

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

InterruptCheck::InterruptCheck(std::function<bool()> heard) {
  State& s = Global();
  const std::lock_guard<std::mutex> lock(s.mutex);
  s.heard = std::move(heard);
  s.thread = std::this_thread::get_id();
  s.fired = false;
  s.last_asked_ns = NowNs();
  s.installed = true;
}

InterruptCheck::~InterruptCheck() {
  State& s = Global();
  const std::lock_guard<std::mutex> lock(s.mutex);
  s.installed = false;
  s.fired = false;
  s.heard = nullptr;
}

bool InterruptCheck::fired() const { return Global().fired; }

bool Interrupted() {
  State& s = Global();
  if (!s.installed.load(std::memory_order_relaxed)) return false;
  if (s.fired.load(std::memory_order_relaxed)) return true;
  if (std::this_thread::get_id() != s.thread) return false;
  const int64_t now = NowNs();
  if (now - s.last_asked_ns.load(std::memory_order_relaxed) < 50'000'000) return false;
  s.last_asked_ns = now;
  if (s.heard && s.heard()) s.fired = true;
  return s.fired;
}

}  // namespace dplace
