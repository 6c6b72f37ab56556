#include "host/plugin/plugin_trust.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>

namespace paraplan::host {
namespace {

std::string mode_text(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof(text), "%04o", static_cast<unsigned>(mode & 07777));
  return text;
}

// Ownership and write permission of one resolved path.
std::string untrusted_inode_reason(const std::filesystem::path& path, const struct stat& status) {
  if (status.st_mode & S_IWOTH)
    return path.string() + " is writable by everyone (mode " + mode_text(status.st_mode) + ")";
  const uid_t user = geteuid();
  if (status.st_uid != user && status.st_uid != 0)
    return path.string() + " belongs to uid " + std::to_string(status.st_uid) + ", neither you (uid " +
           std::to_string(user) + ") nor root";
  return "";
}

}  // namespace

std::string untrusted_directory_reason(const std::filesystem::path& directory) {
  struct stat status {};
  if (stat(directory.c_str(), &status) != 0) return directory.string() + " does not exist";
  if (!S_ISDIR(status.st_mode)) return directory.string() + " is not a directory";
  return untrusted_inode_reason(directory, status);
}

std::string untrusted_file_reason(const std::filesystem::path& file) {
  std::error_code error;
  const std::filesystem::path target = std::filesystem::canonical(file, error);
  if (error) return file.string() + " cannot be resolved (" + error.message() + ")";
  return untrusted_file_reason(file, target);
}

std::string untrusted_file_reason(const std::filesystem::path& file, const std::filesystem::path& target) {
  const std::string shown = target == file ? file.string() : file.string() + " -> " + target.string();
  struct stat status {};
  if (stat(target.c_str(), &status) != 0) return shown + " cannot be read";
  if (!S_ISREG(status.st_mode)) return shown + " is not a regular file";
  if (std::string reason = untrusted_inode_reason(target, status); !reason.empty())
    return target == file ? reason : file.string() + " leads to " + reason;
  if (std::string reason = untrusted_directory_reason(target.parent_path()); !reason.empty())
    return target == file ? reason : file.string() + " leads into " + reason;
  return "";
}

bool is_hidden(const std::filesystem::path& file) {
  const std::string name = file.filename().string();
  return !name.empty() && name.front() == '.';
}

}  // namespace paraplan::host
