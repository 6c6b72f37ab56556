// tp: Megatron-LM tensor parallelism (Shoeybi et al. 2019; Narayanan et al. 2021).
//
// Attention: the QKV projection is split by columns (heads, and with GQA the KV heads, divide
// over the t ranks), each rank attends over its own heads, and the output projection is split
// by rows. MLP: the up (and SwiGLU gate) projection by columns, the down projection by rows. The
// row-parallel outputs are partial sums: one all-reduce after attention and one after the MLP in
// the forward pass, and their conjugates (all-reduce of the input gradients of the column-
// parallel layers) in the backward pass: 2 + 2 per layer, each of s·b·h·2 bytes. They sit on the
// critical path unless `overlap` hides them behind the GEMMs, as `overlap_method` says:
// "userbuffers" (Megatron-LM's --tp-comm-overlap, Transformer Engine's userbuffers) in every pass;
// "micro_pipeline" (PyTorch's async TP under torch.compile, torchtitan's enable_async_tensor_parallel)
// in the forward and recomputed forward passes only. PyTorch's pass decomposes an all-gather
// along the rows of the matmul that reads it; the backward pass's gathers also feed the weight
// gradient, where the gathered sequence is the reduction dimension (decomposing that was first
// proposed in pytorch/pytorch#163068, September 2025). Its reduce-scatters after the data-gradient
// GEMMs could be decomposed; they are priced exposed with the gathers, as the measured gains say:
// its authors up to 29 % on the forward pass and 8 % end to end (Llama 3 8B and 70B,
// "[Distributed w/ TorchTitan] Introducing Async Tensor Parallelism in PyTorch", 2024),
// torchtitan 9-10 % (Llama 3 8B on 64 H100, June 2025): what hiding the forward alone gives.
// The embedding and the output layer are vocabulary-parallel: an all-reduce of the embedding
// output forward, and of the logits' input gradient backward. Each all-reduce is inserted where
// it runs (plan.h's execution order): forward (and recompute) right after the row-parallel GEMM,
// backward right before the first column-parallel GEMM's backward entry, which a backward pass
// runs last.
//
// Memory (Korthikanti et al. 2022): weights, gradients and optimizer state divide by t (the
// norm weights, 2h per layer, are replicated; their share is under 0.1 % and ignored);
// activations inside the tensor-parallel regions ("act.tensor.*", the expert hidden state and
// the logits) divide by t, the rest ("act.seq.*") stays replicated unless sequence parallelism
// (the `sp` strategy, mode "megatron") shards it.
#include <string>
#include <string_view>
#include <vector>

#include "paraplan/sdk.hpp"

namespace {

constexpr const char* kName = PP_STRATEGY_TP;

class TensorParallel : public paraplan::Strategy {
 public:
  static constexpr int32_t apply_order = 20;

  static paraplan::PluginInfo info() {
    return {kName,
            "1.0.0",
            "Megatron tensor parallelism: column/row-parallel attention (GQA-aware) and MLP, vocabulary-parallel "
            "embedding and output layer",
            {paraplan::ParamSpec::Bool(PP_TP_PARAM_OVERLAP, false,
                                       "overlap the tensor-parallel collectives with GEMMs (Megatron-LM --tp-comm-overlap, "
                                       "torchtitan enable_async_tensor_parallel)"),
             paraplan::ParamSpec::Enum(PP_TP_PARAM_OVERLAP_METHOD, {PP_TP_OVERLAP_USERBUFFERS, PP_TP_OVERLAP_MICRO_PIPELINE},
                                       PP_TP_OVERLAP_USERBUFFERS,
                                       "how overlap runs: userbuffers (Transformer Engine, Megatron-LM: every pass) or "
                                       "micro_pipeline (PyTorch async TP, torchtitan: forward passes only)")}};
  }

  explicit TensorParallel(const paraplan::Params& params)
      : overlap_(params.bool_value(PP_TP_PARAM_OVERLAP)),
        forward_only_(params.string_value(PP_TP_PARAM_OVERLAP_METHOD) == PP_TP_OVERLAP_MICRO_PIPELINE) {}

  // Every degree from 2 that validate() accepts; overlap stays as the recipe sets it.
  static std::vector<paraplan::SearchCase> search_space() { return {paraplan::SearchCase::degrees(2)}; }

  void validate(const paraplan::StrategyContext& context) override {
    if (forward_only_ && !overlap_)
      return refuse("tp overlap_method = \"" PP_TP_OVERLAP_MICRO_PIPELINE "\" says how overlap runs, but overlap = "
                    "false: set overlap = true, or leave overlap_method out");
    const int64_t t = context.degree;
    const pp_model& model = context.model;
    // The first width t does not divide, refused (the search tries every degree: no exception).
    bool divides = true;
    auto require = [&](int64_t value, const char* what) {
      if (!divides || value % t == 0) return;
      divides = false;
      refuse("tp = " + std::to_string(t) + " must divide " + what + " = " + std::to_string(value));
    };
    // Every kind of layer (a uniform model has one): its heads, groups and widths split evenly.
    const paraplan::LayerKinds kinds(model);
    for (uint32_t i = 0; i < kinds.size() && divides; ++i) {
      const pp_layer_kind& kind = kinds[i];
      if (kind.mixer == PP_MIXER_ATTENTION || kind.mixer == PP_MIXER_MLA) require(kind.heads, "the attention heads");
      if (kind.mixer == PP_MIXER_ATTENTION) require(kind.kv_heads, "the KV heads (query groups)");
      if (kind.mixer == PP_MIXER_MAMBA2) {
        require(kind.mamba_heads, "the Mamba heads");
        require(kind.mamba_groups, "the Mamba B/C groups");
      }
      if (kind.mlp == PP_MLP_DENSE) require(kind.ffn_hidden, "the MLP width");
      if (kind.mlp == PP_MLP_MOE) require(kind.expert_ffn_hidden, "the MLP width");
    }
  }

  void apply(const paraplan::StrategyContext& context, paraplan::PlanEditor& plan) override {
    const double t = static_cast<double>(context.degree);
    const int32_t axis = plan.add_axis(PP_AXIS_TP, context.degree, kName);
    const paraplan::PlanView view = plan.view();
    const std::vector<pp_op> ops(view.ops().begin(), view.ops().end());
    const std::vector<pp_memory_item> memory(view.memory().begin(), view.memory().end());
    const std::vector<uint32_t> kinds(view.raw().op_layer_kinds, view.raw().op_layer_kinds + ops.size());

    for (uint32_t i = 0; i < ops.size(); ++i) {
      pp_op op = ops[i];
      if (split_op(op, t)) plan.set_op(i, op);
    }
    for (uint32_t i = 0; i < memory.size(); ++i) {
      pp_memory_item item = memory[i];
      if (!splits_memory(item)) continue;
      item.bytes /= t;
      plan.set_memory(i, item);
    }
    if (context.degree > 1) add_collectives(plan, axis, ops, kinds);
  }

 private:
  // Divides the op's dimension that tensor parallelism splits; false if the op is replicated.
  static bool split_op(pp_op& op, double t) {
    const std::string_view name = op.name;
    if (is_column(name)) op.n /= t;
    else if (is_row(name)) op.k /= t;
    else if (name == PP_OP_MAMBA_SCAN) op.n /= t;  // this rank's heads of the inner width
    else if (name == PP_OP_MAMBA_CONV || name == PP_OP_MAMBA_NORM) op.bytes /= t;
    else if (name == PP_OP_ATTENTION_CORE) op.count /= t;
    else if (name == PP_OP_ATTENTION_SCORES || name == PP_OP_ATTENTION_CONTEXT) op.m /= t;  // heads are stacked in m
    else if (name == PP_OP_ATTENTION_SOFTMAX) op.bytes /= t;  // the scores of this rank's heads
    else if (name == PP_OP_SHARED_EXPERT_DOWN) op.k /= t;  // row-parallel; reduced with the routed experts' output
    else if (name == PP_OP_MLP_ACT || name == PP_OP_EXPERT_ACT || name == PP_OP_SHARED_EXPERT_ACT || name == PP_OP_LOSS ||
             name == PP_OP_MTP_LOSS || name == PP_OP_MLP_CLAMP || name == PP_OP_EXPERT_CLAMP)
      op.bytes /= t;
    else if (name == PP_OP_ROTARY) op.bytes /= t;  // this rank's query and key heads
    // expert_bias stays whole: fc2's row-parallel output is every received row at full width.
    else if (name == PP_OP_FP8_CAST_TENSOR || name == PP_OP_FP8_CAST_EXPERT) op.bytes /= t;
    else if (name.starts_with(PP_OP_OPTIMIZER_STEP)) op.bytes /= t;  // each rank updates its 1/t of the weights
    else return false;
    op.flops /= t;
    return true;
  }

  // Column-parallel GEMMs (outputs split), row-parallel ones (inputs split). MLA's down
  // projections stay replicated (Megatron-LM builds them duplicated), its up projections are
  // column-parallel; a Mamba-2 mixer's in_proj is column-, its out_proj row-parallel; the MTP
  // module's logits are vocabulary-parallel like the head's. An MoE layer's shared experts are
  // split like a dense MLP, but their output joins the routed experts' before the one reduction
  // (Megatron's SharedExpertMLP), and their input gradient joins the experts' block.
  static bool is_column(std::string_view name) {
    return name == PP_OP_QKV || name == PP_OP_MLP_UP || name == PP_OP_MLP_GATE || name == PP_OP_EXPERT_UP ||
           name == PP_OP_EXPERT_GATE || name == PP_OP_SHARED_EXPERT_UP || name == PP_OP_LOGITS || name == PP_OP_MLA_Q_UP || name == PP_OP_MLA_KV_UP ||
           name == PP_OP_MAMBA_IN_PROJ || name == PP_OP_MTP_LOGITS;
  }
  static bool is_row(std::string_view name) {
    return name == PP_OP_ATTN_OUT || name == PP_OP_MLP_DOWN || name == PP_OP_EXPERT_DOWN || name == PP_OP_MAMBA_OUT_PROJ;
  }

  static bool splits_memory(const pp_memory_item& item) {
    const std::string_view name = item.name;
    if (item.kind != PP_MEMORY_ACTIVATIONS) return item.kind != PP_MEMORY_OTHER;  // all model state
    return name.starts_with(PP_MEMORY_PREFIX_ACT_TENSOR) || name == PP_MEMORY_ACT_EXPERT_HIDDEN ||
           name == PP_MEMORY_ACT_LOGITS;
  }

  // Two all-reduces per layer and pass (after the token mixer and after the MLP or MoE block;
  // one for a layer of either alone), in every phase the layer runs: FORWARD, BACKWARD and, when
  // fully recomputed, RECOMPUTE. Each reduces the layer's activation, tokens x hidden x 2 bytes,
  // but MLA's input gradient, which is partial only at its latents (its down projections are
  // replicated): tokens x (q latent + kv latent) x 2.
  void add_collectives(paraplan::PlanEditor& plan, int32_t axis, const std::vector<pp_op>& ops,
                       const std::vector<uint32_t>& kinds) const {
    struct Insertion {
      uint32_t at;
      pp_op op;
      uint32_t kind;
    };
    std::vector<Insertion> insertions;
    auto reduce = [&](uint32_t at, const pp_op& anchor, double bytes, uint32_t kind) {
      insertions.push_back({at, all_reduce(axis, anchor.scope, anchor.phase, bytes), kind});
    };
    const double activation_bytes = layer_activation_bytes(ops);
    for (uint32_t i = 0; i < ops.size(); ++i) {
      const pp_op& op = ops[i];
      const std::string_view name = op.name;
      const bool backward = op.phase == PP_PHASE_BACKWARD;
      const uint32_t kind = kinds[i];
      // Row-parallel outputs are partial sums: reduced right after the GEMM.
      if (is_row(name) && !backward) reduce(i + 1, op, activation_bytes, kind);
      // Column-parallel inputs' gradients are partial sums: reduced once the block's first
      // column-parallel GEMM (in list order) has run its backward.
      if (backward && is_first_column_of_block(ops, kinds, i)) {
        const bool latent = name == PP_OP_MLA_Q_UP || name == PP_OP_MLA_KV_UP;
        reduce(i, op, latent ? mla_latent_bytes(ops, kinds, i) : activation_bytes, kind);
      }
      // Vocabulary-parallel embedding: each rank looks up its rows; the sum is all-reduced.
      if (name == PP_OP_EMBEDDING && op.phase == PP_PHASE_FORWARD) reduce(i + 1, op, op.bytes / 2.0, kind);
      // Vocabulary-parallel output layers: their input gradient is a partial sum.
      if ((name == PP_OP_LOGITS || name == PP_OP_MTP_LOGITS) && backward) reduce(i, op, op.m * 2.0 * op.k, kind);
    }
    // From the back, so earlier positions stay valid.
    for (auto it = insertions.rbegin(); it != insertions.rend(); ++it) plan.insert_layer_op(it->at, it->op, it->kind);
  }

  // tokens x hidden x 2 bytes: a row-parallel projection's output (its n is the hidden size).
  static double layer_activation_bytes(const std::vector<pp_op>& ops) {
    for (const pp_op& op : ops)
      if (is_row(op.name)) return op.m * 2.0 * op.n;
    return 0.0;
  }

  // MLA's up projections read the latents: their inputs' gradients (k is the latent width).
  static double mla_latent_bytes(const std::vector<pp_op>& ops, const std::vector<uint32_t>& kinds, uint32_t index) {
    double width = 0;
    for (uint32_t i = 0; i < ops.size(); ++i) {
      const std::string_view name = ops[i].name;
      if (ops[i].phase == ops[index].phase && kinds[i] == kinds[index] &&
          (name == PP_OP_MLA_Q_UP || name == PP_OP_MLA_KV_UP))
        width += ops[i].k;
    }
    return ops[index].m * 2.0 * width;
  }

  // Which block a column-parallel GEMM belongs to: the mixer's (attention, MLA, Mamba), the
  // MLP's or the experts'; 0 for any other op.
  static int block_of(std::string_view name) {
    if (name == PP_OP_QKV || name == PP_OP_MLA_Q_UP || name == PP_OP_MLA_KV_UP || name == PP_OP_MAMBA_IN_PROJ) return 1;
    if (name == PP_OP_MLP_UP || name == PP_OP_MLP_GATE) return 2;
    if (name == PP_OP_EXPERT_UP || name == PP_OP_EXPERT_GATE || name == PP_OP_SHARED_EXPERT_UP) return 3;
    return 0;
  }

  // The block's first column-parallel GEMM of its phase and layer kind in list order (SwiGLU's up
  // or gate; MLA's q or kv up projection).
  static bool is_first_column_of_block(const std::vector<pp_op>& ops, const std::vector<uint32_t>& kinds, uint32_t index) {
    const int block = block_of(ops[index].name);
    if (block == 0) return false;
    for (uint32_t i = 0; i < index; ++i)
      if (ops[i].phase == ops[index].phase && kinds[i] == kinds[index] &&
          block_of(ops[i].name) == block)
        return false;
    return true;
  }

  pp_op all_reduce(int32_t axis, pp_scope scope, pp_phase phase, double bytes) const {
    pp_op op = paraplan::make_op(PP_OP_COLLECTIVE, phase, scope, PP_OP_TP_ALL_REDUCE, kName);
    op.collective = PP_COLLECTIVE_ALL_REDUCE;
    op.axis = axis;
    op.bytes = bytes;
    const bool hidden = overlap_ && !(forward_only_ && phase == PP_PHASE_BACKWARD);
    op.overlap = hidden ? PP_OVERLAP_COMPUTE : PP_OVERLAP_NONE;
    return op;
  }

  bool overlap_;
  bool forward_only_;  // micro_pipeline: the backward pass's collectives stay on the critical path
};

}  // namespace

PARAPLAN_PLUGIN(TensorParallel)
