// A request to stop a long run (Ctrl-C while Python waits in the core): the front end that can
// hear one installs a check for it (an InterruptCheck), and the places that ask their budget
// whether to go on (place::Budget) ask Interrupted() too, so every placer ends its search at
// once, with the best it has. Without a check installed nothing is ever interrupted.
#pragma once

#include <functional>

namespace dplace {

// Installs `heard` for its lifetime: it is called at most every 50 ms, on the thread that made
// this object (Python handles signals on its main thread only), and says whether a stop was
// asked for. One at a time.
class InterruptCheck {
 public:
  explicit InterruptCheck(std::function<bool()> heard);
  InterruptCheck(const InterruptCheck&) = delete;
  InterruptCheck& operator=(const InterruptCheck&) = delete;
  ~InterruptCheck();

  // Whether a stop was heard while it was installed.
  bool fired() const;
};

// Whether a stop was asked for (the installed check, asked now if its time has come and this is
// its thread; once true, true on every thread until the check is removed).
bool Interrupted();

}  // namespace dplace
