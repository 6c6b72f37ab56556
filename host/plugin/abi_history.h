// paraplan/host/plugin/abi_history.h: the released minors of ABI 1 as one table.
//
// One row per minor (1.0 first) with the size every struct a plugin hands the host had in it,
// built from paraplan/abi_history.h. The loader checks a plugin's tables against its own
// minor's row and reads a field a later minor appended only when the plugin holds it
// (holds_fields_of); docs/sdk.md prints the table and tests/abi checks each frozen minor's
// headers against its row.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace paraplan::host {

struct AbiMinorSizes {
  uint32_t minor;
  // Function tables and metadata (0: the struct did not exist in this minor).
  size_t plugin, strategy, executor, hardware, exporter;
  // Data a plugin hands the host.
  size_t hardware_profile, op, memory_item, pipeline, stage, schedule_step;
  // Arrays the host indexes with its own sizeof: they never grow within major 1.
  size_t param_spec, search_case, search_choice, plan_figures;
};

// Every released minor, 1.0 first; the last row is this host's PP_ABI_MINOR.
std::span<const AbiMinorSizes> abi_history();

// The row of `minor` (<= PP_ABI_MINOR).
const AbiMinorSizes& abi_sizes(uint32_t minor);

// Whether a struct of `struct_size` bytes, from a plugin built against `plugin_minor`, holds
// the fields minor `since` appended to it: the plugin knows that minor and the struct reaches
// that minor's size in `column`.
bool holds_fields_of(uint32_t plugin_minor, uint32_t struct_size, uint32_t since, size_t AbiMinorSizes::*column);

}  // namespace paraplan::host
