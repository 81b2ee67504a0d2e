// Writing output files so that nothing is ever half-written or lost: the content goes to a
// temporary file beside the target (flushed to disk), which is then renamed over it, keeping the
// target's mode; a chain of symbolic links is followed to its end, so each link stays a link to the
// new content. A target that is no regular file (a FIFO, /dev/null) is written in place, never
// replaced. No output replaces a file this run read (NoteInput), under whatever name it is given.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dplace/base/status.h"

namespace dplace {

// The files read while one exists are the inputs of a run (the CLI holds one for its command;
// without one, nothing is noted): no output replaces them.
class RunInputs {
 public:
  RunInputs();
  RunInputs(const RunInputs&) = delete;
  RunInputs& operator=(const RunInputs&) = delete;
  ~RunInputs();
};

// Notes `path` as an input of the run (ReadFile notes every file it reads): no output may replace
// it, also when named otherwise (./name, a link, a hard link). `kind` names what it holds where an
// output of the same kind may replace it ("checkpoint": resuming from a checkpoint and writing
// the next one over it); "" for none.
void NoteInput(const std::string& path, std::string_view kind = "");

// Writes `content` to `path` atomically (temporary name in the same folder, fsync, then rename).
// On failure no file named `path` is created or changed, the temporary file is removed, and the
// error says why (the operating system's reason). Refused when `path` is an input of this run,
// unless it was noted with the same non-empty `kind`.
Status WriteFileAtomically(const std::string& path, std::string_view content,
                           std::string_view kind = "");

// InvalidInput when `path` could not be written later: empty, a folder, in a folder that does not
// exist or cannot be written, an input of this run read so far (as WriteFileAtomically). `flag`
// names the option in the message ("--out").
Status CheckWritable(const std::string& flag, const std::string& path, std::string_view kind = "");

// An output file of a command: its flag (or field), its path (empty: not asked for), and what it
// holds where it may replace an input of the same kind (NoteInput: "checkpoint").
struct Output {
  std::string flag, path;
  std::string_view kind = "";
};

// Before any work: every output path can be written, no two are the same file, and none is one of
// the command's `inputs` (the files it reads, noted as inputs of the run first; a name that is no
// file, a preset, is skipped) under any name (./name, a link, a hard link).
Status CheckOutputs(const std::vector<Output>& outputs, const std::vector<std::string>& inputs);

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
  struct Pending {
    std::string temporary;  // empty: `target` is no regular file, written in place at Commit
    std::string target;
    std::string content;  // what is written in place
  };
  std::vector<Pending> pending_;
};

}  // namespace dplace
