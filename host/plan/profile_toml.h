// paraplan/host/plan/profile_toml.h: any hardware profile written in the `toml` plugin's format.
//
// `paraplan hardware show NAME --toml` prints a bundled or installed profile this way, and a TOML
// profile that starts from another (`base = "h100-sxm"`) receives its base so. Every key is
// written, the optional ones too (an absent key would mean the format's default, not the
// profile's value), in the units docs/hardware.md gives, each number in the fewest digits that
// read back to the same double: the written profile evaluates to the same figures
// (HardwareShow.* holds the round trip for every bundled profile).
//
//   std::string text = paraplan::host::profile_toml(binding.profile());
#pragma once

#include <string>

#include "paraplan/hardware.h"

namespace paraplan::host {

std::string profile_toml(const pp_hardware_profile& profile);

}  // namespace paraplan::host
