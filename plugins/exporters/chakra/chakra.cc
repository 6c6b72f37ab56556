// chakra: writes a plan as MLCommons Chakra execution traces for ASTRA-sim: one trace per rank
// (<prefix>.<rank>.et: a length-delimited protobuf stream, GlobalMetadata then every Node, each
// preceded by its varint length, as Chakra's protolib encodes them) and the communicator groups
// ASTRA-sim reads with --comm-group-configuration (<prefix>.comm_groups.json: group id -> ranks),
// plus <prefix>.comm_groups.names.json naming each group by mesh axis and index.
//
//   paraplan export RECIPE --to chakra --out DIR
//   AstraSim_Analytical_Congestion_Aware --workload-configuration=DIR/trace
//       --comm-group-configuration=DIR/trace.comm_groups.json --system-configuration=... ...
#include <cmath>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "chakra_trace.h"
#include "et_def.pb.h"
#include "paraplan/sdk.hpp"
#include "rank_mesh.h"

namespace {

ChakraProtoMsg::CollectiveCommType comm_type(pp_collective collective) {
  switch (collective) {
    case PP_COLLECTIVE_ALL_GATHER: return ChakraProtoMsg::ALL_GATHER;
    case PP_COLLECTIVE_REDUCE_SCATTER: return ChakraProtoMsg::REDUCE_SCATTER;
    case PP_COLLECTIVE_ALL_TO_ALL: return ChakraProtoMsg::ALL_TO_ALL;
    case PP_COLLECTIVE_BROADCAST: return ChakraProtoMsg::BROADCAST;
    default: return ChakraProtoMsg::ALL_REDUCE;
  }
}

void add_int64(ChakraProtoMsg::Node& node, const char* name, int64_t value) {
  ChakraProtoMsg::AttributeProto* attr = node.add_attr();
  attr->set_name(name);
  attr->set_int64_val(value);
}
void add_int32(ChakraProtoMsg::Node& node, const char* name, int32_t value) {
  ChakraProtoMsg::AttributeProto* attr = node.add_attr();
  attr->set_name(name);
  attr->set_int32_val(value);
}

// Appends `message` preceded by its length as a varint (Chakra's encodeMessage).
void append_delimited(std::string& out, const google::protobuf::MessageLite& message, std::string& scratch) {
  scratch.clear();
  message.SerializeToString(&scratch);
  uint64_t length = scratch.size();
  while (length >= 0x80) {
    out.push_back(static_cast<char>((length & 0x7f) | 0x80));
    length >>= 7;
  }
  out.push_back(static_cast<char>(length));
  out += scratch;
}

class ChakraExporter : public paraplan::Exporter {
 public:
  static constexpr uint32_t flags = PP_EXPORTER_WALKS_SCHEDULE | PP_EXPORTER_NEEDS_DIRECTORY;
  static paraplan::PluginInfo info() {
    return {"chakra", "1.0.0",
            "MLCommons Chakra execution traces (one per rank) and communicator groups for ASTRA-sim",
            {paraplan::ParamSpec::String("prefix", "trace",
                                         "file prefix: <prefix>.<rank>.et and <prefix>.comm_groups.json "
                                         "(ASTRA-sim's --workload-configuration is DIR/<prefix>)"),
             paraplan::ParamSpec::Bool("merge_compute", true,
                                       "merge consecutive compute ops of a block into one COMP node")}};
  }
  explicit ChakraExporter(const paraplan::Params& params)
      : prefix_(params.string_value("prefix")), merge_compute_(params.bool_value("merge_compute")) {
    if (prefix_.empty() || prefix_.find('/') != std::string::npos || prefix_ == "." || prefix_ == "..")
      throw paraplan::InvalidArgument("export.chakra.prefix: expected a file name without '/', got '" + prefix_ + "'");
  }

  void export_plan(const paraplan::PlanView& plan, const pp_hardware_binding_v1& hardware,
                   const paraplan::ExportContext& context, const paraplan::ArtifactSink& artifacts) override {
    const chakra_export::TraceSet traces = chakra_export::build_traces(plan, hardware, {merge_compute_});
    const int64_t gpus = plan.cluster().num_gpus;
    const int64_t stages = static_cast<int64_t>(plan.stages().size());
    const rank_program::RankMesh mesh(plan.axes(), gpus, stages, traces.pipeline_axis, /*every_rank=*/true);

    // Communicator groups: every group of every mesh axis, numbered from 1 (ASTRA-sim reads the
    // keys as integers and takes "0" or no name for the group of all ranks).
    const auto axes = plan.axes();
    std::vector<int32_t> first_id(axes.size());
    nlohmann::ordered_json groups = nlohmann::ordered_json::object();
    nlohmann::ordered_json names = nlohmann::ordered_json::object();
    int32_t next_id = 1;
    std::vector<int32_t> members;
    for (size_t axis = 0; axis < axes.size(); ++axis) {
      first_id[axis] = next_id;
      const int32_t count = mesh.groups(static_cast<int32_t>(axis));
      std::vector<bool> seen(static_cast<size_t>(count), false);
      std::vector<std::vector<int32_t>> by_group(static_cast<size_t>(count));
      for (int32_t rank = 0; rank < mesh.size(); ++rank) {
        const int32_t group = mesh.group(rank, static_cast<int32_t>(axis));
        if (seen[static_cast<size_t>(group)]) continue;
        seen[static_cast<size_t>(group)] = true;
        mesh.members(rank, static_cast<int32_t>(axis), members);
        by_group[static_cast<size_t>(group)] = members;
      }
      for (int32_t group = 0; group < count; ++group) {
        const std::string id = std::to_string(next_id + group);
        groups[id] = by_group[static_cast<size_t>(group)];
        names[id] = {{"name", std::string(axes[axis].name) + "." + std::to_string(group)},
                     {"axis", axes[axis].name},
                     {"index", group},
                     {"ranks", by_group[static_cast<size_t>(group)]}};
      }
      next_id += count;
    }
    artifacts.text_file(prefix_ + ".comm_groups.json", groups.dump(2) + "\n");
    artifacts.text_file(prefix_ + ".comm_groups.names.json", names.dump(2) + "\n");

    ChakraProtoMsg::GlobalMetadata metadata;
    ChakraProtoMsg::Node node;
    std::string scratch;
    for (int32_t rank = 0; rank < mesh.size(); ++rank) {
      const chakra_export::StageTrace& trace = traces.stages[static_cast<size_t>(mesh.stage(rank))];
      std::string out;
      out.reserve(trace.nodes.size() * 120 + 256);
      metadata.Clear();
      metadata.set_version("0.0.4");
      auto text_attr = [&](const char* name, const std::string& value) {
        ChakraProtoMsg::AttributeProto* attr = metadata.add_attr();
        attr->set_name(name);
        attr->set_string_val(value);
      };
      text_attr("generator", "paraplan chakra exporter");
      text_attr("recipe", context.recipe_file());
      text_attr("model", context.model_name());
      ChakraProtoMsg::AttributeProto* rank_attr = metadata.add_attr();
      rank_attr->set_name("rank");
      rank_attr->set_int64_val(rank);
      append_delimited(out, metadata, scratch);

      for (size_t id = 0; id < trace.nodes.size(); ++id) {
        const chakra_export::TraceNode& source = trace.nodes[id];
        node.Clear();
        node.set_id(id);
        node.set_name(source.name);
        for (uint32_t dep : source.deps) node.add_data_deps(dep);
        node.set_duration_micros(static_cast<uint64_t>(std::llround(std::max(source.seconds, 0.0) * 1e6)));
        switch (source.kind) {
          case chakra_export::NodeKind::kCompute:
            node.set_type(ChakraProtoMsg::COMP_NODE);
            add_int64(node, "num_ops", static_cast<int64_t>(std::llround(source.flops)));
            break;
          case chakra_export::NodeKind::kCollective: {
            node.set_type(ChakraProtoMsg::COMM_COLL_NODE);
            add_int64(node, "comm_type", comm_type(source.collective));
            add_int64(node, "comm_size", static_cast<int64_t>(std::llround(source.bytes)));
            ChakraProtoMsg::AttributeProto* pg = node.add_attr();
            pg->set_name("pg_name");
            pg->set_string_val(std::to_string(first_id[static_cast<size_t>(source.axis)] + mesh.group(rank, source.axis)));
            break;
          }
          case chakra_export::NodeKind::kSend:
          case chakra_export::NodeKind::kRecv: {
            const bool send = source.kind == chakra_export::NodeKind::kSend;
            const int32_t peer = mesh.at_stage(rank, source.peer_stage);
            node.set_type(send ? ChakraProtoMsg::COMM_SEND_NODE : ChakraProtoMsg::COMM_RECV_NODE);
            add_int32(node, "comm_src", send ? rank : peer);
            add_int32(node, "comm_dst", send ? peer : rank);
            add_int32(node, "comm_tag", source.tag);
            add_int64(node, "comm_size", static_cast<int64_t>(std::llround(source.bytes)));
            break;
          }
        }
        ChakraProtoMsg::AttributeProto* cpu = node.add_attr();
        cpu->set_name("is_cpu_op");
        cpu->set_bool_val(false);
        append_delimited(out, node, scratch);
      }
      artifacts.binary_file(prefix_ + "." + std::to_string(rank) + ".et", out);
    }

    for (const std::string& line : traces.unexpressed) artifacts.unexpressed(line);
    // Chakra's durations are whole microseconds: say so when that loses a node's time entirely.
    size_t vanished = 0;
    for (const chakra_export::StageTrace& trace : traces.stages)
      for (const chakra_export::TraceNode& source : trace.nodes)
        if (source.kind == chakra_export::NodeKind::kCompute && source.seconds > 0 && source.seconds < 0.5e-6)
          ++vanished;
    if (vanished > 0)
      artifacts.unexpressed(std::to_string(vanished) +
                            " compute nodes of the stage programs last under half a microsecond: Chakra's "
                            "duration_micros rounds them to 0 (ASTRA-sim replays 0 as 1 ns)");
  }

 private:
  std::string prefix_;
  bool merge_compute_;
};

}  // namespace

PARAPLAN_PLUGIN(ChakraExporter)
