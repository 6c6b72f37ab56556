// ep: expert parallelism for mixture-of-experts models (GShard, Lepikhin et al. 2020; Switch,
// Fedus et al. 2021; Megatron-Core MoE).
//
// The e ranks of an expert-parallel group are carved out of the ranks of one pipeline stage, as
// Megatron-LM lays its expert grid (etp x ep x edp) over the dense one (tp x cp x dp): with the
// experts split like attention (etp = tp, Megatron's default) EP takes its ranks from cp x dp;
// with whole experts on every rank (etp = 1) from tp x cp x dp, each tensor-parallel rank then
// routing its own s/t tokens (sequence parallelism, which Megatron-Core requires for MoE with
// TP). EP adds no GPUs. Each rank holds E/e of the E routed experts (shared experts stay on every
// rank and follow tp). In every MoE layer the ranks route their own tokens, send each token's top-k
// copies to the ranks that hold the chosen experts (dispatch), run their local experts on
// whatever arrives, and send the results back (combine). Averaged over the group a rank receives
// as many routed tokens as it sent, tokens x top_k, now over E/e experts: its grouped GEMM runs
// E/e GEMMs of e times the rows each (fewer, larger GEMMs, closer to the plateau); the busiest
// rank receives (1 + imbalance) times the mean and sets the pace of everyone. The shared experts
// are a dense MLP on the rank's own tokens and do not move.
//
// How many tokens a rank processes and moves (its load, relative to the mean):
//   capacity_factor = 0 (dropless, Megatron-Core's default): 1 + imbalance.
//   capacity_factor = c, pad_to_capacity (GShard/Switch fixed buffers, Megatron's
//     --moe-pad-expert-input-to-capacity): c; tokens over capacity are dropped, the empty slots
//     are computed and sent anyway, so imbalance costs quality, not time.
//   capacity_factor = c, no padding (Megatron's --moe-expert-capacity-factor alone):
//     min(1 + imbalance, c).
// With one rank (ep = 1) there is no rank to be busier than the mean: imbalance is 0.
//
// Communication per MoE layer and micro-batch, on the "ep" axis, on the critical path (the
// experts need the tokens; the next layer needs the results):
//   dispatcher = "alltoall": all-to-all dispatch and combine forward, their two conjugate
//     all-to-alls backward; buffer per all-to-all = routed tokens x hidden x 2 bytes x load.
//     When the load comes from imbalance (dropless, or a capacity without padding) the exchange
//     is uneven and says so (pp_op.count = load): every rank sends the mean, the busiest
//     receives load x the mean; executors that move real bytes (mpi) send per-peer counts.
//   dispatcher = "flex" (Megatron's MoEFlexTokenDispatcher with DeepEP or HybridEP): a token goes
//     once to each rank that holds any of its top_k experts, not once per expert, and the rank
//     expands it to its local experts: the buffer is tokens x D x hidden x 2 bytes x load, D the
//     expected number of distinct ranks among a token's top_k experts under uniform routing,
//     e x (1 - C(E - E/e, k) / C(E, k)) (k when every expert is on its own rank), fewer under
//     group-limited routing (paraplan/token_routing.hpp). Across nodes it goes once per node
//     holding any of them (to one rank there, which forwards it over NVLink): the op says so as a
//     routed exchange (m tokens of n bytes, k = top_k; plan.h), and the cost model counts the
//     nodes for the layout it prices.
//   dispatcher = "allgather" (Megatron's MoEAllGatherTokenDispatcher): every rank all-gathers
//     the group's tokens (each once, not top_k times) and keeps those for its experts; the
//     combine is a reduce-scatter of the group's outputs; backward swaps the two. Buffer
//     = e x tokens x hidden x 2 bytes, independent of load and capacity (every token travels):
//     each rank moves (e-1) x tokens x h x 2 bytes per collective against (e-1)/e x top_k x
//     tokens x h x 2 for an all-to-all, e / top_k times as much. The routing map and
//     probabilities it also gathers (tokens x experts x 5 bytes) are under 1 % and left out.
// With full recomputation the forward pair runs again during backward (phase RECOMPUTE), as
// the workload builder re-runs every layer op.
//
// overlap = true (Megatron-LM --overlap-moe-expert-parallel-comm, Megatron-Core 0.14: batch-level
// overlap, one micro-batch's forward merged with another's backward so each one's all-to-alls
// run during the other's compute): every exchange op is split in two, the share x of its
// buffer on the critical path and the rest overlappable with compute, where
//   x = 1/m + (1 - 1/m) x kOverlapSmShare,
// 1/m the step's first forward and last backward, which have no partner pass (m micro-batches
// per data-parallel rank), and kOverlapSmShare the compute the communication kernels take while
// they run: DeepSeek-V3 (sec. 3.2.2) reserves 20 of an H800's 132 SMs for its all-to-alls,
// 0.15 of the GPU. A pipeline's warm-up forwards and cool-down backwards are not paired either;
// they are not counted (docs/cost-model.md, limitations).
//
// The router's auxiliary load-balancing loss (Switch, eq. 4) is a memory-bound pass over the
// fp32 router probabilities: op "router_aux_loss", tokens x experts x 4 bytes read and written,
// times the routed path's passes (paraplan/moe_kernels.hpp).
//
// Axes: "ep" (degree e) and "edp" (expert data parallelism: the region's ranks / e), children of
// the region "cp*dp" (etp = tp) or "tp*cp*dp" (etp = 1), naming only the axes that exist ("dp"
// without tp or cp); the host gives children strides in creation order, so "ep" is the inner one
// and stays on NVLink when it fits a node. Data-parallel strategies shard and reduce expert state
// ("*.experts") over "edp" (plugins/strategies/internal/zero_sharding.h). It applies after tp and
// sp, whose axes it carves and whose splits of the expert ops it adjusts for etp = 1.
#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "paraplan/host_issue.hpp"
#include "paraplan/moe_kernels.hpp"
#include "paraplan/sdk.hpp"
#include "paraplan/token_routing.hpp"

namespace {

constexpr const char* kName = PP_STRATEGY_EP;
constexpr double kActivationBytes = 2.0;  // bf16 tokens on the wire and in the expert buffers
// ep's own ops around the experts when they are split over tp (no other plugin reads them).
constexpr const char* kExpertTpGather = "ep_tp_gather";
constexpr const char* kExpertTpScatter = "ep_tp_scatter";

bool is_expert_compute(std::string_view name) {
  return name == PP_OP_EXPERT_UP || name == PP_OP_EXPERT_GATE || name == PP_OP_EXPERT_CLAMP ||
         name == PP_OP_EXPERT_ACT || name == PP_OP_EXPERT_DOWN || name == PP_OP_EXPERT_BIAS ||
         name == PP_OP_FP8_CAST_EXPERT;
}

bool is_expert_activation(std::string_view name) {
  return name == PP_MEMORY_ACT_EXPERT_INPUT || name == PP_MEMORY_ACT_EXPERT_HIDDEN;
}

// "weights.experts" -> "weights.shared_experts": the shared experts' part of an expert item.
std::string shared_name(std::string_view name) {
  std::string text(name);
  return text.substr(0, text.size() - std::string_view(PP_MEMORY_SUFFIX_EXPERTS).size()) +
         PP_MEMORY_SUFFIX_SHARED_EXPERTS;
}

class ExpertParallel : public paraplan::Strategy {
 public:
  static constexpr int32_t apply_order = 35;  // after tp (20) and sp (30), before pp (40) and fsdp (50)
  static constexpr uint32_t flags = PP_STRATEGY_SUBDIVIDES_DATA;

  static paraplan::PluginInfo info() {
    return {kName,
            "1.0.0",
            "Expert parallelism: routed experts divided over ranks carved out of data parallelism, tokens "
            "dispatched and combined by all-to-all (or all-gather/reduce-scatter)",
            {paraplan::ParamSpec::Float("capacity_factor", 1.0,
                                        "expert capacity as a multiple of the mean tokens per expert; 0 = dropless")
                 .range(0.0, 16.0),
             paraplan::ParamSpec::Bool("pad_to_capacity", true,
                                       "with a capacity factor, send and compute full capacity buffers "
                                       "(Megatron --moe-pad-expert-input-to-capacity)"),
             paraplan::ParamSpec::Float("imbalance", 0.0,
                                        "the busiest expert rank receives (1 + imbalance) x the mean routed tokens")
                 .range(0.0, 4.0),
             paraplan::ParamSpec::Enum("dispatcher", {"alltoall", "allgather", "flex"}, "alltoall",
                                       "token dispatcher (Megatron --moe-token-dispatcher-type; flex: DeepEP or HybridEP, "
                                       "a token sent once per rank that holds its experts)"),
             paraplan::ParamSpec::Bool("overlap", false,
                                       "hide one micro-batch's all-to-alls behind another's compute (Megatron-LM "
                                       "--overlap-moe-expert-parallel-comm)"),
             paraplan::ParamSpec::Int("etp", 0,
                                      "expert tensor parallelism (Megatron-LM --expert-tensor-parallel-size): 0 = tp's "
                                      "degree, 1 = whole experts on every rank, expert parallelism then spanning tp")
                 .range(0, 1 << 20)}};
  }

  // Every degree from 2 dividing the experts and the ranks it is carved out of, with Megatron's
  // all-to-all or the flex dispatcher, overlapped or not, the experts split like attention or
  // whole (etp 0 or 1; apply refuses etp = 1 without tp, the same plan as etp = 0): how the engine
  // runs the exchange and shards the experts is a choice. The routing settings (capacity, padding,
  // imbalance) describe the model and stay as the recipe sets them; the all-gather dispatcher
  // moves e/k times the bytes and is not tried.
  static std::vector<paraplan::SearchCase> search_space() {
    return {paraplan::SearchCase::degrees(2)
                .choose("dispatcher", {"alltoall", "flex"})
                .choose("overlap", {"false", "true"})
                .choose("etp", {"0", "1"})};
  }

  explicit ExpertParallel(const paraplan::Params& params)
      : capacity_factor_(params.float_value("capacity_factor")),
        pad_to_capacity_(params.bool_value("pad_to_capacity")),
        imbalance_(params.float_value("imbalance")),
        all_gather_(params.string_value("dispatcher") == "allgather"),
        flex_(params.string_value("dispatcher") == "flex"),
        overlap_(params.bool_value("overlap")),
        etp_(params.int_value("etp")) {}

  void validate(const paraplan::StrategyContext& context) override {
    const pp_model& model = context.model;
    if (model.moe_experts <= 0)
      return refuse("expert parallelism needs a mixture-of-experts model, but model '" +
                    std::string(model.name ? model.name : "custom") + "' is dense (moe_experts = 0)");
    if (model.moe_experts % context.degree != 0)
      return refuse("ep = " + std::to_string(context.degree) +
                    " must divide moe_experts = " + std::to_string(model.moe_experts) +
                    " (each rank holds the same number of experts)");
    // Megatron-Core's TransformerConfig: the merged forward and backward of two micro-batches
    // cannot be recomputed layer by layer.
    if ((paraplan::issue::cuda_graph_modules(context.training) & PP_CUDA_GRAPH_MOE) && !drop_and_pad())
      return refuse("cuda_graph_modules \"moe\" captures the whole MoE block, which needs drop-and-pad "
                    "routing (capacity_factor > 0 with pad_to_capacity; Megatron-Core refuses it "
                    "otherwise): capture moe_router and moe_preprocess instead");
    if (overlap_ && context.training.recompute == PP_RECOMPUTE_FULL)
      return refuse("overlap = true (one micro-batch's all-to-alls behind another's compute) cannot "
                    "run with recompute = \"full\" (Megatron-Core refuses it): recompute "
                    "\"selective\" or overlap = false");
  }

  void apply(const paraplan::StrategyContext& context, paraplan::PlanEditor& plan) override {
    const int64_t e = context.degree;
    const paraplan::PlanView view = plan.view();
    const int64_t t = view.axis_degree(PP_AXIS_TP), etp = etp_ == 0 ? t : etp_;
    if (etp_ == 1 && t == 1)
      return refuse("etp = 1 keeps the experts whole beside tensor parallelism, but there is no tp: "
                    "they are whole already (leave etp out)");
    if (etp != 1 && etp != t)
      return refuse("etp = " + std::to_string(etp) + " must be 1 or tp's degree " + std::to_string(t) +
                    " (an expert tensor-parallel group of its own size is not modelled)");
    // Each tensor-parallel rank dispatches its own tokens under sequence parallelism.
    const bool sequence_split = t > 1 && !view.ops_named(PP_OP_TP_REDUCE_SCATTER).empty();
    if (etp == 1 && t > 1 && !sequence_split)
      return refuse("etp = 1 with tp = " + std::to_string(t) +
                    " needs sequence parallelism (sp mode \"megatron\"): Megatron-Core routes each "
                    "tensor-parallel rank's own tokens, and requires it for MoE with tensor parallelism");
    // The ranks EP is carved out of, innermost first: tp (when the experts are whole), cp, dp.
    std::string region;
    int64_t ranks = view.data_parallel_size();
    for (const char* axis : {PP_AXIS_TP, PP_AXIS_CP}) {
      if (view.axis_index(axis) < 0 || (std::string_view(axis) == PP_AXIS_TP && etp != 1)) continue;
      region += std::string(axis) + "*";
      ranks *= view.axis_degree(axis);
    }
    region += PP_AXIS_DP;
    if (ranks % e != 0)
      return refuse("ep = " + std::to_string(e) + " must divide the " + std::to_string(ranks) +
                    " ranks it is carved out of (" + region + ", etp = " + std::to_string(etp) + ")");
    const int32_t ep_axis = plan.add_axis(PP_AXIS_EP, e, kName, region);
    plan.add_axis(PP_AXIS_EDP, ranks / e, kName, region);
    const double split = sequence_split ? static_cast<double>(t) : 1.0;  // tokens of a rank: the micro-batch's / split

    // Each MoE kind of layer alike (a uniform MoE model has one): its routed experts divide
    // over the e ranks, its shared experts stay whole.
    const double load = load_factor(e);
    const paraplan::LayerKinds kinds = plan.view().layer_kinds();
    for (uint32_t kind = 0; kind < kinds.size(); ++kind) {
      const pp_layer_kind& layer = kinds[kind];
      if (layer.mlp != PP_MLP_MOE) continue;
      const double experts = static_cast<double>(layer.experts), top_k = static_cast<double>(layer.top_k);
      const double width = static_cast<double>(layer.expert_ffn_hidden);
      // The shared experts' parameters, in routed experts of the same width.
      const double shared = width > 0 ? static_cast<double>(layer.shared_ffn_hidden) / width : 0.0;
      const double routed_fraction = experts / (experts + shared);  // of the expert parameters
      const double tokens = tokens_per_rank(plan.view(), kind, top_k);
      divide_work(plan, kind, load, routed_fraction, static_cast<double>(e), etp == 1 ? static_cast<double>(t) : 1.0);
      if (drop_and_pad()) remove_host_syncs(plan, kind);
      if (e > 1) {
        // Copies a token sends: one per expert, or one per rank holding any (flex).
        const double sent = flex_ ? paraplan::routing::expected_holders(paraplan::routing::of(layer), e) : top_k;
        add_token_exchange(plan, kind, ep_axis, context, tokens / split, sent, load, top_k);
        // Experts split over tp (etp = tp) under sequence parallelism: the all-to-all dispatcher
        // gathers the received copies of the t tensor-parallel ranks before the experts, and
        // reduce-scatters their outputs before the combine.
        if (!all_gather_ && !flex_ && etp == t && sequence_split)
          add_expert_tp_exchange(plan, kind, plan.view().axis_index(PP_AXIS_TP), context,
                                 static_cast<double>(t) * tokens / split * top_k * load);
        if (!all_gather_ && !flex_ && experts / static_cast<double>(e) > 1)
          sort_received_chunks(plan, kind, tokens / split * top_k * load, context.model.hidden);
      }
      add_aux_loss(plan, kind, context, tokens / split * experts * 4.0);  // over this rank's tokens' probabilities
    }
  }

 private:
  // Capacity buffers of a fixed size: the dispatch is sized without the token counts, so the
  // host does not wait for them (token_dispatcher.py: drop_and_pad returns before any sync point).
  bool drop_and_pad() const { return capacity_factor_ > 0 && pad_to_capacity_; }

  static void remove_host_syncs(paraplan::PlanEditor& plan, uint32_t kind) {
    const std::vector<uint32_t> syncs = plan.view().ops_named_in(PP_OP_HOST_SYNC, kind);
    for (auto at = syncs.rbegin(); at != syncs.rend(); ++at) plan.remove_op(*at);
  }

  // The busiest rank's routed tokens over the mean (see the header comment).
  double load_factor(int64_t e) const {
    const double demand = 1.0 + (e > 1 ? imbalance_ : 0.0);
    if (capacity_factor_ <= 0) return demand;
    return pad_to_capacity_ ? capacity_factor_ : std::min(demand, capacity_factor_);
  }

  // The tokens of one micro-batch on this rank, as the workload sized the experts' grouped GEMM
  // (one GEMM per expert of the copies it receives: m x count = tokens x top_k).
  static double tokens_per_rank(const paraplan::PlanView& view, uint32_t kind, double top_k) {
    for (uint32_t i : view.ops_named_in(PP_OP_EXPERT_UP, kind))
      if (view.ops()[i].phase == PP_PHASE_FORWARD) {
        const pp_op& up = view.ops()[i];
        return up.m * (up.count > 0 ? up.count : 1.0) / top_k;
      }
    throw paraplan::InvalidArgument("the plan has no forward 'expert_up' op to size the token exchange from");
  }

  // Routed-expert state divides by e; shared-expert state, split off into "*.shared_experts",
  // stays whole. Expert compute and activations follow this rank's load: the grouped GEMM holds
  // E/e experts, each receiving the copies of e ranks' tokens (e x load x its mean share).
  // `whole` = t when the routed experts are not split by tp (etp = 1): tp has divided their
  // width and state by t, which is undone, and each rank runs only its own s/t tokens' copies
  // through them (m / t; the FLOPs are the same).
  void divide_work(paraplan::PlanEditor& plan, uint32_t kind, double load, double routed_fraction, double e,
                   double whole) const {
    const paraplan::PlanView view = plan.view();
    const std::vector<pp_memory_item> memory(view.memory().begin(), view.memory().end());
    const std::vector<uint32_t> memory_kinds(view.raw().memory_layer_kinds, view.raw().memory_layer_kinds + memory.size());
    for (uint32_t i = 0; i < memory.size(); ++i) {
      if (memory_kinds[i] != kind) continue;
      pp_memory_item item = memory[i];
      std::string_view name = item.name;
      if (is_expert_activation(name)) {
        item.bytes *= load / (name == PP_MEMORY_ACT_EXPERT_INPUT ? whole : 1.0);  // the hidden: tp's f/t of t x the copies
        plan.set_memory(i, item);
      } else if (name.ends_with("." PP_MEMORY_SUFFIX_EXPERTS)) {
        if (routed_fraction < 1.0)
          plan.add_layer_memory(paraplan::make_memory_item(item.kind, item.scope, shared_name(name), kName,
                                                           item.bytes * (1.0 - routed_fraction)),
                                kind);
        item.bytes *= routed_fraction / e * whole;
        plan.set_memory(i, item);
      }
    }
    const std::vector<pp_op> ops(view.ops().begin(), view.ops().end());
    const std::vector<uint32_t> op_kinds(view.raw().op_layer_kinds, view.raw().op_layer_kinds + ops.size());
    for (uint32_t i = 0; i < ops.size(); ++i) {
      if (op_kinds[i] != kind) continue;
      pp_op op = ops[i];
      if (is_expert_compute(op.name)) {
        if (op.kind == PP_OP_GEMM) {
          op.count /= e;
          op.m *= e * load / whole;
          (std::string_view(op.name) == PP_OP_EXPERT_DOWN ? op.k : op.n) *= whole;
        }
        op.flops *= load;
        op.bytes *= load;
        plan.set_op(i, op);
      } else if (std::string_view(op.name) == PP_OP_OPTIMIZER_STEP_EXPERTS) {
        if (routed_fraction < 1.0) {
          pp_op shared = op;
          paraplan::copy_name(shared.name, PP_OP_OPTIMIZER_STEP_SHARED_EXPERTS);
          paraplan::copy_name(shared.owner, kName);
          shared.bytes = op.bytes * (1.0 - routed_fraction);
          plan.insert_layer_op(plan.view().raw().op_count, shared, kind);
        }
        op.bytes *= routed_fraction / e * whole;
        plan.set_op(i, op);
      }
    }
  }

  // The phases an MoE block's ops run in: forward, backward and, when the block is recomputed
  // (full recomputation, or the `moe` module: Megatron-LM re-runs the router and the dispatch),
  // the forward again during backward, as the workload builder emits its ops.
  static std::vector<pp_phase> layer_phases(const pp_training& training) {
    std::vector<pp_phase> phases{PP_PHASE_FORWARD, PP_PHASE_BACKWARD};
    if (paraplan::recomputed_modules(training) & PP_RECOMPUTE_MOE) phases.push_back(PP_PHASE_RECOMPUTE);
    return phases;
  }

  // The first (or last) op named `name` of the layer kind `kind`.
  static int64_t find_op(const paraplan::PlanView& view, uint32_t kind, std::string_view name, bool last) {
    const std::vector<uint32_t> found = view.ops_named_in(name, kind);
    if (found.empty()) throw paraplan::InvalidArgument("the plan has no '" + std::string(name) + "' op");
    return last ? found.back() : found.front();
  }
  // Where the experts' work of a kind ends: after its last expert_down, or the expert_bias the
  // experts add after it.
  static uint32_t after_experts(const paraplan::PlanView& view, uint32_t kind) {
    int64_t last = find_op(view, kind, PP_OP_EXPERT_DOWN, /*last=*/true);
    const std::vector<uint32_t> biases = view.ops_named_in(PP_OP_EXPERT_BIAS, kind);
    if (!biases.empty()) last = std::max<int64_t>(last, biases.back());
    return static_cast<uint32_t>(last) + 1;
  }

  // Dispatch goes in front of the kind's first expert op, combine after its last one, one op per
  // phase. Each token's `sent` copies leave the rank (top_k, or the distinct ranks under the flex
  // dispatcher, whose ops are routed exchanges of `tokens` rows); the shared experts' inputs stay.
  void add_token_exchange(paraplan::PlanEditor& plan, uint32_t kind, int32_t ep_axis,
                          const paraplan::StrategyContext& context, double tokens, double sent, double load,
                          double top_k) const {
    const double hidden_bytes = tokens * static_cast<double>(context.model.hidden) * kActivationBytes;
    const double e = static_cast<double>(context.degree);
    pp_collective dispatch_kind = PP_COLLECTIVE_ALL_TO_ALL, combine_kind = PP_COLLECTIVE_ALL_TO_ALL;
    double bytes = hidden_bytes * sent * load;
    if (all_gather_) {
      dispatch_kind = PP_COLLECTIVE_ALL_GATHER;
      combine_kind = PP_COLLECTIVE_REDUCE_SCATTER;
      bytes = e * hidden_bytes;
    }
    const std::vector<pp_phase> phases = layer_phases(context.training);
    const double exposed = overlap_ ? exposed_share(plan.view().pipeline().micro_batches) : 1.0;
    // Padded capacity buffers are even whatever the routing; otherwise the busiest rank's load.
    const double uneven = capacity_factor_ > 0 && pad_to_capacity_ ? 1.0 : load;
    // Each exchange as its exposed part and, with overlap, its hidden part (same collective).
    auto insert = [&](uint32_t& at, const char* name, pp_phase phase, pp_collective collective) {
      for (const auto& [share, overlap] : {std::pair{exposed, PP_OVERLAP_NONE}, {1.0 - exposed, PP_OVERLAP_COMPUTE}}) {
        if (share <= 0.0) continue;
        pp_op op = exchange_op(name, phase, collective, ep_axis, bytes * share, overlap, uneven);
        if (flex_) op.m = tokens, op.n = bytes * share / (tokens * sent), op.k = top_k;  // a routed exchange
        plan.insert_layer_op(at++, op, kind);
      }
    };
    uint32_t at = static_cast<uint32_t>(find_op(plan.view(), kind, PP_OP_EXPERT_UP, /*last=*/false));
    for (pp_phase phase : phases) {
      // Backward runs the conjugate: the gradient of an all-gather is a reduce-scatter.
      bool swap = all_gather_ && phase == PP_PHASE_BACKWARD;
      insert(at, PP_OP_EP_DISPATCH, phase, swap ? combine_kind : dispatch_kind);
    }
    at = after_experts(plan.view(), kind);
    for (pp_phase phase : phases) {
      bool swap = all_gather_ && phase == PP_PHASE_BACKWARD;
      insert(at, PP_OP_EP_COMBINE, phase, swap ? dispatch_kind : combine_kind);
    }
  }

  // Megatron-Core's MoEAlltoAllTokenDispatcher with an expert tensor-parallel group of t > 1
  // (dispatch_postprocess / combine_preprocess): an all-gather over tp of the rows the all-to-all
  // brought, in front of the kind's first expert op, and a reduce-scatter of the experts' outputs
  // after its last one; backward runs the conjugates. `gathered` rows (t ranks' received copies)
  // of hidden x 2 bytes, the collective's whole buffer.
  void add_expert_tp_exchange(paraplan::PlanEditor& plan, uint32_t kind, int32_t tp_axis,
                              const paraplan::StrategyContext& context, double gathered) const {
    const double bytes = gathered * static_cast<double>(context.model.hidden) * kActivationBytes;
    // One op per phase at `at`, backward running the conjugate collective.
    auto insert = [&](uint32_t at, const char* name, pp_collective forward, pp_collective backward) {
      for (pp_phase phase : layer_phases(context.training))
        plan.insert_layer_op(
            at++,
            exchange_op(name, phase, phase == PP_PHASE_BACKWARD ? backward : forward, tp_axis, bytes, PP_OVERLAP_NONE, 1.0),
            kind);
    };
    insert(static_cast<uint32_t>(find_op(plan.view(), kind, PP_OP_EXPERT_UP, /*last=*/false)), kExpertTpGather,
           PP_COLLECTIVE_ALL_GATHER, PP_COLLECTIVE_REDUCE_SCATTER);
    insert(after_experts(plan.view(), kind), kExpertTpScatter,
           PP_COLLECTIVE_REDUCE_SCATTER, PP_COLLECTIVE_ALL_GATHER);
  }

  // The share of each exchange left on the critical path under batch-level overlap (header);
  // `micro_batches` per step on a data-parallel rank, as the host fixed them before any strategy.
  static double exposed_share(int64_t micro_batches) {
    constexpr double kOverlapSmShare = 20.0 / 132.0;
    const double alone = 1.0 / std::max(1.0, static_cast<double>(micro_batches));
    return alone + (1.0 - alone) * kOverlapSmShare;
  }

  // Megatron's all-to-all dispatcher receives one chunk per source rank and local expert and sorts
  // them by expert after the dispatch (sort_chunks_by_idxs), and back before the combine: one
  // more pass over the received copies each way, as the permutations are (2-byte rows read and
  // written; backward twice; the routed path's passes, paraplan/moe_kernels.hpp). The all-gather
  // dispatcher's masked gather needs none.
  static void sort_received_chunks(paraplan::PlanEditor& plan, uint32_t kind, double received_copies, int64_t hidden) {
    const double bytes = paraplan::moe::kUnfusedMoePasses * 2.0 * kActivationBytes * received_copies * static_cast<double>(hidden);
    const std::vector<pp_op> ops(plan.view().ops().begin(), plan.view().ops().end());
    const std::vector<uint32_t> op_kinds(plan.view().raw().op_layer_kinds, plan.view().raw().op_layer_kinds + ops.size());
    for (uint32_t i = 0; i < ops.size(); ++i) {
      const std::string_view name = ops[i].name;
      if (op_kinds[i] != kind || (name != PP_OP_MOE_PERMUTE && name != PP_OP_MOE_UNPERMUTE)) continue;
      pp_op op = ops[i];
      op.bytes += bytes * (op.phase == PP_PHASE_BACKWARD ? 2.0 : 1.0);
      plan.set_op(i, op);
    }
  }

  // `load`: the busiest rank's share over the mean when the routing is uneven (dropless or an
  // unpadded capacity: the busiest rank receives more than the others), else 1 (pp_op.count).
  static pp_op exchange_op(const char* name, pp_phase phase, pp_collective kind, int32_t axis, double bytes,
                           pp_overlap overlap, double load) {
    pp_op op = paraplan::make_op(PP_OP_COLLECTIVE, phase, PP_SCOPE_LAYER, name, kName);
    op.collective = kind;
    op.axis = axis;
    op.bytes = bytes;
    op.overlap = overlap;
    op.count = kind == PP_COLLECTIVE_ALL_TO_ALL ? load : 0.0;
    return op;
  }

  // Forward reads the probabilities and writes their per-expert means; backward (twice the
  // traffic, as the workload builder counts memory-bound backward ops) writes their gradient.
  static void add_aux_loss(paraplan::PlanEditor& plan, uint32_t kind, const paraplan::StrategyContext& context,
                           double probs_bytes) {
    uint32_t at = static_cast<uint32_t>(find_op(plan.view(), kind, PP_OP_ROUTER, /*last=*/true)) + 1;
    for (pp_phase phase : layer_phases(context.training)) {
      pp_op op = paraplan::make_op(PP_OP_MEMORY, phase, PP_SCOPE_LAYER, PP_OP_ROUTER_AUX_LOSS, kName);
      op.bytes = paraplan::moe::kUnfusedMoePasses * 2.0 * probs_bytes * (phase == PP_PHASE_BACKWARD ? 2.0 : 1.0);
      plan.insert_layer_op(at++, op, kind);
    }
  }

  double capacity_factor_;
  bool pad_to_capacity_;
  double imbalance_;
  bool all_gather_;
  bool flex_;
  bool overlap_;
  int64_t etp_;
};

}  // namespace

PARAPLAN_PLUGIN(ExpertParallel)
