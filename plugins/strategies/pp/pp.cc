// pp: pipeline parallelism. The model's layers are cut into p stages on the "pp" mesh axis; each
// stage's ranks run their layers for every micro-batch in an order the schedule fixes, passing
// activations to the next stage and gradients back to the previous one.
//
// What this strategy writes into the plan:
//   * the axis "pp" of degree p (p multiplies the GPU count);
//   * the stage layout (stage_layout.h): layers per stage, the embedding on stage 0, the head on
//     the last; the executor counts LAYER ops and memory once per layer a stage holds. A model
//     of several kinds of layer (SDK 1.6) is split by cost instead, or as a Megatron-LM layout
//     string says (layer_placement.h), and the layers of each kind per virtual stage set;
//   * the schedule (schedule.h): bubble fraction, activation sets in flight on stage 0 (the
//     executor multiplies each stage's activations per micro-batch by it) and the exact
//     per-stage order of (micro-batch, chunk, phase);
//   * the point-to-point traffic: per micro-batch, one send of the layer input tensor forward
//     and one of its gradient backward at each of the v chunk boundaries of a rank, on the
//     critical path. Its size is the plan's own layer-input activation item
//     ("act.seq.attn_norm_input", or "act.seq.layer_input" under full recompute), 2·s·b·h bytes,
//     already divided by sequence or context parallelism when those ran first (apply order 40
//     follows TP 20 and SP/CP 30). A middle stage moves 2 · m · v · 2·s·b·h bytes per step.
// Layers, gradients and optimizer state need no division here: the executor counts per-layer
// items per layer held, and the data-parallel strategy (order 50) shards what it finds.
#include <cstdint>
#include <limits>
#include <numeric>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "layer_placement.h"
#include "paraplan/cost_model.hpp"
#include "paraplan/sdk.hpp"
#include "schedule.h"
#include "stage_layout.h"

namespace {

constexpr const char* kName = PP_STRATEGY_PP;
constexpr int64_t kMaxSteps = int64_t{1} << 26;  // 1 GiB of pp_schedule_step

pp_schedule_kind schedule_kind(const std::string& name) {
  for (const paraplan::ScheduleName& entry : paraplan::kScheduleNames)
    if (entry.name == name) return entry.kind;
  return PP_SCHEDULE_1F1B;
}

class PipelineParallel : public paraplan::Strategy {
 public:
  static constexpr int32_t apply_order = 40;
  static constexpr uint32_t flags = 0;

  static paraplan::PluginInfo info() {
    return {
        kName,
        "1.0.0",
        "Pipeline parallelism: layers split into stages, GPipe, 1F1B, interleaved 1F1B, zero-bubble (ZB-H1) or "
        "DualPipe-V schedules",
        {paraplan::ParamSpec::Enum("schedule", {"gpipe", "1f1b", "interleaved-1f1b", "zero-bubble", "dualpipe-v"},
                                   "1f1b",
                                   "pipeline schedule: gpipe, 1f1b (PipeDream-Flush), interleaved-1f1b (Megatron-LM "
                                   "virtual stages), zero-bubble (ZB-H1) or dualpipe-v (DeepSeek's DualPipe cut in "
                                   "half: two chunks per rank in a V, the embedding and the head both on stage 0)"),
         paraplan::ParamSpec::Int("virtual_stages", 1,
                                  "model chunks per rank; more than 1 only with schedule = \"interleaved-1f1b\" "
                                  "(dualpipe-v always runs 2)")
             .at_least(1),
         paraplan::ParamSpec::Int("first_stage_layers", 0,
                                  "layers on the first stage (which also runs the embedding); 0 = its even share")
             .at_least(0),
         paraplan::ParamSpec::Int("last_stage_layers", 0,
                                  "layers on the last stage (which also runs the output head); 0 = its even share")
             .at_least(0),
         paraplan::ParamSpec::Bool("trim_ends", false,
                                   "when pp does not divide the layers: ceil(layers/pp) on the middle stages, the rest "
                                   "shared by the first and last (Llama 3 405B: 126 layers on 16 stages = 7, 8 x 14, 7); "
                                   "layers of several kinds: the embedding and the loss weigh a mean layer each in the "
                                   "cost-balanced split (dualpipe-v: the embedding a mean layer, the head what it costs)"),
         paraplan::ParamSpec::String("layout", "",
                                     "Megatron-LM's --pipeline-model-parallel-layout: E embedding, t decoder layer, m MTP "
                                     "module, L loss, | between virtual stages, (...)*N and x*N repeats, e.g. "
                                     "\"Et*3|(tt|)*29,m|L\"; sets the virtual stages too")}};
  }

  // GPipe is left out: the same bubble as 1F1B with every micro-batch's activations held.
  // DualPipe-V has ZB-H1's bubble with more activations held, but it is the one-chunk-per-pair
  // schedule ep's overlap can run on.
  // Layer counts pp does not divide are split the Llama 3 way (trim_ends); explicit end stage
  // sizes stay as the recipe sets them. DualPipe-V's V puts the embedding and the head on the same
  // rank, beside its first and last chunk, whose pair is balanced with the head's cost either way;
  // trim_ends adds the embedding's, and both are tried (DeepSeek-V3 trains untrimmed).
  static std::vector<paraplan::SearchCase> search_space() {
    return {paraplan::SearchCase::degrees(2)
                .choose("schedule", {"1f1b", "zero-bubble"})
                .choose("trim_ends", {"true"}),
            paraplan::SearchCase::degrees(2)
                .choose("schedule", {"dualpipe-v"})
                .choose("trim_ends", {"true", "false"}),
            paraplan::SearchCase::degrees(2)
                .choose("schedule", {"interleaved-1f1b"})
                .choose("virtual_stages", {"2", "3", "4", "6"})
                .choose("trim_ends", {"true"})};
  }

  explicit PipelineParallel(const paraplan::Params& params)
      : schedule_name_(params.string_value("schedule")),
        schedule_(schedule_kind(schedule_name_)),
        virtual_stages_(params.int_value("virtual_stages")),
        first_stage_layers_(params.int_value("first_stage_layers")),
        last_stage_layers_(params.int_value("last_stage_layers")),
        trim_ends_(params.bool_value("trim_ends")),
        layout_(params.string_value("layout")) {}

  void validate(const paraplan::StrategyContext& context) override {
    if (schedule_ == PP_SCHEDULE_DUALPIPE_V) {
      if (!layout_.empty() || first_stage_layers_ > 0 || last_stage_layers_ > 0)
        throw paraplan::ConstraintError("schedule \"dualpipe-v\" places its two chunks per rank itself (a V, both ends "
                                        "on stage 0): leave out layout, first_stage_layers and last_stage_layers");
      if (virtual_stages_ > 2)
        throw paraplan::ConstraintError("schedule \"dualpipe-v\" runs 2 model chunks per rank, but virtual_stages = " +
                                        std::to_string(virtual_stages_));
      place(context);
      return;
    }
    if (!layout_.empty()) {
      if (first_stage_layers_ > 0 || last_stage_layers_ > 0 || trim_ends_)
        throw paraplan::ConstraintError("layout places every layer itself: leave out first_stage_layers, "
                                        "last_stage_layers and trim_ends");
      const int64_t v = place(context).virtual_stages;
      if (v > 1 && schedule_ != PP_SCHEDULE_INTERLEAVED_1F1B)
        throw paraplan::ConstraintError("layout has " + std::to_string(v) + " model chunks per rank, which needs "
                                        "schedule \"interleaved-1f1b\", but schedule = \"" + schedule_name_ + "\"");
      if (v == 1 && schedule_ == PP_SCHEDULE_INTERLEAVED_1F1B)
        throw paraplan::ConstraintError("schedule \"interleaved-1f1b\" needs a layout of at least 2 x pp virtual stages");
      if (virtual_stages_ > 1 && virtual_stages_ != v)
        throw paraplan::ConstraintError("virtual_stages = " + std::to_string(virtual_stages_) + ", but layout has " +
                                        std::to_string(v) + " model chunks per rank");
      return;
    }
    if (schedule_ == PP_SCHEDULE_INTERLEAVED_1F1B && virtual_stages_ < 2)
      throw paraplan::ConstraintError(
          "schedule \"interleaved-1f1b\" needs virtual_stages >= 2 model chunks per rank, but virtual_stages = " +
          std::to_string(virtual_stages_));
    if (schedule_ != PP_SCHEDULE_INTERLEAVED_1F1B && virtual_stages_ > 1)
      throw paraplan::ConstraintError("virtual_stages = " + std::to_string(virtual_stages_) +
                                      " needs schedule \"interleaved-1f1b\", but schedule = \"" + schedule_name_ +
                                      "\"");
    place(context);  // throws when the layers cannot be split as asked
  }

  void apply(const paraplan::StrategyContext& context, paraplan::PlanEditor& plan) override {
    const int64_t p = context.degree;
    const int32_t axis = plan.add_axis(PP_AXIS_PP, p, kName);
    const paraplan::PlanView view = plan.view();
    const int64_t m = view.pipeline().micro_batches;
    if (schedule_ == PP_SCHEDULE_INTERLEAVED_1F1B && m % p != 0)
      return refuse("schedule \"interleaved-1f1b\" needs the micro-batches per step to be a multiple of pp = " +
                    std::to_string(p) + ", but global_batch " + std::to_string(context.training.global_batch) +
                    " / (micro_batch " + std::to_string(context.training.micro_batch) + " x data-parallel size " +
                    std::to_string(view.data_parallel_size()) + ") = " + std::to_string(m));
    // DualPipe-V's warm-up alone runs 2p chunk forwards on stage 0 (DualPipe's dualpipev.py
    // asserts as many micro-batches as that).
    if (schedule_ == PP_SCHEDULE_DUALPIPE_V && m < 2 * p)
      return refuse("schedule \"dualpipe-v\" needs at least 2 x pp = " + std::to_string(2 * p) +
                    " micro-batches per step, but global_batch " + std::to_string(context.training.global_batch) +
                    " / (micro_batch " + std::to_string(context.training.micro_batch) + " x data-parallel size " +
                    std::to_string(view.data_parallel_size()) + ") = " + std::to_string(m));
    // Hiding one micro-batch's expert all-to-alls behind another's compute runs a forward and a
    // backward side by side: Megatron-LM's combined 1F1B needs virtual stages when pp > 1
    // (TransformerConfig: "virtual_pipeline_model_parallel_size must be specified"), DualPipe
    // pairs them by construction.
    if (p > 1 && schedule_ != PP_SCHEDULE_INTERLEAVED_1F1B && schedule_ != PP_SCHEDULE_DUALPIPE_V &&
        overlaps_expert_exchange(view))
      throw paraplan::ConstraintError("ep's overlap runs one micro-batch's forward beside another's backward, which a "
                                      "pipeline runs only with schedule \"interleaved-1f1b\" or \"dualpipe-v\", but "
                                      "schedule = \"" + schedule_name_ + "\"");
    const Placement placed = place(context);
    const int64_t v = placed.virtual_stages;
    // The schedule lists every pass of every stage; keep it to a size a simulator can walk.
    const pp_strategy::ScheduleShape shape{schedule_, p, m, v};
    if (m * v > std::numeric_limits<int32_t>::max() ||
        pp_strategy::steps_per_stage(shape) > kMaxSteps / p)
      throw paraplan::ConstraintError(std::to_string(m) + " micro-batches per step on " + std::to_string(p) +
                                      " stages make a schedule of more than " + std::to_string(kMaxSteps) + " steps");

    const std::vector<int64_t>& layers = placed.stage_layers;
    std::vector<pp_stage> stages;
    pp_pipeline pipeline = view.pipeline();
    pipeline.struct_size = sizeof(pp_pipeline);
    pipeline.schedule = schedule_;
    pipeline.stages = p;
    pipeline.virtual_stages = v;
    pipeline.micro_batches = m;
    pipeline.bubble_fraction = pp_strategy::bubble_fraction(shape);
    pipeline.in_flight_micro_batches = pp_strategy::in_flight_micro_batches(shape);
    // The embedding runs on the stage of virtual stage 0, the head on that of the last one.
    const int64_t first_holder = paraplan::stage_chunk_of(pipeline, 0).stage;
    const int64_t last_holder = paraplan::stage_chunk_of(pipeline, p * v - 1).stage;
    const std::vector<int64_t> counts =
        placed.virtual_stage_layers.empty() ? std::vector<int64_t>{} : layer_counts(context.model, pipeline, placed);
    for (size_t stage = 0; stage < layers.size(); ++stage) {
      const int64_t held = static_cast<int64_t>(stage);
      const double in_flight =
          schedule_ == PP_SCHEDULE_DUALPIPE_V
              ? dualpipe_v_in_flight(view, shape, counts, held, held == first_holder, held == last_holder)
              : pp_strategy::in_flight_micro_batches(shape, held);
      stages.push_back(pp_stage{sizeof(pp_stage), layers[stage], held == first_holder, held == last_holder, in_flight});
    }
    plan.set_pipeline(pipeline, stages);
    if (!counts.empty()) plan.set_layer_counts(counts);
    if (context.wants_schedule) plan.set_schedule(pp_strategy::schedule_steps(shape));

    if (p > 1) add_point_to_point(plan, axis, v);
  }

 private:
  // Layers per stage, and for a placement by cost or layout the layers of every virtual stage
  // in the model's order (paraplan::virtual_stage_of says which chunk of which stage each is);
  // empty: the host fills them in order.
  struct Placement {
    int64_t virtual_stages = 1;
    std::vector<int64_t> stage_layers;
    std::vector<int64_t> virtual_stage_layers;
  };

  Placement place(const paraplan::StrategyContext& context) const {
    const pp_model& model = context.model;
    const int64_t p = context.degree;
    Placement placed;
    const bool uneven_requested = first_stage_layers_ > 0 || last_stage_layers_ > 0;
    // DualPipe-V folds 2p virtual stages into a V: each rank's two are balanced by cost too.
    const bool layered =
        model.layer_kind_count > 1 || (schedule_ == PP_SCHEDULE_DUALPIPE_V && model.layer_kind_count > 0);
    if (layout_.empty() && (!layered || uneven_requested)) {
      placed.virtual_stages = virtual_stages_;
      placed.stage_layers = pp_strategy::split_layers(
          {model.layers, p, first_stage_layers_, last_stage_layers_, virtual_stages_, trim_ends_});
      return placed;
    }
    if (!layout_.empty()) {
      const pp_strategy::LayerPlacement parsed =
          pp_strategy::parse_megatron_layout(layout_, p, model.layers, model.mtp_layers);
      placed.virtual_stages = parsed.virtual_stages;
      placed.virtual_stage_layers = parsed.layers;
    } else {
      // Each layer weighs its kind's model FLOPs per token: the stages balance compute. With
      // trim_ends the embedding and the loss weigh a mean layer each, as Megatron-LM's
      // account_for_embedding/loss_in_pipeline_split count them (the uniform split's rule).
      const paraplan::LayerKinds kinds(model);
      std::vector<double> costs;
      for (int64_t i = 0; i < model.layer_sequence_length; ++i)
        costs.push_back(paraplan::cost::layer_flops_per_token(kinds[kinds.kind_of_layer(i)], model));
      placed.virtual_stages = schedule_ == PP_SCHEDULE_DUALPIPE_V ? 2 : virtual_stages_;
      if (p * placed.virtual_stages > model.layer_sequence_length)
        throw paraplan::ConstraintError("pp = " + std::to_string(p) + " x " + std::to_string(placed.virtual_stages) +
                                        " model chunks per rank is more than the model's " +
                                        std::to_string(model.layer_sequence_length) + " layers");
      placed.virtual_stage_layers = schedule_ == PP_SCHEDULE_DUALPIPE_V
                                        ? dualpipe_v_split(std::move(costs), context)
                                        : chunk_split(std::move(costs), p * placed.virtual_stages);
    }
    placed.stage_layers.assign(static_cast<size_t>(p), 0);
    const pp_pipeline shape = placement_shape(p, placed.virtual_stages);
    for (size_t i = 0; i < placed.virtual_stage_layers.size(); ++i) {
      const int64_t stage = paraplan::stage_chunk_of(shape, static_cast<int64_t>(i)).stage;
      placed.stage_layers[static_cast<size_t>(stage)] += placed.virtual_stage_layers[i];
    }
    return placed;
  }

  // Consecutive chunks each as light as the busiest allows; trim_ends weighs the embedding and
  // the loss a mean layer each, which then hold no layer of their own.
  std::vector<int64_t> chunk_split(std::vector<double> costs, int64_t chunks) const {
    if (trim_ends_) {
      const double mean = std::accumulate(costs.begin(), costs.end(), 0.0) / static_cast<double>(costs.size());
      costs.insert(costs.begin(), mean);
      costs.push_back(mean);
    }
    // A search asks again for every candidate plan with this degree: the same layers' costs,
    // the same split (the host uses an instance from one thread at a time).
    if (costs != balanced_costs_ || chunks != balanced_chunks_) {
      balanced_sizes_ = pp_strategy::balance_by_cost(costs, chunks);
      balanced_costs_ = std::move(costs);
      balanced_chunks_ = chunks;
    }
    std::vector<int64_t> sizes = balanced_sizes_;
    if (trim_ends_) --sizes.front(), --sizes.back();
    return sizes;
  }

  // DualPipe-V's chunks, balanced by the pair each rank holds (pp_strategy::balance_pairs_by_cost),
  // with the output head on stage 0's second chunk weighed as it runs: 2hV FLOPs per token in
  // 16-bit, since the head is no Transformer Engine module (Megatron-Core's ColumnParallelLinear;
  // DeepSeek-V3 keeps it in BF16 too), where a low-precision recipe's layers run at twice the
  // bf16 rate or more (every FP8 GPU's datasheet); the MTP module's pass through it likewise.
  // trim_ends weighs the embedding a mean layer, as Megatron-LM's account_for_embedding does.
  std::vector<int64_t> dualpipe_v_split(std::vector<double> costs, const paraplan::StrategyContext& context) const {
    const pp_model& model = context.model;
    const double head = 2.0 * static_cast<double>(model.hidden) * static_cast<double>(model.vocab);
    const double sixteen_bit = paraplan::quantised_precision(context.training.precision) ? 2.0 : 1.0;
    const paraplan::LayerKinds kinds(model);
    for (int64_t i = 0; i < model.layer_sequence_length; ++i)
      if (kinds[kinds.kind_of_layer(i)].mtp) costs[static_cast<size_t>(i)] += (sixteen_bit - 1.0) * head;
    const double mean = std::accumulate(costs.begin(), costs.end(), 0.0) / static_cast<double>(costs.size());
    costs.back() += sixteen_bit * head;
    if (trim_ends_) costs.front() += mean;
    return pp_strategy::balance_pairs_by_cost(costs, context.degree);
  }

  static bool overlaps_expert_exchange(const paraplan::PlanView& view) {
    for (const pp_op& op : view.ops())
      if (op.overlap == PP_OVERLAP_COMPUTE &&
          (std::string_view(op.name) == PP_OP_EP_DISPATCH || std::string_view(op.name) == PP_OP_EP_COMBINE))
        return true;
    return false;
  }

  // DualPipe-V's two chunks of a stage hold different numbers of activation sets
  // (pp_strategy::dualpipe_v_chunk_in_flight): the whole-stage sets they add up to, each chunk's
  // weighed by its activation bytes (its layers of each kind, the embedding on chunk 0 of stage
  // 0, the head on its chunk 1, the step's own activations shared as the rank programs share them).
  static double dualpipe_v_in_flight(const paraplan::PlanView& view, const pp_strategy::ScheduleShape& shape,
                                     const std::vector<int64_t>& counts, int64_t stage, bool has_embedding,
                                     bool has_head) {
    const paraplan::LayerKinds kinds = view.layer_kinds();
    double chunk_bytes[2] = {0, 0};
    for (size_t i = 0; i < view.memory().size(); ++i) {
      const pp_memory_item& item = view.memory()[i];
      if (item.kind != PP_MEMORY_ACTIVATIONS) continue;
      for (int64_t chunk = 0; chunk < 2; ++chunk) {
        double times = 0;
        switch (item.scope) {
          case PP_SCOPE_LAYER:
            for (uint32_t kind = 0; kind < kinds.size(); ++kind) {
              const size_t entry = static_cast<size_t>(chunk * shape.stages + stage) * kinds.size() + kind;
              if (view.memory_layer_kind(i) == PP_EVERY_LAYER_KIND || view.memory_layer_kind(i) == kind)
                times += static_cast<double>(counts[entry]);
            }
            break;
          case PP_SCOPE_EMBEDDING: times = has_embedding && chunk == 0 ? 1 : 0; break;
          case PP_SCOPE_HEAD: times = has_head && chunk == 1 ? 1 : 0; break;
          case PP_SCOPE_STEP: times = 0.5; break;
        }
        chunk_bytes[chunk] += times * item.bytes;
      }
    }
    const double sets[2] = {static_cast<double>(pp_strategy::dualpipe_v_chunk_in_flight(shape, stage, 0)),
                            static_cast<double>(pp_strategy::dualpipe_v_chunk_in_flight(shape, stage, 1))};
    const double total = chunk_bytes[0] + chunk_bytes[1];
    if (total <= 0) return (sets[0] + sets[1]) / 2.0;
    return (sets[0] * chunk_bytes[0] + sets[1] * chunk_bytes[1]) / total;
  }

  // Just what paraplan::virtual_stage_of reads: the schedule, stages and chunks.
  pp_pipeline placement_shape(int64_t stages, int64_t chunks) const {
    pp_pipeline shape{};
    shape.struct_size = sizeof(pp_pipeline);
    shape.schedule = schedule_;
    shape.stages = stages;
    shape.virtual_stages = chunks;
    return shape;
  }

  // The layers of each kind on every chunk of every stage, walking the virtual stages in the
  // model's layer order.
  static std::vector<int64_t> layer_counts(const pp_model& model, const pp_pipeline& pipeline,
                                           const Placement& placed) {
    const paraplan::LayerKinds kinds(model);
    std::vector<int64_t> counts(placed.virtual_stage_layers.size() * kinds.size(), 0);
    int64_t next = 0;
    for (size_t virtual_stage = 0; virtual_stage < placed.virtual_stage_layers.size(); ++virtual_stage) {
      const paraplan::StageChunk held =
          paraplan::stage_chunk_of(pipeline, static_cast<int64_t>(virtual_stage));
      const size_t entry = static_cast<size_t>(held.chunk * pipeline.stages + held.stage);
      for (int64_t i = 0; i < placed.virtual_stage_layers[virtual_stage]; ++i)
        ++counts[entry * kinds.size() + kinds.kind_of_layer(next++)];
    }
    return counts;
  }

  // The tensor that crosses a stage boundary is a layer's input (its gradient going back).
  static double boundary_bytes(const paraplan::PlanView& view) {
    for (std::string_view name : {PP_MEMORY_ACT_ATTN_NORM_INPUT, PP_MEMORY_ACT_LAYER_INPUT})
      for (const pp_memory_item& item : view.memory())
        if (item.scope == PP_SCOPE_LAYER && name == item.name) return item.bytes;
    throw paraplan::Error(
        PP_ERROR_UNSUPPORTED,
        "the plan has no layer-input activation item (act.seq.attn_norm_input or act.seq.layer_input) "
        "to size the pipeline's point-to-point sends");
  }

  // Tensor-parallel ranks without sequence parallelism all hold the whole boundary tensor (the
  // layer's all-reduces are still there). Megatron-LM's scatter-gather then sends 1/t of it from
  // each rank, over t links at once, and the receivers all-gather it over the tp axis
  // (Narayanan et al. 2021, sec. 4.1).
  static int32_t replicating_tp_axis(const paraplan::PlanView& view) {
    const int32_t tp = view.axis_index(PP_AXIS_TP);
    if (tp < 0 || view.axes()[static_cast<size_t>(tp)].degree < 2) return -1;
    for (const pp_op& op : view.ops())
      if (op.kind == PP_OP_COLLECTIVE && op.axis == tp && std::string_view(op.name) == PP_OP_TP_ALL_REDUCE) return tp;
    return -1;
  }

  void add_point_to_point(paraplan::PlanEditor& plan, int32_t axis, int64_t virtual_stages) const {
    const paraplan::PlanView view = plan.view();  // a fresh view: the edits above invalidate older ones
    const double bytes = boundary_bytes(view);
    const int32_t tp_axis = replicating_tp_axis(view);
    const double t = tp_axis >= 0 ? static_cast<double>(view.axes()[static_cast<size_t>(tp_axis)].degree) : 1.0;
    auto send = [&](const char* name, pp_phase phase) {
      pp_op op = paraplan::make_op(PP_OP_SEND_RECV, phase, PP_SCOPE_STEP, name, kName);
      op.frequency = PP_PER_MICRO_BATCH;
      op.axis = axis;
      op.bytes = bytes / t;
      op.repeat = static_cast<uint32_t>(virtual_stages);
      op.overlap = PP_OVERLAP_NONE;
      plan.append_op(op);
      if (tp_axis < 0) return;
      pp_op gather = paraplan::make_op(PP_OP_COLLECTIVE, phase, PP_SCOPE_STEP, PP_OP_PP_GATHER_RECEIVED, kName);
      gather.frequency = PP_PER_MICRO_BATCH;
      gather.collective = PP_COLLECTIVE_ALL_GATHER;
      gather.axis = tp_axis;
      gather.bytes = bytes;
      gather.repeat = op.repeat;
      gather.overlap = PP_OVERLAP_NONE;
      plan.append_op(gather);
    };
    send(PP_OP_SEND_ACTIVATIONS, PP_PHASE_FORWARD);
    send(PP_OP_SEND_GRADIENTS, PP_PHASE_BACKWARD);
  }

  std::string schedule_name_;
  pp_schedule_kind schedule_;
  int64_t virtual_stages_;
  int64_t first_stage_layers_;
  int64_t last_stage_layers_;
  bool trim_ends_;
  std::string layout_;
  // chunk_split's last balance (by cost, into chunks), kept for the next plan of the search.
  mutable std::vector<double> balanced_costs_;
  mutable int64_t balanced_chunks_ = 0;
  mutable std::vector<int64_t> balanced_sizes_;
};

}  // namespace

PARAPLAN_PLUGIN(PipelineParallel)
