// model_flags.cc: what the model and the training settings say in Megatron-LM's flags.
//
//   model        --num-layers, --hidden-size, --ffn-hidden-size, --num-attention-heads,
//                --kv-channels (head_dim other than hidden/heads), --group-query-attention
//                with --num-query-groups (kv_heads < heads), --seq-length,
//                --max-position-embeddings, --swiglu; SwiGLU models are the Llama family's
//                shape: --normalization RMSNorm, --position-embedding-type rope (or the
//                model's position_embedding), --disable-bias-linear; the output layer is
//                untied (paraplan counts it apart from the embedding):
//                --untie-embeddings-and-output-weights; --hidden-dropout and --attention-dropout
//                (the model's dropout, both: Megatron-LM defaults them to 0.1); fused attention
//                (recipe flash_attention) --attention-backend auto (attention_kernel tuned)
//                or flash (flash2), else unfused
//   batch        --micro-batch-size, --global-batch-size (Megatron-LM derives the micro-batches
//                per step from them and its data-parallel size, as paraplan does)
//   precision    --bf16 | --fp16 | --bf16 --fp8-format hybrid
//   recompute    selective: --recompute-granularity selective (core attention, Korthikanti et
//                al.), with --recompute-modules when the recipe names others; full:
//                --recompute-granularity full --recompute-method uniform --recompute-num-layers 1 (every layer's input kept, the layer recomputed);
//                of some layers (recompute_num_layers N): --recompute-method block --recompute-num-layers N
//   cpu_offloading_num_layers N: --cpu-offloading-num-layers N (activations to host memory and back)
//   CUDA graphs  cuda_graph_modules: --cuda-graph-impl full_iteration, or --cuda-graph-impl
//                transformer_engine --cuda-graph-modules <the modules> (TransformerConfig's
//                cuda_graph_impl and cuda_graph_modules)
//   MoE shape    --num-experts, --moe-router-topk, --moe-ffn-hidden-size,
//                --moe-shared-expert-intermediate-size (shared experts x their width),
//                --moe-router-num-groups and --moe-router-group-topk (group-limited routing)
//   training     --train-iters (the exporter's parameter), --optimizer, --lr, --log-interval,
//                --eval-iters 0
//   data         --mock-data --tokenizer-type NullTokenizer --vocab-size V-1
//                --padded-vocab-size V: the null tokenizer adds one end-of-document token to
//                --vocab-size, and --padded-vocab-size keeps the vocabulary at exactly V
//                instead of padding it to a multiple of 128 x tp (when tp divides V).
// All names from Megatron-LM's megatron/training/arguments.py.
#include <algorithm>
#include <cstdio>
#include <string>

#include "paraplan/host_issue.hpp"
#include "translation.h"

namespace paraplan_megatron {

std::string decimal(double value) {
  char text[64];
  std::snprintf(text, sizeof(text), "%.6g", value);
  std::string result = text;
  if (result.find_first_of(".e") == std::string::npos) result += ".0";
  return result;
}

namespace {

bool fused_attention(const paraplan::PlanView& plan) {
  const auto ops = plan.ops();
  return std::any_of(ops.begin(), ops.end(), [](const pp_op& op) {
    return op.kind == PP_OP_ATTENTION && std::string_view(op.name) == PP_OP_ATTENTION_CORE;
  });
}

// Megatron-LM's --attention-backend (transformer/enums.py AttnBackend) for the plan's attention:
// the tuned kernel is `auto`, with which Transformer Engine takes cuDNN's fused attention on
// Hopper and later and FlashAttention on Ampere (dot_product_attention/utils.py); FlashAttention-2
// is `flash`; two batched GEMMs are `unfused`. Megatron-LM has no Triton FlashAttention: that
// plan gets `flash` and a report.
const char* attention_backend(const paraplan::PlanView& plan) {
  if (!fused_attention(plan)) return "unfused";
  const pp_attention_kernel kernel = paraplan::attention_kernel(plan.training());
  return kernel == PP_ATTENTION_KERNEL_FLASH2 || kernel == PP_ATTENTION_KERNEL_TRITON ? "flash" : "auto";
}

// The names of the module bits `set` holds, in the table's order, one word each: how Megatron-LM
// reads a list flag (nargs '+' or '*').
template <typename NameTable>
std::string module_words(const NameTable& names, uint32_t set) {
  std::string words;
  for (const auto& [name, bit] : names)
    if (set & bit) words += (words.empty() ? "" : " ") + std::string(name);
  return words;
}

}  // namespace

void translate_model(const paraplan::PlanView& plan, int64_t train_iters, Translation& out) {
  const pp_model& model = plan.model();
  const pp_training& training = plan.training();

  FlagGroup& shape = out.model;
  shape.add("--num-layers", model.layers);
  shape.add("--hidden-size", model.hidden);
  shape.add("--ffn-hidden-size", model.ffn_hidden);
  shape.add("--num-attention-heads", model.heads);
  if (model.heads > 0 && (model.hidden % model.heads != 0 || model.head_dim != model.hidden / model.heads))
    shape.add("--kv-channels", model.head_dim);
  if (model.kv_heads > 0 && model.kv_heads < model.heads) {
    shape.add("--group-query-attention");
    shape.add("--num-query-groups", model.kv_heads);
  }
  shape.add("--seq-length", model.seq_len);
  shape.add("--max-position-embeddings", model.seq_len);
  // The model's position embedding, or for a SwiGLU model that gives none the Llama family's rope.
  std::string positions(paraplan::position_embedding_name(paraplan::position_embedding(model)));
  if (positions.empty() && model.ffn_type == PP_FFN_SWIGLU) positions = "rope";
  if (model.ffn_type == PP_FFN_SWIGLU) {
    shape.add("--swiglu");
    shape.add("--normalization", "RMSNorm");
  }
  if (!positions.empty()) shape.add("--position-embedding-type", positions);
  if (model.ffn_type == PP_FFN_SWIGLU) shape.add("--disable-bias-linear");
  shape.add("--untie-embeddings-and-output-weights");
  // Always said: Megatron-LM's TransformerConfig defaults both to 0.1, and the plan charged the
  // model's dropout (its masks), none for the Llama, Qwen and DeepSeek families.
  shape.add("--hidden-dropout", decimal(model.dropout));
  shape.add("--attention-dropout", decimal(model.dropout));
  shape.add("--attention-backend", attention_backend(plan));

  out.batch.add("--micro-batch-size", training.micro_batch);
  out.batch.add("--global-batch-size", training.global_batch);

  switch (training.precision) {
    case PP_PRECISION_FP16:
      out.precision.add("--fp16");
      break;
    case PP_PRECISION_FP8:
      out.precision.add("--bf16");
      out.precision.add("--fp8-format", "hybrid");
      break;
    case PP_PRECISION_MXFP8:  // Megatron-LM arguments.py: --fp8-recipe mxfp8 takes e4m3 elements
      out.precision.add("--bf16");
      out.precision.add("--fp8-format", "e4m3");
      out.precision.add("--fp8-recipe", "mxfp8");
      break;
    case PP_PRECISION_NVFP4:
      out.precision.add("--bf16");
      out.precision.add("--fp4-format", "e2m1");
      out.precision.add("--fp4-recipe", "nvfp4");
      break;
    default:
      out.precision.add("--bf16");
      break;
  }

  if (fused_attention(plan) && paraplan::attention_kernel(training) == PP_ATTENTION_KERNEL_TRITON)
    out.unexpressed.push_back("training.attention_kernel = \"triton\": Megatron-LM has no Triton FlashAttention "
                              "backend; exported as --attention-backend flash (FlashAttention-2), which runs the "
                              "attention faster than was evaluated");
  // Megatron-LM's arguments.py keeps fp8_dot_product_attention off its command line (the
  // TransformerConfig fields it excludes); Megatron-Bridge sets it in Python.
  if (paraplan::fp8_attention(training))
    out.unexpressed.push_back("training.fp8_attention: Megatron-LM's command line has no flag for "
                              "fp8_dot_product_attention (arguments.py excludes it); the job runs attention in bf16, "
                              "slower than was evaluated, unless its config sets it");
  if (paraplan::moe_fused_mlp(training)) {
    // Transformer Engine's op fuser fuses GroupedLinear + GLU + GroupedLinear when the GLU's
    // halves are interleaved (Megatron-Bridge's cutedsl_fused_grouped_mlp sets both).
    out.moe.add("--use-transformer-engine-op-fuser");
    out.moe.add("--moe-mlp-glu-interleave-size", int64_t{32});
  }
  if (paraplan::elementwise_kernels(training) == PP_ELEMENTWISE_EAGER)
    out.unexpressed.push_back("training.elementwise_kernels = \"eager\": Megatron-LM runs fused norm, rotary and GLU "
                              "kernels (Transformer Engine, Megatron-Core's fusions): the job's elementwise work runs "
                              "faster than was evaluated");
  if (paraplan::master_weights_in_place(training))
    out.unexpressed.push_back("training.master_weights = \"in_place\": Megatron-LM keeps bf16 weights and an fp32 copy "
                              "in its optimizer state: the job holds 2 bytes per parameter more model state than was "
                              "evaluated");

  if (training.recompute == PP_RECOMPUTE_SELECTIVE) {
    out.recompute.add("--recompute-granularity", "selective");
    // Megatron-LM's default module is core_attn; any other set is written out.
    const uint32_t recomputed = paraplan::recomputed_modules(training);
    if (recomputed == PP_RECOMPUTE_TORCHTITAN_OP)
      out.unexpressed.push_back("recompute_modules = [\"torchtitan_op\"]: Megatron-LM has no per-op policy (every "
                                "second matmul recomputed); exported as its default selective recompute (core_attn), "
                                "which keeps more activations and recomputes less than was evaluated");
    else if (recomputed != PP_RECOMPUTE_CORE_ATTN)
      out.recompute.add("--recompute-modules", module_words(paraplan::kRecomputeModuleNames, recomputed));
  } else if (training.recompute == PP_RECOMPUTE_FULL) {
    // Every layer: uniform units of one layer. Some: block, the first N of each chunk.
    const int64_t partial = paraplan::recompute_num_layers(training);
    out.recompute.add("--recompute-granularity", "full");
    out.recompute.add("--recompute-method", partial > 0 ? "block" : "uniform");
    out.recompute.add("--recompute-num-layers", partial > 0 ? partial : 1);
  }
  // Setting it turns on cpu_offloading (arguments.py); TransformerConfig checks the rest.
  if (const int64_t offloaded = paraplan::cpu_offloading_num_layers(training); offloaded > 0)
    out.recompute.add("--cpu-offloading-num-layers", offloaded);

  const uint32_t graphs = paraplan::issue::cuda_graph_modules(training);
  if (graphs & PP_CUDA_GRAPH_FULL_ITERATION) {
    out.training.add("--cuda-graph-impl", "full_iteration");
  } else if (graphs != 0) {
    out.training.add("--cuda-graph-impl", "transformer_engine");
    out.training.add("--cuda-graph-modules", module_words(paraplan::issue::kCudaGraphModuleNames, graphs));
  }

  if (model.moe_experts > 0) {
    out.moe.add("--num-experts", model.moe_experts);
    out.moe.add("--moe-router-topk", model.moe_top_k);
    const int64_t expert_width = model.moe_ffn_hidden > 0 ? model.moe_ffn_hidden : model.ffn_hidden;
    out.moe.add("--moe-ffn-hidden-size", expert_width);
    if (model.moe_shared_experts > 0)
      out.moe.add("--moe-shared-expert-intermediate-size", model.moe_shared_experts * expert_width);
    const paraplan::LayerKinds kinds = plan.layer_kinds();
    if (const paraplan::routing::Routing routing = kinds.size() ? paraplan::routing::of(kinds[0]) : paraplan::routing::Routing{};
        routing.groups > 1) {
      out.moe.add("--moe-router-num-groups", routing.groups);
      out.moe.add("--moe-router-group-topk", routing.group_topk);
    }
  }

  out.training.add("--train-iters", train_iters);
  out.training.add("--optimizer", training.optimizer == PP_OPTIMIZER_SGD ? "sgd" : "adam");
  out.training.add("--lr", "3.0e-4");
  out.training.add("--log-interval", 1);
  out.training.add("--eval-iters", 0);

  out.data.add("--mock-data");
  out.data.add("--tokenizer-type", "NullTokenizer");
  out.data.add("--vocab-size", model.vocab - 1);
  // The vocabulary-parallel embedding splits the rows over tp: without that, Megatron-LM pads.
  if (model.vocab % plan.axis_degree(PP_AXIS_TP) == 0) out.data.add("--padded-vocab-size", model.vocab);
}

}  // namespace paraplan_megatron
