// The integrity of a ZIP archive, checked before a library parses it: LibTorch's .pt files
// (policies, checkpoints) are ZIP archives whose entries LibTorch trusts; a damaged one can make
// its parser fail with pages of output or a signal. Each entry carries a CRC-32 of its bytes,
// which this checks.
#pragma once

#include <string>
#include <string_view>

#include "dplace/base/status.h"

namespace dplace {

// OK when `bytes` is an intact ZIP archive: an end-of-central-directory record (ZIP64 too), every
// central directory entry in bounds, a local header where it says with the same name, and, for
// every entry, stored or deflated (inflated with zlib), a CRC-32 of its data equal to the recorded
// one. Else InvalidInput saying what is wrong and in which entry ("entry 'archive/data.pkl':
// CRC-32 mismatch").
Status CheckZip(std::string_view bytes);

// The file's content, read once (an input of the run, noted with `kind`: file_util.h NoteInput),
// when CheckZip passes; InvalidInput "PATH: damaged <what> (...)" when it fails, or "PATH: cannot
// be read: <reason>" (an I/O error too). `what`: "policy file", "checkpoint".
StatusOr<std::string> ReadZipFile(const std::string& path, std::string_view what,
                                  std::string_view kind = "");

// The CRC-32 (ISO-HDLC, as ZIP and zlib compute it) of `bytes`.
uint32_t Crc32(std::string_view bytes);

}  // namespace dplace
