// paraplan/host/core/temporary_directory.h: a directory of this process's own (mode 0700, which
// nobody else may write to), removed with everything in it when the object goes.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <string>
#include <system_error>

namespace paraplan::host {

class TemporaryDirectory {
 public:
  // `purpose` names the directory (paraplan_<purpose>_XXXXXX); path() is empty when none could be made.
  explicit TemporaryDirectory(const std::string& purpose) {
    std::string pattern = (std::filesystem::temp_directory_path() / ("paraplan_" + purpose + "_XXXXXX")).string();
    if (::mkdtemp(pattern.data())) path_ = pattern;
  }
  ~TemporaryDirectory() {
    std::error_code ignored;
    if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
  }
  TemporaryDirectory(const TemporaryDirectory&) = delete;
  TemporaryDirectory& operator=(const TemporaryDirectory&) = delete;

  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace paraplan::host
