#include "dplace/base/file_util.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

namespace dplace {
namespace {

namespace fs = std::filesystem;

// The file a write to `path` should replace: the target of a symbolic link, else `path`.
std::string Target(const std::string& path) {
  std::error_code ec;
  if (fs::is_symlink(path, ec)) {
    const fs::path target = fs::read_symlink(path, ec);
    if (!ec)
      return (target.is_absolute() ? target : fs::path(path).parent_path() / target).string();
  }
  return path;
}

// Writes `content` to a new temporary file beside `target`, with `target`'s mode if it exists,
// flushed to disk. Returns the temporary's name.
StatusOr<std::string> WriteTemporary(const std::string& path, const std::string& target,
                                     std::string_view content) {
  const std::string tmp = target + ".tmp." + std::to_string(::getpid());
  struct stat existing {};
  const mode_t mode = ::stat(target.c_str(), &existing) == 0 ? (existing.st_mode & 07777) : 0644;
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) return InvalidInput(path + ": cannot open for writing: " + std::strerror(errno));
  auto fail = [&](const char* what) {
    const std::string reason = std::strerror(errno);
    ::close(fd);
    std::remove(tmp.c_str());
    return InvalidInput(path + ": " + what + ": " + reason);
  };
  size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return fail("write failed");
    done += static_cast<size_t>(n);
  }
  if (::fchmod(fd, mode) != 0) return fail("cannot set the file's mode");  // umask aside
  if (::fsync(fd) != 0) return fail("cannot flush to disk");
  if (::close(fd) != 0) {
    std::remove(tmp.c_str());
    return InvalidInput(path + ": write failed: " + std::strerror(errno));
  }
  return tmp;
}

Status Rename(const std::string& path, const std::string& tmp, const std::string& target) {
  if (std::rename(tmp.c_str(), target.c_str()) != 0) {
    const std::string reason = std::strerror(errno);
    std::remove(tmp.c_str());
    return InvalidInput(path + ": cannot rename the temporary file: " + reason);
  }
  return OkStatus();
}

}  // namespace

Status WriteFileAtomically(const std::string& path, std::string_view content) {
  const std::string target = Target(path);
  DPLACE_ASSIGN_OR_RETURN(std::string tmp, WriteTemporary(path, target, content));
  return Rename(path, tmp, target);
}

Status CheckWritable(const std::string& flag, const std::string& path) {
  if (path.empty()) return InvalidInput(flag + ": the file name is empty");
  std::error_code ec;
  if (fs::is_directory(path, ec)) return InvalidInput(flag + ": " + path + " is a folder");
  const fs::path target = Target(path);
  const fs::path folder = target.has_parent_path() ? target.parent_path() : fs::path(".");
  if (!fs::is_directory(folder, ec)) {
    return InvalidInput(flag + ": " + path + ": folder " + folder.string() + " does not exist");
  }
  if (::access(folder.c_str(), W_OK) != 0) {
    return InvalidInput(flag + ": " + path + ": folder " + folder.string() +
                        " cannot be written: " + std::strerror(errno));
  }
  return OkStatus();
}

OutputSet::~OutputSet() {
  for (const auto& [tmp, target] : pending_) std::remove(tmp.c_str());
}

Status OutputSet::Add(const std::string& path, std::string_view content) {
  const std::string target = Target(path);
  DPLACE_ASSIGN_OR_RETURN(std::string tmp, WriteTemporary(path, target, content));
  pending_.emplace_back(std::move(tmp), target);
  return OkStatus();
}

Status OutputSet::Commit() {
  std::vector<std::pair<std::string, std::string>> pending = std::move(pending_);
  pending_.clear();
  for (size_t i = 0; i < pending.size(); ++i) {
    const Status renamed = Rename(pending[i].second, pending[i].first, pending[i].second);
    if (!renamed.ok()) {
      for (size_t j = i + 1; j < pending.size(); ++j) std::remove(pending[j].first.c_str());
      return renamed;
    }
  }
  return OkStatus();
}

}  // namespace dplace
