// A progress bar on stderr for long runs: shown only when the stream is a terminal and the run
// has taken more than a second; otherwise nothing is written (logs and pipes stay clean).
#pragma once

#include <chrono>
#include <ostream>
#include <string>
#include <string_view>

namespace dplace {

class Progress {
 public:
  // `interactive`: whether `out` is a terminal (by default: whether stderr is one).
  Progress(int total, std::ostream& out, bool interactive, double delay_s = 1.0);
  explicit Progress(int total);
  ~Progress();  // clears the bar's line
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // One more item done; `item` names the next one.
  void Advance(std::string_view item = {});

 private:
  int total_, done_ = 0;
  std::ostream& out_;
  bool interactive_;
  double delay_s_;
  bool shown_ = false;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace dplace
