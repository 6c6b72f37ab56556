// The chakra exporter (plugins/exporters/chakra): per-rank Chakra execution traces read back
// with protobuf, their node counts, types, groups and point-to-point pairs checked against the
// plan they were written from, and the communicator groups ASTRA-sim reads.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "et_def.pb.h"
#include "host/export/exporting.h"
#include "paraplan/sdk.hpp"
#include "export_test_support.h"
#include "test_support.h"

namespace paraplan::host {
namespace {

// A small GPT: 4 layers of width 1024 on 8 GPUs, TP = 2 (innermost), PP = 2 (1F1B), and FSDP
// over the remaining 2 ranks; global batch 8 of micro-batch 1: 4 micro-batches per step.
std::string small_recipe(const std::string& export_table = "") {
  return "[model]\nlayers = 4\nhidden = 1024\nheads = 16\nvocab = 8192\nseq_len = 1024\n"
         "[training]\nglobal_batch = 8\nmicro_batch = 1\n"
         "[cluster]\nhardware = \"h100-sxm\"\nnum_gpus = 8\n"
         "[[strategy]]\nname = \"tp\"\ndegree = 2\n"
         "[[strategy]]\nname = \"pp\"\ndegree = 2\nschedule = \"1f1b\"\n"
         "[[strategy]]\nname = \"fsdp\"\n" +
         export_table;
}

struct Exported {
  std::unique_ptr<Recipe> recipe;
  std::unique_ptr<HardwareBinding> hardware;
  ComposedPlan composed;
  ExportResult result;

  const ExportedFile* file(const std::string& name) const { return test::find_file(result, name); }
};

Exported export_chakra(const std::string& text) {
  Exported exported;
  exported.recipe = parse_recipe(text, "recipe.toml");
  exported.hardware = open_hardware(*exported.recipe, test::bundled_catalog());
  exported.composed = compose_plan(*exported.recipe, test::bundled_catalog(),
                                   gpus_per_node(*exported.recipe, *exported.hardware));
  exported.result = run_exporter("chakra", *exported.recipe, test::bundled_catalog(), exported.composed,
                                 *exported.hardware);
  return exported;
}

struct Trace {
  ChakraProtoMsg::GlobalMetadata metadata;
  std::vector<ChakraProtoMsg::Node> nodes;
};

// Chakra's stream: each message preceded by its length as a varint.
Trace decode(const std::string& bytes) {
  Trace trace;
  size_t at = 0;
  bool first = true;
  while (at < bytes.size()) {
    uint64_t length = 0;
    int shift = 0;
    while (true) {
      if (at >= bytes.size()) throw std::runtime_error("truncated varint");
      const auto byte = static_cast<uint8_t>(bytes[at++]);
      length |= uint64_t{byte & 0x7fu} << shift;
      if (!(byte & 0x80)) break;
      shift += 7;
    }
    if (at + length > bytes.size()) throw std::runtime_error("truncated message");
    const std::string body = bytes.substr(at, length);
    at += length;
    if (first) {
      if (!trace.metadata.ParseFromString(body)) throw std::runtime_error("bad GlobalMetadata");
      first = false;
    } else {
      ChakraProtoMsg::Node node;
      if (!node.ParseFromString(body)) throw std::runtime_error("bad Node");
      trace.nodes.push_back(std::move(node));
    }
  }
  return trace;
}

const ChakraProtoMsg::AttributeProto* attr(const ChakraProtoMsg::Node& node, const std::string& name) {
  for (const auto& attribute : node.attr())
    if (attribute.name() == name) return &attribute;
  return nullptr;
}

// Collectives a block of `scope` runs per micro-batch in a forward and in a backward step
// (backward with its recomputation), by counting the plan's ops.
struct PerBlock {
  int64_t forward = 0, backward = 0;
};
PerBlock collectives_of(const PlanView& plan, pp_scope scope, int32_t axis = -1) {
  PerBlock count;
  for (const pp_op& op : plan.ops()) {
    if (op.kind != PP_OP_COLLECTIVE || op.scope != scope || op.frequency != PP_PER_MICRO_BATCH) continue;
    if (axis >= 0 && op.axis != axis) continue;
    (op.phase == PP_PHASE_FORWARD ? count.forward : count.backward) += std::max<uint32_t>(op.repeat, 1);
  }
  return count;
}

TEST(ExportChakra, OneTracePerRankReadBackWithProtobuf) {
  const Exported exported = export_chakra(small_recipe());
  for (int rank = 0; rank < 8; ++rank) {
    const ExportedFile* file = exported.file("trace." + std::to_string(rank) + ".et");
    ASSERT_NE(file, nullptr) << rank;
    EXPECT_FALSE(file->text);
    const Trace trace = decode(file->data);
    EXPECT_EQ(trace.metadata.version(), "0.0.4");
    ASSERT_FALSE(trace.nodes.empty());
    for (size_t i = 0; i < trace.nodes.size(); ++i) {
      const ChakraProtoMsg::Node& node = trace.nodes[i];
      EXPECT_EQ(node.id(), i);
      for (uint64_t dep : node.data_deps()) EXPECT_LT(dep, node.id()) << node.name();  // a DAG in issue order
      if (i > 0) {
        EXPECT_GT(node.data_deps_size(), 0) << node.name();
      }
      const ChakraProtoMsg::AttributeProto* cpu = attr(node, "is_cpu_op");
      ASSERT_NE(cpu, nullptr);
      EXPECT_FALSE(cpu->bool_val());
    }
  }
  EXPECT_EQ(exported.file("trace.8.et"), nullptr);
  ASSERT_NE(exported.file("trace.comm_groups.json"), nullptr);
}

TEST(ExportChakra, NodeCountsFollowThePlan) {
  const Exported exported = export_chakra(small_recipe());
  const PlanView plan(exported.composed.plan->view());
  ASSERT_EQ(plan.stages().size(), 2u);
  const int64_t micro_batches = plan.pipeline().micro_batches;
  ASSERT_EQ(micro_batches, 4);  // 8 samples over data-parallel 2, micro-batch 1
  const int32_t tp = plan.axis_index("tp");
  ASSERT_GE(tp, 0);
  // Megatron tensor parallelism: two all-reduces per layer forward (attention and MLP outputs)
  // and two backward (their inputs' gradients).
  const PerBlock tp_layer = collectives_of(plan, PP_SCOPE_LAYER, tp);
  EXPECT_EQ(tp_layer.forward, 2);
  EXPECT_GE(tp_layer.backward, 2);

  const PerBlock layer = collectives_of(plan, PP_SCOPE_LAYER), embedding = collectives_of(plan, PP_SCOPE_EMBEDDING),
                 head = collectives_of(plan, PP_SCOPE_HEAD);
  int64_t send_recv_forward = 0, send_recv_backward = 0, received_forward = 0, received_backward = 0;
  for (const pp_op& op : plan.ops()) {
    if (op.scope != PP_SCOPE_STEP || op.frequency != PP_PER_MICRO_BATCH || op.phase == PP_PHASE_STEP) continue;
    const bool forward = op.phase == PP_PHASE_FORWARD;
    if (op.kind == PP_OP_SEND_RECV) (forward ? send_recv_forward : send_recv_backward) += 1;
    // What arrived over the boundary, gathered on the receiver before its compute.
    if (op.kind == PP_OP_COLLECTIVE) (forward ? received_forward : received_backward) += std::max<uint32_t>(op.repeat, 1);
  }
  ASSERT_EQ(send_recv_forward, 1);
  ASSERT_EQ(send_recv_backward, 1);

  const int32_t pp = plan.axis_index("pp");
  ASSERT_GE(pp, 0);
  const int64_t pp_stride = plan.axes()[static_cast<size_t>(pp)].stride;
  for (int rank = 0; rank < 8; ++rank) {
    const int stage = static_cast<int>((rank / pp_stride) % 2);
    const pp_stage& held = plan.stages()[static_cast<size_t>(stage)];
    ASSERT_EQ(held.layers, 2);
    const Trace trace = decode(exported.file("trace." + std::to_string(rank) + ".et")->data);
    std::map<int, int64_t> by_type;
    double flops = 0;
    for (const ChakraProtoMsg::Node& node : trace.nodes) {
      ++by_type[node.type()];
      if (node.type() == ChakraProtoMsg::COMP_NODE) flops += static_cast<double>(attr(node, "num_ops")->int64_val());
    }
    // Every micro-batch runs each held block forward and backward, and gathers what it received
    // from upstream (forward: from the previous stage; backward: from the next); per-step
    // reductions that overlap run once per held block after the stage's last backward, the rest
    // once in the tail, where the optimizer phase's collectives run too.
    auto holds = [&](pp_scope scope) {
      return scope == PP_SCOPE_EMBEDDING ? held.has_embedding != 0 : scope == PP_SCOPE_HEAD ? held.has_head != 0 : true;
    };
    int64_t once = 0;
    for (const pp_op& op : plan.ops()) {
      if (op.kind != PP_OP_COLLECTIVE || !holds(op.scope)) continue;
      const int64_t repeat = std::max<uint32_t>(op.repeat, 1);
      if (op.phase == PP_PHASE_STEP)
        once += repeat;
      else if (op.frequency == PP_PER_STEP)
        once += repeat * (op.scope == PP_SCOPE_LAYER && op.overlap == PP_OVERLAP_COMPUTE ? held.layers : 1);
    }
    const int64_t expected = micro_batches * (held.layers * (layer.forward + layer.backward) +
                                              (held.has_embedding ? embedding.forward + embedding.backward : 0) +
                                              (held.has_head ? head.forward + head.backward : 0) +
                                              (stage > 0 ? received_forward : 0) + (stage < 1 ? received_backward : 0)) +
                             once;
    EXPECT_EQ(by_type[ChakraProtoMsg::COMM_COLL_NODE], expected) << "rank " << rank;
    // 1F1B over two stages: the first stage sends each micro-batch's activations forward and
    // receives its gradient back; the last stage the reverse.
    EXPECT_EQ(by_type[ChakraProtoMsg::COMM_SEND_NODE], micro_batches) << "rank " << rank;
    EXPECT_EQ(by_type[ChakraProtoMsg::COMM_RECV_NODE], micro_batches) << "rank " << rank;
    EXPECT_GT(by_type[ChakraProtoMsg::COMP_NODE], 2 * micro_batches * held.layers) << "rank " << rank;
    EXPECT_EQ(by_type.size(), 4u);

    // The compute nodes carry the stage's work of one step: every held block's ops per
    // micro-batch, and the step's own (optimizer) once per block held.
    double expected_flops = 0;
    for (const pp_op& op : plan.ops()) {
      if (op.kind == PP_OP_COLLECTIVE || op.kind == PP_OP_SEND_RECV || op.kind == PP_OP_HOST_TRANSFER) continue;
      const double times = op.scope == PP_SCOPE_LAYER       ? static_cast<double>(held.layers)
                           : op.scope == PP_SCOPE_EMBEDDING ? (held.has_embedding ? 1.0 : 0.0)
                           : op.scope == PP_SCOPE_HEAD      ? (held.has_head ? 1.0 : 0.0)
                                                            : 1.0;
      const double per = op.phase == PP_PHASE_STEP || op.frequency == PP_PER_STEP ? 1.0 : micro_batches;
      expected_flops += op.flops * std::max<uint32_t>(op.repeat, 1) * times * per;
    }
    EXPECT_NEAR(flops, expected_flops, expected_flops * 1e-9 + 1e3 * trace.nodes.size()) << "rank " << rank;
  }
}

TEST(ExportChakra, GroupsMatchTheCommunicatorJson) {
  const Exported exported = export_chakra(small_recipe());
  const auto groups = nlohmann::json::parse(exported.file("trace.comm_groups.json")->data);
  const auto names = nlohmann::json::parse(exported.file("trace.comm_groups.names.json")->data);
  std::map<std::string, std::set<int>> members;
  for (const auto& [id, ranks] : groups.items()) {
    EXPECT_GE(std::stoi(id), 1) << "ASTRA-sim reads group ids as integers; 0 is every rank";
    for (int rank : ranks) members[id].insert(rank);
  }
  // Named by axis: the tensor-parallel group of rank 0 is ranks 0 and 1, its pipeline group
  // ranks 0 and 2, its data-parallel group ranks 0 and 4.
  std::map<std::string, std::string> id_of_name;
  for (const auto& [id, entry] : names.items()) id_of_name[entry["name"].get<std::string>()] = id;
  EXPECT_EQ(members[id_of_name.at("tp.0")], (std::set<int>{0, 1}));
  EXPECT_EQ(members[id_of_name.at("tp.3")], (std::set<int>{6, 7}));

  for (int rank = 0; rank < 8; ++rank) {
    const Trace trace = decode(exported.file("trace." + std::to_string(rank) + ".et")->data);
    std::set<std::string> used;
    for (const ChakraProtoMsg::Node& node : trace.nodes) {
      if (node.type() != ChakraProtoMsg::COMM_COLL_NODE) continue;
      const std::string pg = attr(node, "pg_name")->string_val();
      ASSERT_TRUE(members.count(pg)) << node.name() << " names group " << pg;
      EXPECT_TRUE(members[pg].count(rank)) << "rank " << rank << " is not in its group " << pg;
      EXPECT_GT(attr(node, "comm_size")->int64_val(), 0) << node.name();
      const int64_t type = attr(node, "comm_type")->int64_val();
      EXPECT_TRUE(type == ChakraProtoMsg::ALL_REDUCE || type == ChakraProtoMsg::ALL_GATHER ||
                  type == ChakraProtoMsg::REDUCE_SCATTER || type == ChakraProtoMsg::ALL_TO_ALL ||
                  type == ChakraProtoMsg::BROADCAST);
      used.insert(pg);
    }
    // Tensor-parallel collectives run in the rank's own tp group, of its two neighbours.
    EXPECT_TRUE(used.count(id_of_name.at("tp." + std::to_string(rank / 2)))) << rank;
  }
}

TEST(ExportChakra, EverySendHasItsReceive) {
  const Exported exported = export_chakra(small_recipe());
  // (src, dst, tag) -> bytes, from the senders' and from the receivers' traces.
  const PlanView plan(exported.composed.plan->view());
  const int64_t pp_stride = plan.axes()[static_cast<size_t>(plan.axis_index("pp"))].stride;
  std::map<std::tuple<int, int, int>, int64_t> sent, received;
  for (int rank = 0; rank < 8; ++rank) {
    const Trace trace = decode(exported.file("trace." + std::to_string(rank) + ".et")->data);
    for (const ChakraProtoMsg::Node& node : trace.nodes) {
      if (node.type() != ChakraProtoMsg::COMM_SEND_NODE && node.type() != ChakraProtoMsg::COMM_RECV_NODE) continue;
      const int src = attr(node, "comm_src")->int32_val(), dst = attr(node, "comm_dst")->int32_val();
      const auto key = std::make_tuple(src, dst, attr(node, "comm_tag")->int32_val());
      const int64_t bytes = attr(node, "comm_size")->int64_val();
      if (node.type() == ChakraProtoMsg::COMM_SEND_NODE) {
        EXPECT_EQ(src, rank);
        EXPECT_EQ(dst, rank ^ pp_stride) << "the pipeline peer differs only in the pp coordinate";
        EXPECT_TRUE(sent.emplace(key, bytes).second) << "tag reused: " << node.name();
      } else {
        EXPECT_EQ(dst, rank);
        EXPECT_TRUE(received.emplace(key, bytes).second) << "tag reused: " << node.name();
      }
    }
  }
  EXPECT_EQ(sent.size(), 8u * 4u);
  EXPECT_EQ(sent, received);
  // One micro-batch's activations: seq 1024 x hidden 1024 in bf16 (tensor parallelism keeps
  // the boundary tensor whole without sequence parallelism).
  for (const auto& [key, bytes] : sent) EXPECT_GT(bytes, 0);
}

// The seed scenario (Llama 2 70B, TP 8 with sequence parallelism, PP 2, data-parallel 4 on 64
// H100) with its global batch cut to 8 samples (2 micro-batches per step) to keep the test small.
TEST(ExportChakra, Llama2_70BSeedScenario) {
  Exported exported;
  RecipeReaderOptions options;
  options.overrides = {"training.global_batch=8"};
  exported.recipe = read_recipe(PARAPLAN_RECIPES_DIR "/scenarios/seed1-llama2-70b-4k-64xh100.toml", options);
  exported.hardware = open_hardware(*exported.recipe, test::bundled_catalog());
  exported.composed = compose_plan(*exported.recipe, test::bundled_catalog(),
                                   gpus_per_node(*exported.recipe, *exported.hardware));
  exported.result = run_exporter("chakra", *exported.recipe, test::bundled_catalog(), exported.composed,
                                 *exported.hardware);
  const PlanView plan(exported.composed.plan->view());
  ASSERT_EQ(plan.pipeline().micro_batches, 2);
  int et_files = 0;
  for (const ExportedFile& file : exported.result.files) et_files += file.name.ends_with(".et");
  EXPECT_EQ(et_files, 64);

  const auto groups = nlohmann::json::parse(exported.file("trace.comm_groups.json")->data);
  const auto names = nlohmann::json::parse(exported.file("trace.comm_groups.names.json")->data);
  std::string tp0;
  for (const auto& [id, entry] : names.items())
    if (entry["name"] == "tp.0") tp0 = id;
  ASSERT_FALSE(tp0.empty());
  EXPECT_EQ(groups[tp0].get<std::vector<int>>(), (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));

  // By hand: 80 layers over 2 stages = 40 per rank; with sequence parallelism each layer
  // all-gathers before and reduce-scatters after attention and the MLP (4 collectives forward),
  // and the backward pass runs the reverse (4 more); 2 micro-batches.
  for (int rank : {0, 63}) {
    const Trace trace = decode(exported.file("trace." + std::to_string(rank) + ".et")->data);
    int64_t in_tp_group = 0;
    const std::string own = std::to_string(std::stoi(tp0) + rank / 8);  // tp groups numbered first, by rank / 8
    ASSERT_EQ(groups[own].get<std::vector<int>>().front(), rank / 8 * 8);
    for (const ChakraProtoMsg::Node& node : trace.nodes)
      if (node.type() == ChakraProtoMsg::COMM_COLL_NODE && node.name().find(" layer") != std::string::npos &&
          attr(node, "pg_name")->string_val() == own)
        ++in_tp_group;
    EXPECT_EQ(in_tp_group, 2 * 40 * (4 + 4)) << "rank " << rank;
  }
}

// The flex dispatcher's exchange crosses the network once per node; Chakra's ALL_TO_ALL cannot say
// so, and the export says it wrote the buffer as a plain one. The all-to-all dispatcher's is exact.
TEST(ExportChakra, RoutedExchangeIsReportedAsAPlainAllToAll) {
  const std::string recipe =
      "[model]\npreset = \"mixtral-8x7b\"\nseq_len = 4096\n[training]\nglobal_batch = 8\nmicro_batch = 1\n"
      "[cluster]\nhardware = \"h100-sxm\"\nnum_gpus = 8\n[[strategy]]\nname = \"ep\"\ndegree = 8\n";
  auto mentions_routed = [](const Exported& exported) {
    for (const std::string& line : exported.result.unexpressed)
      if (line.find("'ep_dispatch' sends a token once per node") != std::string::npos) return true;
    return false;
  };
  EXPECT_TRUE(mentions_routed(export_chakra(recipe + "dispatcher = \"flex\"\n")));
  EXPECT_FALSE(mentions_routed(export_chakra(recipe)));
}

TEST(ExportChakra, PrefixAndUnmergedCompute) {
  const Exported merged = export_chakra(small_recipe());
  const Exported split = export_chakra(small_recipe("[export.chakra]\nprefix = \"llm\"\nmerge_compute = false\n"));
  ASSERT_NE(split.file("llm.0.et"), nullptr);
  ASSERT_NE(split.file("llm.comm_groups.json"), nullptr);
  EXPECT_EQ(split.file("trace.0.et"), nullptr);
  auto count = [](const Trace& trace, ChakraProtoMsg::NodeType type) {
    int64_t n = 0;
    for (const auto& node : trace.nodes) n += node.type() == type;
    return n;
  };
  const Trace a = decode(merged.file("trace.0.et")->data), b = decode(split.file("llm.0.et")->data);
  EXPECT_GT(count(b, ChakraProtoMsg::COMP_NODE), count(a, ChakraProtoMsg::COMP_NODE));
  EXPECT_EQ(count(b, ChakraProtoMsg::COMM_COLL_NODE), count(a, ChakraProtoMsg::COMM_COLL_NODE));
}

}  // namespace
}  // namespace paraplan::host
