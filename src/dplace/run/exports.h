// The export formats as one table: what `place --export NAME=FILE` and Python's write_NAME
// write for a plan, what each asks of the problem (the plan chosen is judged as its file runs),
// and its writer. A new format is its row and its writer.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "dplace/base/json_node.h"
#include "dplace/base/status.h"
#include "dplace/run/load.h"
#include "dplace/run/run.h"

namespace dplace::run {

// A file to write (every format is JSON) and what the user should read about it.
struct ExportFile {
  Json content;
  std::vector<std::string> notes;
};

struct ExportRow {
  std::string_view name;       // device_map, stages
  std::string_view noun;       // in messages: "a device map"
  std::string_view judged_by;  // what runs it: "eager PyTorch"
  // Fills what the problem's spec leaves open so that plans are judged as the file runs; refuses
  // (InvalidInput naming the field) a spec that says otherwise.
  Status (*prepare)(ProblemSpec* spec) = nullptr;
  // The file for `placement`; InvalidInput where the plan cannot be written in this format.
  StatusOr<ExportFile> (*write)(const sim::Problem& problem,
                                const sim::Placement& placement) = nullptr;
  // Where the plan chosen cannot be written: the placer whose plans always can (run when no
  // other result can be written; empty: none, the error stands), and what the note says of it
  // ("the written plan (P) <fallback_note> Q's (value)").
  std::string_view fallback_placer;
  std::string_view fallback_note;
};

std::span<const ExportRow> ExportTable();
// The row named `name`; InvalidInput "export: 'x' is not device_map or stages".
StatusOr<const ExportRow*> FindExport(std::string_view name);

// What writing every format of `names` asks of the problem (each row's prepare). InvalidInput,
// naming the field, for an unknown format, for two that are judged by different runtimes, or for
// a spec that says otherwise.
Status SpecForExports(const std::vector<std::string>& names, ProblemSpec* spec);

// The file `row` writes for the plan `place` chose (results[chosen]). Where that plan cannot be
// written in the format and the row has a fallback placer: the best result that can (by
// place::ScoreOf), else the fallback placer's, run now with `request`; the file's "note" and
// "placer" and a note for the user then say whose.
StatusOr<ExportFile> ExportOfResults(const ExportRow& row,
                                     const std::shared_ptr<const sim::Problem>& problem,
                                     const std::vector<PlacerResult>& results, int chosen,
                                     const RunRequest& request);

}  // namespace dplace::run
