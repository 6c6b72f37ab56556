// hardware/toml/toml_hardware.cc: the `toml` hardware plugin, a profile read from a file.
//
// For hardware that has no bundled profile, or a bundled GPU with other numbers (a different
// network, measured efficiencies). A recipe asks for it by naming a file instead of a plugin,
// `[cluster] hardware = "my-gpu.toml"`; the host then creates this plugin with `file` set to that
// path, resolved against the recipe's directory. The file is read and checked once, when the
// plugin instance is created, so a bad profile fails before any planning starts. A file may start
// from another profile (`base = "h100-sxm"`) and change only some keys: the host resolves the
// name and passes that profile as `base_document`.
// Format: docs/hardware.md; example: examples/h100-pcie.toml.
#include <string>

#include "hardware/toml/profile_reader.h"
#include "paraplan/sdk.hpp"

namespace paraplan::hardware {
namespace {

class TomlHardware final : public Hardware {
 public:
  static PluginInfo info() {
    return {"toml", "1.1.0", "Any GPU: a hardware profile read from the TOML file named by 'file' (docs/hardware.md)",
            {ParamSpec::String("file", "", "path of the TOML hardware profile (relative: to the working directory)"),
             ParamSpec::String("base_document", "",
                               "the profile the file's `base` names, in this format (paraplan supplies it)")}};
  }

  explicit TomlHardware(const Params& params)
      : profile_(load(params.string_value("file"), params.string_value("base_document"))) {}

  pp_hardware_profile describe() override { return profile_; }

 private:
  static pp_hardware_profile load(const std::string& path, const std::string& base_document) {
    if (path.empty()) throw InvalidArgument("hardware 'toml': parameter 'file' is required (a TOML hardware profile)");
    return read_toml_profile(path, base_document);
  }

  pp_hardware_profile profile_;
};

}  // namespace
}  // namespace paraplan::hardware

using TomlHardware = paraplan::hardware::TomlHardware;
PARAPLAN_PLUGIN(TomlHardware)
