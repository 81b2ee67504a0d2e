#include "dplace/base/progress.h"

#include <unistd.h>

#include <cstdio>
#include <iostream>

namespace dplace {

Progress::Progress(int total, std::ostream& out, bool interactive, double delay_s)
    : total_(total),
      out_(out),
      interactive_(interactive),
      delay_s_(delay_s),
      start_(std::chrono::steady_clock::now()) {}

Progress::Progress(int total) : Progress(total, std::cerr, isatty(STDERR_FILENO) != 0) {}

Progress::~Progress() {
  if (shown_) out_ << "\r\033[K" << std::flush;
}

void Progress::Advance(std::string_view item) {
  ++done_;
  if (!interactive_) return;
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  if (elapsed < delay_s_) return;
  constexpr int kWidth = 30;
  const int filled = total_ > 0 ? kWidth * done_ / total_ : kWidth;
  char counts[64];
  std::snprintf(counts, sizeof(counts), "] %d/%d %.0f s ", done_, total_, elapsed);
  out_ << "\r\033[K[" << std::string(static_cast<size_t>(filled), '#')
       << std::string(static_cast<size_t>(kWidth - filled), '.') << counts << item.substr(0, 40)
       << std::flush;
  shown_ = true;
}

}  // namespace dplace
