// Writing output files so that nothing is ever half-written: the content goes to a temporary file
// beside the target, which is then renamed over it.
#pragma once

#include <string>
#include <string_view>

#include "dplace/base/status.h"

namespace dplace {

// Writes `content` to `path` atomically (temporary name in the same folder, then rename). On
// failure no file named `path` is created or changed, and the temporary file is removed.
Status WriteFileAtomically(const std::string& path, std::string_view content);

}  // namespace dplace
