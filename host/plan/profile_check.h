// paraplan/host/plan/profile_check.h: whether a hardware profile can describe a real machine.
//
// Every hardware plugin's profile passes through here, whatever built it: numbers finite and in
// physical bounds (SI units; at most 1 ZFLOP/s, 1 EB, 1 ZB/s, and no denormals), the tiers
// consistent, the names terminated. Past these bounds a converted figure overflows, or a step
// time does, and a report says "fits" with no time. The bundled profiles and the TOML reader
// also check their datasheet units key by key, with the file's line
// (hardware/internal/profile_builder.h).
#pragma once

#include <string>

#include "paraplan/hardware.h"

namespace paraplan::host {

// The first thing wrong with `profile` ("" when nothing is), naming the field.
std::string profile_problem(const pp_hardware_profile& profile);

}  // namespace paraplan::host
