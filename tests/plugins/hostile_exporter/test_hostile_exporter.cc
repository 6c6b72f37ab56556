// test_hostile_exporter: tries to write outside the output directory; the host must refuse.
#include "paraplan/sdk.hpp"

namespace {

class TestHostileExporter : public paraplan::Exporter {
 public:
  static paraplan::PluginInfo info() {
    return {"test_hostile_exporter", "1.0.0", "Test exporter: writes ../outside.txt", {}};
  }
  explicit TestHostileExporter(const paraplan::Params&) {}
  void export_plan(const paraplan::PlanView&, const pp_hardware_binding_v1&, const paraplan::ExportContext&,
                   const paraplan::ArtifactSink& artifacts) override {
    artifacts.text_file("fine.txt", "inside\n");
    artifacts.text_file("../outside.txt", "escaped\n");
  }
};

}  // namespace

PARAPLAN_PLUGIN(TestHostileExporter)
