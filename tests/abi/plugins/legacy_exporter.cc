// abi_1_<m>_notes: an exporter built against minor m's frozen headers (exporters exist from 1.3
// on). It writes one text file listing the strategies with their degrees and settings, and says
// it cannot express anything else.
#include "legacy_names.h"
#include "paraplan/sdk.hpp"

namespace {

class LegacyNotes : public paraplan::Exporter {
 public:
  static paraplan::PluginInfo info() {
    return {PARAPLAN_LEGACY_NAME("notes"), "1.0.0", "an exporter built against a frozen ABI minor: lists the strategies", {}};
  }
  explicit LegacyNotes(const paraplan::Params&) {}

  void export_plan(const paraplan::PlanView& plan, const pp_hardware_binding_v1&, const paraplan::ExportContext& context,
                   const paraplan::ArtifactSink& artifacts) override {
    std::string text = "model " + context.model_name() + " on " + std::to_string(plan.cluster().num_gpus) + " GPUs\n";
    for (const auto& strategy : context.strategies()) {
      text += strategy.name + " degree=" + std::to_string(strategy.degree);
      for (const auto& [key, value] : strategy.settings) text += " " + key + "=" + value;
      text += "\n";
    }
    artifacts.text_file("legacy.txt", text);
    artifacts.unexpressed(std::string(PARAPLAN_LEGACY_NAME("notes")) + ": expresses nothing but this list");
  }
};

}  // namespace

PARAPLAN_PLUGIN(LegacyNotes)
