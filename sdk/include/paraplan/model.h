/* paraplan/model.h: what is being trained and how: the model shape, the training settings and the
 * cluster size. These are read-only inputs for strategies and executors; strategies never see the
 * hardware profile (see hardware.h), only the GPU count.
 *
 * Field names match the recipe keys and the columns of published measurement tables, so a recipe
 * and a measured run say the same thing the same way.
 */
#ifndef PARAPLAN_MODEL_H
#define PARAPLAN_MODEL_H

#include "paraplan/abi.h"

typedef enum pp_ffn_type {
  PP_FFN_GELU = 1,        /* two matrices: up (h -> f) and down (f -> h) */
  PP_FFN_SWIGLU = 2,      /* three matrices: gate and up (h -> f), down (f -> h) */
  PP_FFN_SQUARED_RELU = 3 /* ABI 1.6: two matrices like GELU, relu(x)^2 between (Nemotron) */
} pp_ffn_type;

/* ABI 1.6: the layer stack. A model is a sequence of layers, each of one of a few kinds; a kind is
 * a token mixer followed by an MLP, either of which may be absent (Megatron-LM's hybrid models
 * give every mixer and every MLP a layer of its own). */
typedef enum pp_mixer {
  PP_MIXER_NONE = 0,      /* an MLP-only layer (Megatron-LM hybrid pattern '-' or 'E') */
  PP_MIXER_ATTENTION = 1, /* multi-head, grouped-query or multi-query attention */
  PP_MIXER_MLA = 2,       /* multi-head latent attention (DeepSeek-V2/V3): low-rank Q and KV */
  PP_MIXER_MAMBA2 = 3     /* a Mamba-2 (SSD) mixer (Dao and Gu 2024) */
} pp_mixer;

typedef enum pp_mlp {
  PP_MLP_NONE = 0,  /* a mixer-only layer (Megatron-LM hybrid pattern 'M' or '*') */
  PP_MLP_DENSE = 1, /* ffn_type, ffn_hidden */
  PP_MLP_MOE = 2    /* routed experts plus optional shared experts */
} pp_mlp;

#define PP_LAYER_KIND_NAME_CAPACITY 32

/* One distinct kind of layer and how many of it the model has. The host hands an array of these
 * with a stride (pp_model.layer_kind_stride), so later minors may append fields. */
typedef struct pp_layer_kind {
  uint32_t struct_size;
  char name[PP_LAYER_KIND_NAME_CAPACITY]; /* e.g. "mla+moe", "gqa-swa+moe", "mamba", "mtp:mla+moe" */
  int64_t count;   /* layers of this kind in the model */
  int32_t mtp;     /* 1: a multi-token-prediction module (its layer, two norms, a 2h -> h projection
                      and a second pass through the output head), after the last decoder layer */
  pp_mixer mixer;
  /* PP_MIXER_ATTENTION (and MLA's heads): */
  int64_t heads;
  int64_t kv_heads;
  int64_t head_dim;
  int64_t sliding_window; /* keys each query attends to; 0 = the full (causal) sequence */
  /* PP_MIXER_MLA (DeepSeek-V3's config names; q_lora_rank 0 = Q projected directly): */
  int64_t q_lora_rank;
  int64_t kv_lora_rank;
  int64_t qk_nope_head_dim;
  int64_t qk_rope_head_dim;
  int64_t v_head_dim;
  /* PP_MIXER_MAMBA2 (Megatron-LM's MambaMixer): inner width = mamba_heads * mamba_head_dim */
  int64_t mamba_heads;
  int64_t mamba_head_dim;
  int64_t mamba_state;
  int64_t mamba_groups;
  int64_t mamba_conv_kernel;
  pp_mlp mlp;
  pp_ffn_type ffn_type; /* the dense MLP's and every expert's */
  int64_t ffn_hidden;   /* PP_MLP_DENSE: width */
  /* PP_MLP_MOE: */
  int64_t experts;
  int64_t top_k;
  int64_t expert_ffn_hidden;
  int64_t shared_experts;
  int64_t shared_ffn_hidden; /* total width of the shared experts together */
  /* Group-limited routing (Megatron-LM --moe-router-num-groups / --moe-router-group-topk;
   * DeepSeek-V3's node-limited routing: 8 groups, 4 per token): the experts form router_groups
   * equal contiguous groups and a token's top_k come from router_group_topk of them. 0: none. */
  int64_t router_groups;
  int64_t router_group_topk;
  /* Every linear layer has a bias (Megatron-LM's add_bias_linear; GPT-OSS). Megatron-Core adds
   * the routed experts' fc2 bias per expert outside the GEMM, and an MoE model with biases runs
   * the bias-dropout-add unfused (TEGroupedMLP refuses bias_dropout_fusion). */
  int32_t linear_bias;
  int32_t reserved; /* 0: keeps the struct free of padding the host compares */
  /* A GLU's inputs clamped to +-this before the activation (Megatron-LM's
   * activation_func_clamp_value; GPT-OSS 7.0), eager ops; 0 = none. */
  double activation_clamp;
} pp_layer_kind;

/* An op or memory item of scope LAYER that every kind of layer has (pp_plan_view_v1). */
#define PP_EVERY_LAYER_KIND 0xFFFFFFFFu

/* ABI 1.6: how positions enter the model (Megatron-LM's --position-embedding-type). */
typedef enum pp_position_embedding {
  PP_POSITION_EMBEDDING_UNSPECIFIED = 0,      /* not given: no rotary pass is priced */
  PP_POSITION_EMBEDDING_ROPE = 1,             /* rotary on Q and K, one fused kernel (apply_rope_fusion) */
  PP_POSITION_EMBEDDING_YARN = 2,             /* rotary with YaRN scaling, which Megatron-Bridge runs unfused */
  PP_POSITION_EMBEDDING_LEARNED_ABSOLUTE = 3, /* a learned table added to the embedding (GPT-2/3) */
  PP_POSITION_EMBEDDING_NONE = 4              /* none (Nemotron-H's attention layers) */
} pp_position_embedding;

typedef struct pp_model {
  uint32_t struct_size;
  const char* name;
  int64_t layers;
  int64_t hidden;
  int64_t heads;
  int64_t kv_heads; /* == heads for multi-head attention, fewer for GQA, 1 for MQA */
  int64_t head_dim; /* usually hidden / heads */
  int64_t ffn_hidden;
  pp_ffn_type ffn_type;
  int64_t vocab;
  int64_t seq_len;
  /* Mixture of experts; moe_experts == 0 means a dense model. Every layer is an MoE layer when
   * moe_experts > 0 (the MLP is replaced by the experts). */
  int64_t moe_experts;
  int64_t moe_top_k;
  int64_t moe_ffn_hidden;
  int64_t moe_shared_experts;
  /* ABI 1.6: the layer stack (read only when struct_size covers it; paraplan::layer_kinds in
   * sdk.hpp does that). The fields above still describe the model for a 1.5 plugin: `layers`
   * counts the decoder layers, the attention fields are the first attention layer's, ffn_hidden
   * the dense MLP's and moe_* the MoE layers'. A uniform model has one kind. */
  const pp_layer_kind* layer_kinds;
  uint32_t layer_kind_count;
  uint32_t layer_kind_stride;      /* bytes from one kind to the next (the host's sizeof) */
  const uint32_t* layer_sequence;  /* the kind of every layer, first to last, MTP modules last */
  int64_t layer_sequence_length;   /* layers + mtp_layers */
  int64_t mtp_layers;
  int32_t tied_embeddings;         /* 1: the output head reuses the embedding matrix */
  double dropout;                  /* hidden and attention dropout probability (0: no masks kept) */
  double rotary_base;              /* RoPE theta; 0 = not given */
  double norm_epsilon;             /* 0 = not given */
  pp_position_embedding position_embedding;
} pp_model;

typedef enum pp_precision {
  PP_PRECISION_BF16 = 1,
  PP_PRECISION_FP16 = 2,
  PP_PRECISION_FP8 = 3,   /* FP8 GEMMs with per-tensor (current or delayed) scaling */
  PP_PRECISION_MXFP8 = 4, /* ABI 1.6: FP8 GEMMs with one E8M0 scale per 32 elements (OCP MX) */
  PP_PRECISION_NVFP4 = 5  /* ABI 1.6: FP4 (E2M1) GEMMs, an E4M3 scale per 16 elements (Blackwell) */
} pp_precision;

typedef enum pp_recompute {
  PP_RECOMPUTE_NONE = 0,
  PP_RECOMPUTE_SELECTIVE = 1, /* recompute the attention core only (Korthikanti et al. 2022) */
  PP_RECOMPUTE_FULL = 2       /* keep only each layer's input; recompute the whole forward */
} pp_recompute;

/* ABI 1.6: with PP_RECOMPUTE_SELECTIVE, which parts of a layer are recomputed in backward rather
 * than kept (Megatron-LM's --recompute-modules); a bit set, 0 meaning PP_RECOMPUTE_CORE_ATTN.
 * ABI 1.8: TORCHTITAN_OP is a policy of its own, never combined with the others. */
typedef enum pp_recompute_module {
  PP_RECOMPUTE_CORE_ATTN = 1,   /* the attention core (Korthikanti et al. 2022's selective recompute) */
  PP_RECOMPUTE_MLA_UP_PROJ = 2, /* MLA's up projections: Q, K and V rebuilt from the kept latents */
  PP_RECOMPUTE_LAYERNORM = 4,   /* the norms: their outputs (the next GEMMs' inputs) not kept */
  PP_RECOMPUTE_MOE_ACT = 8,     /* the experts' activation function: its output not kept */
  PP_RECOMPUTE_MOE = 16,        /* the whole MoE block: router, experts, their activations */
  PP_RECOMPUTE_MLP = 32,        /* the whole dense MLP */
  /* ABI 1.8: torchtitan's selective op checkpointing (selective_ac_option = "op", 2024-2025):
   * matmul and attention outputs kept but every second matmul's in a layer; the rest (norms,
   * rotary, the GLU's product, the residual sums, the unkept matmuls) recomputed. Attention
   * layers with a dense MLP only (the order of their matmuls decides which are kept). */
  PP_RECOMPUTE_TORCHTITAN_OP = 64
} pp_recompute_module;

/* ABI 1.6: the parts of a layer captured in CUDA graphs, whose ops the host replays instead of
 * issuing one by one (Megatron-LM's --cuda-graph-modules, with --cuda-graph-impl
 * transformer_engine or local; FULL_ITERATION is --cuda-graph-impl full_iteration, alone). */
typedef enum pp_cuda_graph_module {
  PP_CUDA_GRAPH_ATTN = 1,           /* the attention (or MLA) block: norm, projections, core, residual */
  PP_CUDA_GRAPH_MLP = 2,            /* the dense MLP block */
  PP_CUDA_GRAPH_MOE = 4,            /* the whole MoE block (drop-and-pad routing only) */
  PP_CUDA_GRAPH_MOE_ROUTER = 8,     /* the MoE block's norm and router */
  PP_CUDA_GRAPH_MOE_PREPROCESS = 16, /* the dispatcher's token counting (with MOE_ROUTER) */
  PP_CUDA_GRAPH_MAMBA = 32,         /* the Mamba mixer */
  PP_CUDA_GRAPH_FULL_ITERATION = 64 /* forward and backward of every micro-batch */
} pp_cuda_graph_module;

typedef enum pp_optimizer { PP_OPTIMIZER_ADAM = 1, PP_OPTIMIZER_SGD = 2 } pp_optimizer;

/* ABI 1.6: where the fp32 master weights live. SEPARATE (0, and every older host): 2-byte weights
 * plus an fp32 copy in the optimizer state (Megatron-LM, DeepSpeed, the ZeRO paper). IN_PLACE:
 * the weights themselves are fp32 and the optimizer updates them, a 2-byte copy existing only
 * while gathered or cast for compute (PyTorch FSDP's MixedPrecision, FSDP2, torchtitan). */
typedef enum pp_master_weights { PP_MASTER_WEIGHTS_SEPARATE = 0, PP_MASTER_WEIGHTS_IN_PLACE = 1 } pp_master_weights;

/* ABI 1.6: which fused attention kernel runs the attention core (with unfused attention, none
 * does: the host emits two batched GEMMs instead). TUNED (0, and every older host): the kernel
 * tuned for the GPU's generation, Transformer Engine's cuDNN fused attention or FlashAttention-3
 * on Hopper and later, FlashAttention-2 on Ampere (pp_hardware_profile.attention_efficiency).
 * FLASH2: FlashAttention-2 and kernels of its generation (PyTorch SDPA's flash backend), which do
 * not use Hopper's or Blackwell's asynchronous tensor cores
 * (pp_hardware_profile.attention_efficiency_flash2). TRITON (ABI 1.7): the Triton
 * implementation of FlashAttention of 2022 (flash_attn_triton.py, FlashAttention-1's algorithm
 * with an attention bias; llm-foundry's attn_impl "triton", which MPT's ALiBi needed), which the
 * FlashAttention-2 paper measures 1.3-2.5x slower than FlashAttention-2 (cost_model.hpp). A
 * plugin built against 1.6 does not know it: the host refuses to hand it a recipe that names it. */
typedef enum pp_attention_kernel {
  PP_ATTENTION_KERNEL_TUNED = 0,
  PP_ATTENTION_KERNEL_FLASH2 = 1,
  PP_ATTENTION_KERNEL_TRITON = 2
} pp_attention_kernel;

/* ABI 1.8: how a layer's memory-bound elementwise work (norms, rotary embedding, the GLU's
 * product) runs. FUSED (0, and every older host): one kernel each, as Megatron-LM and Transformer
 * Engine run them, or torch.compile fuses them. EAGER: PyTorch eager mode, each composite op as its
 * own kernels upcast to fp32 (torchtitan without torch.compile: its RMSNorm and complex rotary). */
typedef enum pp_elementwise_kernels {
  PP_ELEMENTWISE_FUSED = 0,
  PP_ELEMENTWISE_EAGER = 1
} pp_elementwise_kernels;

typedef struct pp_training {
  uint32_t struct_size;
  int64_t global_batch; /* sequences per optimizer step */
  int64_t micro_batch;  /* sequences per micro-batch on one data-parallel rank */
  pp_precision precision;
  pp_recompute recompute;
  pp_optimizer optimizer;
  uint32_t recompute_modules; /* ABI 1.6: pp_recompute_module bits (selective only; 0 = core_attn) */
  uint32_t cuda_graph_modules; /* ABI 1.6: pp_cuda_graph_module bits; 0 = every op issued eagerly */
  pp_master_weights master_weights; /* ABI 1.6, appended while 1.6 was open: it fills the struct's
                                     * tail padding, so sizeof is unchanged and struct_size cannot
                                     * tell an earlier 1.6 host's struct (zero-initialised there) */
  pp_attention_kernel attention_kernel; /* ABI 1.6: read only when struct_size covers it */
  /* ABI 1.6: with PP_RECOMPUTE_FULL, how many layers of each pipeline chunk re-run their forward
   * in backward: the chunk's first N, the others keeping every activation and recomputing nothing
   * (Megatron-LM's --recompute-method block --recompute-num-layers N). 0 = every layer. Read only
   * when struct_size covers it (paraplan::recompute_num_layers). */
  int64_t recompute_num_layers;
  /* ABI 1.6: the activations of each pipeline chunk's first N layers are copied to host memory in
   * the forward pass and back in the backward pass, beside the compute (Megatron-LM's
   * --cpu-offloading-num-layers N, Transformer Engine's cpu_offload.py); 0 = none. Megatron-LM
   * offloads without pipeline parallelism or recomputation only. Read only when struct_size
   * covers it (paraplan::cpu_offloading_num_layers). */
  int64_t cpu_offloading_num_layers;
  /* ABI 1.8: read only when struct_size covers it (paraplan::elementwise_kernels). */
  pp_elementwise_kernels elementwise_kernels;
  /* ABI 1.8: nonzero = attention's two products run in FP8 (Transformer Engine's fp8_dpa,
   * Megatron-Core's fp8_dot_product_attention), beside FP8, MXFP8 or NVFP4 GEMMs; 0 = in the
   * 16-bit type. Read only when struct_size covers it (paraplan::fp8_attention). */
  int32_t fp8_attention;
  /* ABI 1.8: nonzero = each MoE layer's routed experts run as one fused grouped MLP (Transformer
   * Engine's op fuser, Megatron-Core's use_transformer_engine_op_fuser with
   * moe_mlp_glu_interleave_size: fc1's grouped GEMM writes the GLU's output already quantised,
   * fc2's gradient GEMM applies the GLU's backward in its epilogue; MXFP8 or NVFP4 on Blackwell).
   * 0 = separate kernels. Read only when struct_size covers it (paraplan::moe_fused_mlp). */
  int32_t moe_fused_mlp;
} pp_training;

typedef struct pp_cluster {
  uint32_t struct_size;
  int64_t num_gpus;
  int64_t gpus_per_node;
} pp_cluster;

#endif /* PARAPLAN_MODEL_H */
