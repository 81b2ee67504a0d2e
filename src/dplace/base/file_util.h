// Writing output files so that nothing is ever half-written: the content goes to a temporary file
// beside the target (flushed to disk), which is then renamed over it, keeping the target's mode;
// a symbolic link is followed, so it stays a link to the new content.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dplace/base/status.h"

namespace dplace {

// Writes `content` to `path` atomically (temporary name in the same folder, fsync, then rename).
// On failure no file named `path` is created or changed, the temporary file is removed, and the
// error says why (the operating system's reason).
Status WriteFileAtomically(const std::string& path, std::string_view content);

// InvalidInput when `path` could not be written later: empty, a folder, in a folder that does not
// exist or cannot be written. `flag` names the option in the message ("--out").
Status CheckWritable(const std::string& flag, const std::string& path);

// Several outputs written as one: Add() writes each to its temporary file, Commit() renames them
// all; outputs not committed (an error, an early return) are removed when the set is destroyed.
class OutputSet {
 public:
  OutputSet() = default;
  OutputSet(const OutputSet&) = delete;
  OutputSet& operator=(const OutputSet&) = delete;
  ~OutputSet();

  Status Add(const std::string& path, std::string_view content);
  Status Commit();

 private:
  std::vector<std::pair<std::string, std::string>> pending_;  // (temporary, target)
};

}  // namespace dplace
