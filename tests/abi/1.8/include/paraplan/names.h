/* paraplan/names.h: the plan's vocabulary, the names plugins find each other's work by (ABI 1.5).
 *
 * Strategies find ops the host's workload builder created ("qkv") and ops other strategies
 * inserted ("tp_all_reduce"); executors read what an op's name says about it ("param_*" gathers,
 * "grad_*" reductions); exporters read mesh axes ("dp_replicate"). A name spelled twice can drift
 * apart silently; spelled once here, a renamed one breaks the build of every plugin that uses it.
 * plan.h says what each op and item means and in which scope and phase it appears; C++ plugins
 * also get helpers to find them (paraplan/sdk.hpp: PlanView::find_op, has_prefix).
 *
 * These are names, not layout: adding one is no ABI change, and a plugin may add ops and items
 * of its own names (prefixed with its plugin name, by convention).
 */
#ifndef PARAPLAN_NAMES_H
#define PARAPLAN_NAMES_H

/* Mesh axes of the bundled strategies. */
#define PP_AXIS_TP "tp"                     /* tensor parallelism (tp) */
#define PP_AXIS_CP "cp"                     /* context parallelism (sp, mode ring or ulysses) */
#define PP_AXIS_EP "ep"                     /* expert parallelism (ep), inside the data axis */
#define PP_AXIS_EDP "edp"                   /* ranks holding the same experts (ep), inside the data axis */
#define PP_AXIS_DP "dp"                     /* data parallelism, sharded or not (fsdp, hsdp's shard group) */
#define PP_AXIS_DP_REPLICATE "dp_replicate" /* hsdp's replicas of a shard group */
#define PP_AXIS_PP "pp"                     /* pipeline stages (pp) */

/* The owner of the ops and memory the host's workload builder creates. */
#define PP_OWNER_MODEL "model"

/* Ops of the workload (scope EMBEDDING, LAYER, HEAD; see plan.h). */
#define PP_OP_EMBEDDING "embedding"
#define PP_OP_ATTN_NORM "attn_norm"
#define PP_OP_QKV "qkv"
#define PP_OP_ATTENTION_CORE "attention_core"       /* fused attention */
#define PP_OP_ATTENTION_SCORES "attention_scores"   /* unfused: Q K^T */
#define PP_OP_ATTENTION_SOFTMAX "attention_softmax" /* unfused: the scores' trips through memory */
#define PP_OP_ATTENTION_CONTEXT "attention_context" /* unfused: P V */
#define PP_OP_ATTN_OUT "attn_out"
#define PP_OP_ATTN_RESIDUAL "attn_residual"
#define PP_OP_MLP_NORM "mlp_norm"
#define PP_OP_MLP_UP "mlp_up"
#define PP_OP_MLP_GATE "mlp_gate" /* SwiGLU only */
#define PP_OP_MLP_ACT "mlp_act"
#define PP_OP_MLP_DOWN "mlp_down"
#define PP_OP_MLP_RESIDUAL "mlp_residual"
#define PP_OP_ROUTER "router"
#define PP_OP_EXPERT_UP "expert_up"
#define PP_OP_EXPERT_GATE "expert_gate"
#define PP_OP_EXPERT_ACT "expert_act"
#define PP_OP_EXPERT_DOWN "expert_down"
/* ABI 1.6: an MoE layer as Megatron-Core runs it. The routed experts' GEMMs are grouped: one
 * GEMM per expert (count = experts held, m = the tokens one expert receives); the shared experts
 * run as a dense MLP on every token; the router's scoring, top-k and normalisation, and the
 * permutation of token copies into expert order and back, are memory-bound passes. */
#define PP_OP_ROUTER_TOPK "router_topk"
#define PP_OP_MOE_PERMUTE "moe_permute"
#define PP_OP_MOE_UNPERMUTE "moe_unpermute"
#define PP_OP_SHARED_EXPERT_UP "shared_expert_up"
#define PP_OP_SHARED_EXPERT_ACT "shared_expert_act"
#define PP_OP_SHARED_EXPERT_DOWN "shared_expert_down"
/* The host waits for the GPU here: a dropless MoE layer's token counts are copied to the host
 * before its dispatch can be sized (Megatron-Core token_dispatcher.py, cuda_sync_point). A
 * memory op of no bytes, in the forward (and recompute) pass only; ep removes it where routing
 * is drop-and-pad, whose sizes are known in advance. See host_issue.hpp. */
#define PP_OP_HOST_SYNC "host_sync"
/* ABI 1.6: with pp_training.cpu_offloading_num_layers, the copies of an offloaded layer's
 * activations: to host memory in the forward pass, back in the backward pass (HOST_TRANSFER ops
 * of scope LAYER overlapped with compute, sized from the layer's activation items once the
 * strategies have sharded them; the host adds them after the last strategy). */
#define PP_OP_ACTIVATION_OFFLOAD "activation_offload"
#define PP_OP_ACTIVATION_RELOAD "activation_reload"
/* ABI 1.6: the passes a model's own features add (pp_layer_kind.linear_bias, activation_clamp,
 * pp_model.position_embedding), each as Megatron-Core runs it: the rotary embedding of Q and K,
 * fused or eager; a clamped GLU's eager clamps and concatenation ahead of its activation (dense
 * MLP, routed experts); the routed experts' fc2 bias, added per expert with its probability. */
#define PP_OP_ROTARY "rotary"
#define PP_OP_MLP_CLAMP "mlp_clamp"
#define PP_OP_EXPERT_CLAMP "expert_clamp"
#define PP_OP_EXPERT_BIAS "expert_bias"
/* ABI 1.6: multi-head latent attention (the down projections are replicated over tp, the up
 * projections column-parallel like qkv), a Mamba-2 mixer (in_proj column-, out_proj row-parallel;
 * attn_norm and attn_residual are any token mixer's norm and residual add), and a
 * multi-token-prediction module's own ops (in its layer kind, beside the layer's). */
#define PP_OP_MLA_Q_DOWN "mla_q_down"
#define PP_OP_MLA_Q_NORM "mla_q_norm"
#define PP_OP_MLA_Q_UP "mla_q_up"
#define PP_OP_MLA_KV_DOWN "mla_kv_down"
#define PP_OP_MLA_KV_NORM "mla_kv_norm"
#define PP_OP_MLA_KV_UP "mla_kv_up"
#define PP_OP_MAMBA_IN_PROJ "mamba_in_proj"
#define PP_OP_MAMBA_CONV "mamba_conv"
#define PP_OP_MAMBA_SCAN "mamba_scan" /* the SSD's chunked matmuls, as one GEMM of the same work */
#define PP_OP_MAMBA_NORM "mamba_norm"
#define PP_OP_MAMBA_OUT_PROJ "mamba_out_proj"
#define PP_OP_MTP_EMBEDDING "mtp_embedding"   /* the next tokens' embeddings, looked up again */
#define PP_OP_MTP_NORMS "mtp_norms"           /* the hidden state's and the embedding's norms */
#define PP_OP_MTP_PROJECTION "mtp_projection" /* [h; e] (2h) -> h */
#define PP_OP_MTP_LOGITS "mtp_logits"         /* through the shared output head */
#define PP_OP_MTP_LOSS "mtp_loss"
#define PP_OP_FP8_CAST_SEQ "fp8_cast_seq"
#define PP_OP_FP8_CAST_TENSOR "fp8_cast_tensor"
#define PP_OP_FP8_CAST_EXPERT "fp8_cast_expert"
#define PP_OP_FINAL_NORM "final_norm"
#define PP_OP_LOGITS "logits"
#define PP_OP_LOSS "loss"
#define PP_OP_OPTIMIZER_STEP "optimizer_step"                               /* scopes EMBEDDING, LAYER, HEAD */
#define PP_OP_OPTIMIZER_STEP_EXPERTS "optimizer_step.experts"               /* MoE layers' experts */
#define PP_OP_OPTIMIZER_STEP_SHARED_EXPERTS "optimizer_step.shared_experts" /* ep: the shared experts apart */

/* Ops the bundled strategies insert. */
#define PP_OP_TP_ALL_REDUCE "tp_all_reduce"         /* tp: Megatron's f and g */
#define PP_OP_TP_REDUCE_SCATTER "tp_reduce_scatter" /* sp (megatron): an all-reduce split in two */
#define PP_OP_TP_ALL_GATHER "tp_all_gather"
#define PP_OP_CP_RING_KV "cp_ring_kv"                   /* sp (ring): keys and values around the ring */
#define PP_OP_CP_ALL_TO_ALL_QKV "cp_all_to_all_qkv"     /* sp (ulysses): heads for sequence, in */
#define PP_OP_CP_ALL_TO_ALL_OUT "cp_all_to_all_out"     /* sp (ulysses): and back */
#define PP_OP_EP_DISPATCH "ep_dispatch"                 /* ep: tokens to their experts */
#define PP_OP_EP_COMBINE "ep_combine"                   /* ep: expert outputs back */
#define PP_OP_ROUTER_AUX_LOSS "router_aux_loss"         /* ep: the load-balancing loss */
#define PP_OP_PARAM_ALL_GATHER "param_all_gather"       /* ZeRO-3 / updated ZeRO-1,2 parameters */
#define PP_OP_GRAD_REDUCE_SCATTER "grad_reduce_scatter" /* ZeRO-1,2,3 */
#define PP_OP_GRAD_ALL_REDUCE "grad_all_reduce"         /* plain data parallelism */
#define PP_OP_GRAD_ALL_REDUCE_CP "grad_all_reduce_cp"   /* gradients over context-parallel ranks */
#define PP_OP_GRAD_ALL_REDUCE_REPLICATE "grad_all_reduce_replicate" /* hsdp: across replicas */
#define PP_OP_SEND_ACTIVATIONS "send_activations"     /* pp: a chunk's output to the next virtual stage */
#define PP_OP_SEND_GRADIENTS "send_gradients"         /* pp: its input gradient to the previous one */
#define PP_OP_PP_GATHER_RECEIVED "pp_gather_received" /* pp: the received slices gathered over tp */

/* Name prefixes that say what a collective depends on (plan.h, execution order). */
#define PP_OP_PREFIX_PARAM "param_" /* gathers parameters before the scope's compute */
#define PP_OP_PREFIX_GRAD "grad_"   /* reduces the scope's weight gradients after it */

/* Memory items: model state per scope ("weights.layer"), and activations by how they split. */
#define PP_MEMORY_PREFIX_WEIGHTS "weights."
#define PP_MEMORY_PREFIX_GRADS "grads."
#define PP_MEMORY_PREFIX_OPTIMIZER "optimizer."
#define PP_MEMORY_SUFFIX_EMBEDDING "embedding"
#define PP_MEMORY_SUFFIX_LAYER "layer"
#define PP_MEMORY_SUFFIX_HEAD "head"
#define PP_MEMORY_SUFFIX_EXPERTS "experts"               /* MoE layers' routed experts */
#define PP_MEMORY_SUFFIX_SHARED_EXPERTS "shared_experts" /* ep: the shared experts apart */
#define PP_MEMORY_WEIGHTS_EXPERTS "weights.experts"
#define PP_MEMORY_WEIGHTS_SHARED_EXPERTS "weights.shared_experts"
#define PP_MEMORY_PREFIX_ACT_SEQ "act.seq."       /* replicated over tp unless sequence parallelism shards it */
#define PP_MEMORY_PREFIX_ACT_TENSOR "act.tensor." /* split by tp */
#define PP_MEMORY_PREFIX_ACT_EXPERT "act.expert." /* tokens routed to experts */
#define PP_MEMORY_ACT_LAYER_INPUT "act.seq.layer_input"
/* ABI 1.8: what torchtitan's op policy (PP_RECOMPUTE_TORCHTITAN_OP) keeps besides the layer input:
 * the kept matmul and attention outputs of tensor-parallel width, and of the hidden width. */
#define PP_MEMORY_ACT_KEPT_OUTPUTS "act.tensor.kept_outputs"
#define PP_MEMORY_ACT_KEPT_HIDDEN_OUTPUTS "act.seq.kept_hidden_outputs"
#define PP_MEMORY_ACT_ATTN_NORM_INPUT "act.seq.attn_norm_input"
#define PP_MEMORY_ACT_QKV_INPUT "act.seq.qkv_input"
#define PP_MEMORY_ACT_Q "act.tensor.q"
#define PP_MEMORY_ACT_K "act.tensor.k"
#define PP_MEMORY_ACT_V "act.tensor.v"
#define PP_MEMORY_ACT_ATTENTION_SCORES "act.tensor.attention_scores"
#define PP_MEMORY_ACT_ATTN_OUT_INPUT "act.tensor.attn_out_input"
#define PP_MEMORY_ACT_ATTN_DROPOUT_MASK "act.seq.attn_dropout_mask"
#define PP_MEMORY_ACT_MLP_NORM_INPUT "act.seq.mlp_norm_input"
#define PP_MEMORY_ACT_MLP_INPUT "act.seq.mlp_input"
#define PP_MEMORY_ACT_ROUTER_PROBS "act.seq.router_probs"
#define PP_MEMORY_ACT_EXPERT_INPUT "act.expert.input"
#define PP_MEMORY_ACT_EXPERT_HIDDEN "act.expert.hidden"
#define PP_MEMORY_ACT_MLP_HIDDEN "act.tensor.mlp_hidden"
#define PP_MEMORY_ACT_SHARED_EXPERT_HIDDEN "act.tensor.shared_expert_hidden" /* ABI 1.6 */
#define PP_MEMORY_ACT_MLP_DROPOUT_MASK "act.seq.mlp_dropout_mask"
/* ABI 1.6: MLA's latents, a Mamba-2 mixer's tensors, a multi-token-prediction module's. */
#define PP_MEMORY_ACT_MLA_LATENT "act.seq.mla_latent"             /* q and kv latents (replicated projections) */
#define PP_MEMORY_ACT_MAMBA_IN_PROJ_INPUT "act.seq.mamba_in_proj_input"
#define PP_MEMORY_ACT_MAMBA_PROJECTED "act.tensor.mamba_projected" /* z, x, B, C, dt */
#define PP_MEMORY_ACT_MAMBA_CONV_OUT "act.tensor.mamba_conv_out"
#define PP_MEMORY_ACT_MAMBA_STATES "act.tensor.mamba_states"       /* the SSD's chunk states (fp32) */
#define PP_MEMORY_ACT_MAMBA_Y "act.tensor.mamba_y"                 /* the scan's output, the norm's input */
#define PP_MEMORY_ACT_MAMBA_OUT_PROJ_INPUT "act.tensor.mamba_out_proj_input"
#define PP_MEMORY_ACT_MTP_INPUTS "act.seq.mtp_inputs"              /* embeddings, norms, the projection's input */
#define PP_MEMORY_ACT_MTP_LOGITS "act.seq.mtp_logits"
#define PP_MEMORY_ACT_EMBEDDING_DROPOUT_MASK "act.seq.embedding_dropout_mask" /* first stage */
#define PP_MEMORY_ACT_LOGITS "act.head.logits"                                 /* last stage */
/* ABI 1.6: ZeRO-3's unsharded copies while a layer runs (kind OTHER): the gathered weights of the
 * running and the prefetched layer and the running layer's gradients before their reduce-scatter
 * (STEP scope), and the embedding's and the head's, held from their forward through their
 * backward (EMBEDDING and HEAD scopes). */
#define PP_MEMORY_ZERO3_GATHERED "zero3.gathered"

/* The bundled strategy plugins, as exporters and the search name them. */
#define PP_STRATEGY_TP "tp"
#define PP_STRATEGY_SP "sp"
#define PP_STRATEGY_PP "pp"
#define PP_STRATEGY_EP "ep"
#define PP_STRATEGY_FSDP "fsdp"
#define PP_STRATEGY_HSDP "hsdp"

/* Recipe keys of the data-parallel strategies (fsdp, hsdp) that exporters translate into their
 * engine's settings. */
#define PP_DP_PARAM_STAGE "stage"                       /* ZeRO stage */
#define PP_DP_PARAM_OVERLAP "overlap"                   /* reductions behind backward, gathers prefetched */
#define PP_DP_PARAM_BUCKET_PARAMETERS "bucket_parameters" /* parameters per gradient bucket; 0: one per layer */
#define PP_DP_PARAM_PREFETCH "prefetch"                 /* stage 3: layers gathered ahead */

/* ABI 1.8: recipe keys of tensor parallelism (tp) that exporters translate: whether its
 * collectives overlap the GEMMs, and how. "userbuffers": Transformer Engine's, as Megatron-LM's
 * --tp-comm-overlap runs it (every pass); "micro_pipeline": PyTorch's async TP (torch.compile's
 * micro-pipelined all-gather + matmul and matmul + reduce-scatter, torchtitan's
 * enable_async_tensor_parallel), which hides the forward passes' collectives only. */
#define PP_TP_PARAM_OVERLAP "overlap"
#define PP_TP_PARAM_OVERLAP_METHOD "overlap_method"
#define PP_TP_OVERLAP_USERBUFFERS "userbuffers"
#define PP_TP_OVERLAP_MICRO_PIPELINE "micro_pipeline"

#endif /* PARAPLAN_NAMES_H */
