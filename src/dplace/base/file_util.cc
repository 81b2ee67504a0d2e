#include "dplace/base/file_util.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

namespace dplace {

Status WriteFileAtomically(const std::string& path, std::string_view content) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return InvalidInput(path + ": cannot open for writing");
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
    out.flush();
    if (!out) {
      std::remove(tmp.c_str());
      return InvalidInput(path + ": write failed");
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::remove(tmp.c_str());
    return InvalidInput(path + ": cannot rename temporary file: " + ec.message());
  }
  return OkStatus();
}

}  // namespace dplace
