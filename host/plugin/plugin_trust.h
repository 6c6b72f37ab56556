// paraplan/host/plugin/plugin_trust.h: which directories and files the host may take code (or
// implicitly found data) from.
//
// The rules of loaders that run code found on a path (the Vulkan loader, GStreamer): a directory
// or file that anyone may write to, or that belongs to another user, could hold someone else's
// code; so could a symbolic link that leads there, which is why links are resolved and the place
// they lead to is checked the same way. Root's files are trusted (the system installed them),
// and so are the user's own. `--allow-insecure-plugins` turns each refusal into a warning.
#pragma once

#include <filesystem>
#include <string>

namespace paraplan::host {

// Why `directory` may not be trusted ("" when it may): it is not a directory, it is writable
// by everyone, or it belongs to neither this user nor root.
std::string untrusted_directory_reason(const std::filesystem::path& directory);

// Why the file `file` may not be trusted ("" when it may): what it resolves to is not a regular
// file, is writable by everyone, belongs to neither this user nor root, or lies in a directory
// that is not trusted.
std::string untrusted_file_reason(const std::filesystem::path& file);
// The same for a file already resolved to `target` (std::filesystem::canonical), so a caller that
// needs the target too walks the path once.
std::string untrusted_file_reason(const std::filesystem::path& file, const std::filesystem::path& target);

// A hidden file (".name"): never scanned, as editors and tools keep their own files so.
bool is_hidden(const std::filesystem::path& file);

}  // namespace paraplan::host
