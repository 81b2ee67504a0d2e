#include "dplace/base/file_util.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>

namespace dplace {
namespace {

namespace fs = std::filesystem;

struct Noted {
  std::string path, kind;
};

// The inputs of the run, by device and inode, and how many RunInputs hold them.
std::mutex& InputsMutex() {
  static std::mutex m;
  return m;
}
std::map<std::pair<dev_t, ino_t>, Noted>& Inputs() {
  static std::map<std::pair<dev_t, ino_t>, Noted> inputs;
  return inputs;
}
int runs = 0;  // guarded by InputsMutex()

// The file a write to `path` should replace: the end of a chain of symbolic links, else `path`.
StatusOr<std::string> Target(const std::string& path) {
  fs::path at = path;
  for (int hops = 0; hops < 40; ++hops) {
    std::error_code ec;
    if (!fs::is_symlink(at, ec)) return at.string();
    const fs::path next = fs::read_symlink(at, ec);
    if (ec) return InvalidInput(path + ": cannot read the link: " + ec.message());
    at = next.is_absolute() ? next : at.parent_path() / next;
  }
  return InvalidInput(path + ": too many levels of symbolic links");
}

// InvalidInput when the file at `target` is an input of this run not of `kind`.
Status CheckNotAnInput(const std::string& path, const std::string& target, std::string_view kind) {
  struct stat st {};
  if (::stat(target.c_str(), &st) != 0) return OkStatus();
  const std::lock_guard<std::mutex> lock(InputsMutex());
  const auto found = Inputs().find({st.st_dev, st.st_ino});
  if (found == Inputs().end() || (!kind.empty() && found->second.kind == kind)) return OkStatus();
  return InvalidInput(
      path + ": is " +
      (found->second.path == path ? std::string("an input") : "the input " + found->second.path) +
      " of this run: writing it would replace it; name another file");
}

// Whether `target` exists and is no regular file (a FIFO, a device): written in place.
bool Special(const std::string& target) {
  struct stat st {};
  return ::stat(target.c_str(), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode);
}

// Writes all of `content` to `fd`; errno is set when it returns false.
bool WriteAll(int fd, std::string_view content) {
  size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = EIO;
      return false;
    }
    done += static_cast<size_t>(n);
  }
  return true;
}

// Writes `content` into the special file `target` (a FIFO needs a reader: none is an error, not a
// wait for ever).
Status WriteInPlace(const std::string& path, const std::string& target, std::string_view content) {
  const int fd = ::open(target.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    return InvalidInput(path + ": cannot open for writing: " +
                        (errno == ENXIO ? std::string("a FIFO with no reader")
                                        : std::string(std::strerror(errno))));
  }
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  if (!WriteAll(fd, content)) {
    const std::string reason = std::strerror(errno);
    ::close(fd);
    return InvalidInput(path + ": write failed: " + reason);
  }
  if (::close(fd) != 0) return InvalidInput(path + ": write failed: " + std::strerror(errno));
  return OkStatus();
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
  if (!WriteAll(fd, content)) return fail("write failed");
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

RunInputs::RunInputs() {
  const std::lock_guard<std::mutex> lock(InputsMutex());
  ++runs;
}

RunInputs::~RunInputs() {
  const std::lock_guard<std::mutex> lock(InputsMutex());
  if (--runs == 0) Inputs().clear();
}

void NoteInput(const std::string& path, std::string_view kind) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return;
  const std::lock_guard<std::mutex> lock(InputsMutex());
  if (runs == 0) return;
  Noted& noted = Inputs()[{st.st_dev, st.st_ino}];
  if (noted.path.empty()) noted.path = path;
  if (noted.kind.empty()) noted.kind = kind;
}

Status WriteFileAtomically(const std::string& path, std::string_view content,
                           std::string_view kind) {
  DPLACE_ASSIGN_OR_RETURN(const std::string target, Target(path));
  DPLACE_RETURN_IF_ERROR(CheckNotAnInput(path, target, kind));
  if (Special(target)) return WriteInPlace(path, target, content);
  DPLACE_ASSIGN_OR_RETURN(std::string tmp, WriteTemporary(path, target, content));
  return Rename(path, tmp, target);
}

Status CheckWritable(const std::string& flag, const std::string& path, std::string_view kind) {
  if (path.empty()) return InvalidInput(flag + ": the file name is empty");
  std::error_code ec;
  if (fs::is_directory(path, ec)) return InvalidInput(flag + ": " + path + " is a folder");
  auto target = Target(path);
  if (!target.ok()) return InvalidInput(flag + ": " + std::string(target.status().message()));
  if (Status input = CheckNotAnInput(path, *target, kind); !input.ok()) {
    return InvalidInput(flag + ": " + std::string(input.message()));
  }
  if (Special(*target)) return OkStatus();
  const fs::path file = *target;
  const fs::path folder = file.has_parent_path() ? file.parent_path() : fs::path(".");
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
  for (const Pending& p : pending_) {
    if (!p.temporary.empty()) std::remove(p.temporary.c_str());
  }
}

Status OutputSet::Add(const std::string& path, std::string_view content) {
  DPLACE_ASSIGN_OR_RETURN(std::string target, Target(path));
  DPLACE_RETURN_IF_ERROR(CheckNotAnInput(path, target, ""));
  if (Special(target)) {
    pending_.push_back({"", std::move(target), std::string(content)});
    return OkStatus();
  }
  DPLACE_ASSIGN_OR_RETURN(std::string tmp, WriteTemporary(path, target, content));
  pending_.push_back({std::move(tmp), std::move(target), ""});
  return OkStatus();
}

Status OutputSet::Commit() {
  std::vector<Pending> pending = std::move(pending_);
  pending_.clear();
  for (size_t i = 0; i < pending.size(); ++i) {
    const Pending& p = pending[i];
    Status done = p.temporary.empty() ? WriteInPlace(p.target, p.target, p.content)
                                      : Rename(p.target, p.temporary, p.target);
    if (!done.ok()) {
      for (size_t j = i + 1; j < pending.size(); ++j) {
        if (!pending[j].temporary.empty()) std::remove(pending[j].temporary.c_str());
      }
      return done;
    }
  }
  return OkStatus();
}

Status CheckOutputs(const std::vector<Output>& outputs, const std::vector<std::string>& inputs) {
  for (const std::string& input : inputs) {
    if (!input.empty()) NoteInput(input);
  }
  std::vector<std::pair<std::string, std::string>> seen;  // (canonical path, flag)
  for (const auto& [flag, path, kind] : outputs) {
    if (path.empty()) continue;
    DPLACE_RETURN_IF_ERROR(CheckWritable(flag, path, kind));
    std::error_code ec;
    const std::string canonical = std::filesystem::weakly_canonical(path, ec).string();
    for (const auto& [other, other_flag] : seen) {
      if (other == canonical) {
        return InvalidInput(flag + ": " + path + " is also the file of " + other_flag +
                            ": one would overwrite the other");
      }
    }
    seen.emplace_back(canonical, flag);
  }
  return OkStatus();
}

}  // namespace dplace
