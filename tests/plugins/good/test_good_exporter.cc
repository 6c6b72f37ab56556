// test_good_exporter: writes back what it was given, so tests can check the export context.
//   strategies.txt  one line per strategy: "<name> <degree> key=value ..." in application order
//   axes.txt        one line per mesh axis: "<name> <degree> <stride>"
// and reports one thing it "cannot express" whenever the plan has a pipeline.
#include <string>

#include "paraplan/sdk.hpp"

namespace {

class TestGoodExporter : public paraplan::Exporter {
 public:
  static paraplan::PluginInfo info() {
    return {"test_good_exporter", "1.0.0", "Test exporter: writes the strategies and axes it was given",
            {paraplan::ParamSpec::String("title", "plan", "first line of strategies.txt")}};
  }
  explicit TestGoodExporter(const paraplan::Params& params) : title_(params.string_value("title")) {}

  void export_plan(const paraplan::PlanView& plan, const pp_hardware_binding_v1&, const paraplan::ExportContext& context,
                   const paraplan::ArtifactSink& artifacts) override {
    std::string strategies = title_ + " " + context.model_name() + "\n";
    for (const auto& strategy : context.strategies()) {
      strategies += strategy.name + " " + std::to_string(strategy.degree);
      for (const auto& [key, value] : strategy.settings) strategies += " " + key + "=" + value;
      strategies += "\n";
    }
    std::string axes;
    for (const pp_mesh_axis& axis : plan.axes())
      axes += std::string(axis.name) + " " + std::to_string(axis.degree) + " " + std::to_string(axis.stride) + "\n";
    artifacts.text_file("strategies.txt", strategies);
    artifacts.text_file("axes.txt", axes);
    if (plan.pipeline().stages > 1) artifacts.unexpressed("test_good_exporter has no pipelines");
  }

 private:
  std::string title_;
};

}  // namespace

PARAPLAN_PLUGIN(TestGoodExporter)
