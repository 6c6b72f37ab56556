// paraplan/host/recipe/input_file.h: input files read within bounds, before any parser sees them.
//
// A recipe, a model preset, a hardware profile or a CSV of measured runs is read only if it is a
// regular file (not /dev/zero, a FIFO or a directory) no larger than its kind's limit; TOML text
// is also refused when it nests deeper than kMaxTomlDepth (dotted keys, table headers, arrays and
// inline tables together), because toml++ parses nesting by recursion and a 50,000-level dotted
// key exhausts the stack. Every refusal is an InputError naming the file (and the line).
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace paraplan::host {

inline constexpr size_t kMaxTomlBytes = 4u << 20;   // recipes, presets, profiles: real ones are < 20 KiB
inline constexpr size_t kMaxCsvBytes = 64u << 20;   // measured runs: the shipped sets are < 1 MiB
inline constexpr size_t kMaxTomlDepth = 64;

// The whole file, or InputError: "<file>: not a regular file", "<file>: 5000000 bytes, more than ...".
std::string read_bounded_file(const std::filesystem::path& file, size_t limit, const std::string& what);

// InputError "<name>:<line>:<column>: nesting deeper than 64 levels" when `text` nests too deep.
void check_toml_depth(std::string_view text, const std::string& name);

}  // namespace paraplan::host
