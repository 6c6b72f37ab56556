// hardware/internal/datasheet_hardware.h: the one plugin class behind every bundled profile.
//
// A bundled profile is data: a constexpr Datasheet (the ProfileSpec and a one-line description
// naming the GPU and the sources of its numbers). DatasheetHardware<datasheet> turns it into a
// hardware plugin, checked at compile time, so each profile file is the numbers and one macro:
//
//   constexpr Datasheet kH100Sxm{.profile = {...}, .description = "NVIDIA H100 SXM5 80GB; ..."};
//   using H100SxmHardware = DatasheetHardware<kH100Sxm>;
//   PARAPLAN_PLUGIN(H100SxmHardware)
//
// The plugin takes no parameters: a variant of a bundled GPU is a TOML profile (hardware/toml).
#ifndef PARAPLAN_HARDWARE_INTERNAL_DATASHEET_HARDWARE_H
#define PARAPLAN_HARDWARE_INTERNAL_DATASHEET_HARDWARE_H

#include <string>
#include <string_view>

#include "hardware/internal/profile_builder.h"
#include "paraplan/sdk.hpp"

namespace paraplan::hardware {

// Every bundled profile carries the same plugin version: they change together, with this file.
inline constexpr std::string_view kDatasheetPluginVersion = "1.0.0";

struct Datasheet {
  ProfileSpec profile;
  std::string_view description;
};

template <const Datasheet& kDatasheet>
class DatasheetHardware final : public Hardware {
  static_assert(check_profile(kDatasheet.profile).ok(),
                "invalid bundled profile: evaluate check_profile() on it to see which key");

 public:
  static PluginInfo info() {
    return {std::string(kDatasheet.profile.name), std::string(kDatasheetPluginVersion),
            std::string(kDatasheet.description), {}};
  }

  explicit DatasheetHardware(const Params& /*params: none declared*/)
      : profile_(build_profile(kDatasheet.profile)) {}

  pp_hardware_profile describe() override { return profile_; }

 private:
  pp_hardware_profile profile_;
};

}  // namespace paraplan::hardware

#endif  // PARAPLAN_HARDWARE_INTERNAL_DATASHEET_HARDWARE_H
