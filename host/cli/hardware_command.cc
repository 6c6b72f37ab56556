// `paraplan hardware show NAME|FILE`: any hardware profile, bundled, installed or a file, printed in
// the format the `toml` plugin reads, to copy and change (or to start another from with `base`).
#include <nlohmann/json.hpp>

#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iomanip>
#include <sstream>

#include <spdlog/spdlog.h>

#include "host/cli/command.h"
#include "host/cli/common_options.h"
#include "host/core/errors.h"
#include "host/core/temporary_directory.h"
#include "host/plan/hardware_binding.h"
#include "host/plan/profile_toml.h"
#include "host/report/report_output.h"
#include "host/core/number_format.h"

namespace po = boost::program_options;

namespace paraplan::host {
namespace {

nlohmann::ordered_json profile_json(const pp_hardware_profile& profile, bool own_functions, const std::string& text) {
  nlohmann::ordered_json peaks = {{"fp32", profile.peak_flops[PP_DTYPE_FP32]}, {"tf32", profile.peak_flops[PP_DTYPE_TF32]},
                                  {"bf16", profile.peak_flops[PP_DTYPE_BF16]}, {"fp16", profile.peak_flops[PP_DTYPE_FP16]},
                                  {"fp8", profile.peak_flops[PP_DTYPE_FP8]},   {"mxfp8", profile.peak_flops_mxfp8},
                                  {"nvfp4", profile.peak_flops_nvfp4}};
  nlohmann::ordered_json report = {
      {"name", profile.name},
      {"gpus_per_node", profile.gpus_per_node},
      {"peak_flops", peaks},
      {"memory_bytes", profile.memory_bytes},
      {"memory_bandwidth_bytes_per_s", profile.memory_bandwidth_bytes_per_s},
      {"memory_efficiency", profile.memory_efficiency},
      {"host_link_bandwidth_bytes_per_s", profile.host_link_bandwidth_bytes_per_s},
      {"gemm_efficiency_max", profile.gemm_efficiency_max},
      {"gemm_efficiency_max_fp8", profile.gemm_efficiency_max_fp8},
      {"gemm_efficiency_max_fp4", profile.gemm_efficiency_max_fp4},
      {"gemm_half_efficiency_flops", profile.gemm_half_efficiency_flops},
      {"attention_efficiency", profile.attention_efficiency},
      {"attention_efficiency_flash2", profile.attention_efficiency_flash2},
      {"host_op_overhead_s", profile.host_op_overhead_s},
      {"overlap_compute_slowdown", profile.overlap_compute_slowdown},
      {"speed_variation", profile.speed_variation},
      {"tiers", nlohmann::ordered_json::array()},
      {"own_cost_functions", own_functions},
  };
  for (uint32_t i = 0; i < profile.tier_count && i < PP_MAX_TIERS; ++i) {
    const pp_tier& tier = profile.tiers[i];
    report["tiers"].push_back({{"name", tier.name},
                               {"domain_size", tier.domain_size},
                               {"bandwidth_bytes_per_s", tier.bandwidth_bytes_per_s},
                               {"latency_s", tier.latency_s},
                               {"efficiency", tier.efficiency}});
  }
  report["toml"] = text;
  return report;
}

// Why the printed profile would not read back as this profile ("" when it does): the text is
// read by the `toml` plugin, as a recipe naming it would, and written again. A plugin
// may describe what the format cannot say (no fp32 peak, a figure outside its ranges).
std::string read_back_problem(const std::string& text, const PluginCatalog& catalog) {
  const TemporaryDirectory directory("hardware_show");
  if (directory.path().empty()) return "no temporary directory to read it back from";
  const std::filesystem::path file = directory.path() / "profile.toml";
  std::ofstream(file) << text;
  std::string problem;
  try {
    // The writer prints every field in digits that read back to the same double, so equal texts
    // are equal profiles.
    const pp_hardware_profile read = open_hardware("", file.string(), "the printed profile", catalog)->profile();
    if (profile_toml(read) != text) problem = "it reads back as a different profile";
  } catch (const HostError& failure) {
    // The message names the temporary file; its key and reason are what matters.
    problem = failure.what();
    if (const size_t key = problem.rfind(".toml:"); key != std::string::npos)
      if (const size_t after = problem.find(": ", key + 6); after != std::string::npos) problem = problem.substr(after + 2);
  }
  return problem;
}

int show_hardware(const CommonOptions& common, const std::string& hardware) {
  const PluginCatalog catalog = scan_plugins(common);
  // Named as a recipe names it: a path or a .toml file is a profile file, anything else a plugin.
  const bool file = hardware.find('/') != std::string::npos || hardware.ends_with(".toml");
  if (file && !std::filesystem::is_regular_file(hardware))
    throw InputError("hardware profile file " + hardware + " does not exist");
  const std::unique_ptr<HardwareBinding> binding =
      open_hardware(hardware, file ? std::filesystem::absolute(hardware).lexically_normal().string() : "",
                    "hardware '" + hardware + "'", catalog);
  const pp_hardware_v1& functions = *binding->instance().metadata().hardware;
  const bool own_functions = functions.gemm_time || functions.collective_time;
  const std::string text = profile_toml(binding->profile());
  const std::string problem = read_back_problem(text, catalog);
  if (common.json) {
    nlohmann::ordered_json report = profile_json(binding->profile(), own_functions, text);
    report["reads_back"] = problem.empty();
    if (!problem.empty()) report["read_back_problem"] = problem;
    report_stream() << dump_json(report) << "\n";
  } else {
    if (own_functions)
      report_stream() << "# '" << hardware << "' prices GEMMs or collectives with functions of its own: these figures\n"
                      << "# alone, read back as a TOML profile, price them with paraplan's model instead.\n";
    if (!problem.empty()) report_stream() << "# Does not read back as this profile: " << problem << "\n";
    report_stream() << text;
  }
  // Nothing silently different: what the text does not carry is said on stderr too.
  if (own_functions)
    spdlog::warn("hardware '{}' has its own gemm_time or collective_time; a TOML profile of these figures prices "
                 "them with paraplan's default model instead",
                 hardware);
  if (!problem.empty())
    spdlog::warn("hardware '{}': the printed profile does not read back as this profile: {}", hardware, problem);
  return kExitOk;
}

// One line per hardware plugin: what tells GPUs apart at a glance.
int list_hardware(const CommonOptions& common) {
  const PluginCatalog catalog = scan_plugins(common);
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  std::ostringstream text;
  text << std::left << std::setw(16) << "NAME" << std::right << std::setw(10) << "GPUs/node" << std::setw(12) << "bf16 TF/s"
       << std::setw(12) << "fp8 TF/s" << std::setw(10) << "HBM GB" << std::setw(12) << "HBM GB/s" << "  tiers (GB/s per GPU)\n";
  for (const std::string& name : catalog.names_of_kind(PP_KIND_HARDWARE)) {
    if (name == kTomlHardwarePlugin) continue;  // a file's profile, not one of its own
    std::unique_ptr<HardwareBinding> binding;
    try {
      binding = open_hardware(name, "", "hardware '" + name + "'", catalog);
    } catch (const HostError& failure) {
      spdlog::warn("{}", failure.what());
      continue;
    }
    const pp_hardware_profile& profile = binding->profile();
    std::string tiers;
    for (uint32_t i = 0; i < profile.tier_count && i < PP_MAX_TIERS; ++i) {
      const pp_tier& tier = profile.tiers[i];
      tiers += (i ? ", " : "") + std::string(tier.name) + " " + format_number("%g", tier.bandwidth_bytes_per_s / 1e9) +
               (tier.domain_size > 0 ? " x" + std::to_string(tier.domain_size) : "");
    }
    rows.push_back({{"name", name},
                    {"gpus_per_node", profile.gpus_per_node},
                    {"bf16_flops", profile.peak_flops[PP_DTYPE_BF16]},
                    {"fp8_flops", profile.peak_flops[PP_DTYPE_FP8]},
                    {"memory_bytes", profile.memory_bytes},
                    {"memory_bandwidth_bytes_per_s", profile.memory_bandwidth_bytes_per_s},
                    {"tiers", tiers}});
    text << std::left << std::setw(16) << name << std::right << std::setw(10) << profile.gpus_per_node << std::setw(12)
         << format_number("%.0f", profile.peak_flops[PP_DTYPE_BF16] / 1e12) << std::setw(12)
         << format_number("%.0f", profile.peak_flops[PP_DTYPE_FP8] / 1e12) << std::setw(10)
         << format_number("%.0f", profile.memory_bytes / 1e9) << std::setw(12)
         << format_number("%.0f", profile.memory_bandwidth_bytes_per_s / 1e9) << "  " << tiers << "\n";
  }
  if (common.json)
    report_stream() << dump_json(nlohmann::ordered_json{{"hardware", rows}}) << "\n";
  else
    report_stream() << text.str();
  return kExitOk;
}

}  // namespace

int run_hardware_command(const std::vector<std::string>& arguments) {
  CommonOptions common;
  std::string action, name;
  bool toml_only = false;
  po::options_description options = common_options(common, /*with_json=*/true);
  options.add_options()("toml", po::bool_switch(&toml_only), "print the profile as TOML (the default)");
  parse_action_command(arguments, options, action, name);
  if (common.help || action.empty()) {
    print_command_help(
        "paraplan hardware list | show NAME|FILE [options]",
        "List the hardware profiles (peaks, memory, interconnect tiers), or print one, bundled\n"
        "(h100-sxm, b200, ...), installed or a TOML file, in the format of TOML profiles\n"
        "(docs/hardware.md): every key written, in its unit, each number exact. Save it, change what\n"
        "differs, and name the file in a recipe ([cluster] hardware = \"my-gpu.toml\"); or write only\n"
        "what differs, starting from this one:\n\n"
        "  name = \"h100-ib200\"\n"
        "  base = \"h100-sxm\"\n"
        "  [[tiers]]\n"
        "  name = \"infiniband\"         # a tier of the base, by name: only the keys given change\n"
        "  bandwidth_gbit_s = 200\n",
        options,
        "--json prints the figures in SI units (FLOP/s, bytes, seconds) beside the TOML text.\n"
        "A plugin that prices GEMMs or collectives with functions of its own is shown with a warning:\n"
        "its figures read back as a TOML profile are priced by paraplan's model instead.\n\n"
        "Exit codes: 0 success; 2 usage error; 3 no such hardware, or an impossible profile.\n");
    return common.help ? kExitOk : kExitUsage;
  }
  configure_logging(common);
  if (toml_only && common.json) throw UsageError("--toml and --json: choose one");
  if (action == "list") {
    if (!name.empty()) throw UsageError("'hardware list' takes no argument, got '" + name + "'");
    return list_hardware(common);
  }
  if (action == "show") {
    if (name.empty()) throw UsageError("'hardware show' needs a hardware NAME or a profile FILE");
    return show_hardware(common, name);
  }
  throw UsageError("unknown action '" + action + "' for 'hardware'; use 'list' or 'show NAME|FILE'");
}

}  // namespace paraplan::host
