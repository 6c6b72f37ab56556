// hardware/toml/profile_reader.h: reads a hardware profile from a TOML file.
//
// The format is a ProfileSpec (hardware/internal/profile_builder.h) written out in human units;
// docs/hardware.md ("TOML profile format") lists every key. Anything wrong -- an unreadable
// file, TOML syntax, an unknown key, a wrong type, a missing required key, a value out of range --
// throws paraplan::InvalidArgument with one line in the style of a compiler diagnostic, naming the
// file, the line and column, and the key:
//
//   my-gpu.toml:7:1: tiers[1].bandwidth_gb_s: must be > 0
//
// Example:
//   pp_hardware_profile profile = paraplan::hardware::read_toml_profile("my-gpu.toml");
#ifndef PARAPLAN_HARDWARE_TOML_PROFILE_READER_H
#define PARAPLAN_HARDWARE_TOML_PROFILE_READER_H

#include <string>
#include <string_view>

#include "paraplan/hardware.h"

namespace paraplan::hardware {

// Reads and validates the profile at `path` (relative paths are taken from the working directory).
// A profile that starts from another (`base = "h100-sxm"`) is laid over `base_document`, that
// profile in this format (paraplan writes it: host/plan/profile_toml.h); without one, `base` is
// an error.
pp_hardware_profile read_toml_profile(const std::string& path, std::string_view base_document = {});

// The same for a document already in memory; `path` is only used in messages.
pp_hardware_profile parse_toml_profile(std::string_view document, const std::string& path,
                                       std::string_view base_document = {});

}  // namespace paraplan::hardware

#endif  // PARAPLAN_HARDWARE_TOML_PROFILE_READER_H
