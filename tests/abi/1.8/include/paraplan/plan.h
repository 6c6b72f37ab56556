/* paraplan/plan.h: the training plan, the contract between strategies and executors.
 *
 * A plan describes ONE representative rank per pipeline stage: the operations it runs for one
 * micro-batch of one layer (scope LAYER), of the embedding and of the output head, and once per
 * optimizer step (scope STEP); the memory it holds; the device mesh; and the pipeline layout and
 * schedule. It is concrete enough to execute: an analytic executor sums it, a simulator or a real
 * executor walks the same op list in schedule order.
 *
 * The host builds the unsharded workload from the model (every op as if on a single device, with
 * the micro-batch as batch), then each strategy transforms it in canonical order through
 * pp_plan_api_v1: divides op dimensions and memory for its mesh axis, and inserts communication.
 *
 * Canonical op names (the host's workload builder creates these; strategies find ops by name):
 *   scope EMBEDDING: "embedding"
 *   scope LAYER:     "attn_norm", "qkv", "attention_core", "attn_out", "attn_residual", "mlp_norm",
 *                    "mlp_up", "mlp_gate" (SwiGLU only), "mlp_act", "mlp_down", "mlp_residual", and
 *                    for MoE layers "router", "router_topk", "moe_permute", "expert_up" (the
 *                    grouped fc1: count = experts held, m = copies per expert; gate and up halves
 *                    in one, so "expert_gate" is no longer emitted), "expert_act", "expert_down",
 *                    "moe_unpermute" and, with shared experts, "shared_expert_up",
 *                    "shared_expert_act", "shared_expert_down"; without fused attention, "attention_core" is two batched GEMMs,
 *                    "attention_scores" and "attention_context" (heads stacked in m), plus
 *                    "attention_softmax", the scores' trips through memory; with FP8 GEMMs the
 *                    casts "fp8_cast_seq", "fp8_cast_tensor" and "fp8_cast_expert"
 *                    and, added by the host after the last strategy when the recipe offloads
 *                    activations, "activation_offload" (FORWARD) and "activation_reload"
 *                    (BACKWARD), HOST_TRANSFER ops (names.h)
 *   scope HEAD:      "final_norm", "logits", "loss"
 *   and "optimizer_step" (phase STEP, frequency PER_STEP) in scopes EMBEDDING, LAYER and HEAD,
 *   each updating the parameters of its scope
 * Each compute op appears once per phase: FORWARD, BACKWARD (flops of the input- and
 * weight-gradient GEMMs together) and, where the recipe recomputes, RECOMPUTE. GEMM shapes: m = tokens of the
 * micro-batch, k = input features, n = output features. A strategy transforms an op the same
 * way in every phase, so it finds ops by name, not by phase.
 *
 * Execution order (what an executor that walks the plan, like `simulate`, relies on): within one
 * scope and phase, ops run in the order the list gives (backward entries in reverse, as a
 * backward pass runs a layer backwards); insert communication where it runs. Two name prefixes
 * say what a collective depends on: "param_*" gathers parameters before the scope's compute
 * (an executor may prefetch it while the previous scope computes), "grad_*" reduces the scope's
 * weight gradients after its compute (nothing but the optimizer waits for it). Ops of scope STEP
 * with frequency PER_MICRO_BATCH in the FORWARD or BACKWARD phase belong to the pipeline's chunk
 * boundaries: SEND_RECV ones carry a chunk's output to the next virtual stage (forward) or its
 * input gradient to the previous one (backward), once per crossing (`repeat` counts a rank's
 * crossings per micro-batch); the others run on the receiver once what was sent has arrived.
 *
 * Canonical memory items: model state "weights.<scope>", "grads.<scope>", "optimizer.<scope>"
 * (scope = embedding, layer, head); activations per layer and micro-batch (Korthikanti et al.
 * 2022) named "act.seq.*" (replicated across tensor-parallel ranks unless sequence parallelism
 * shards them), "act.tensor.*" (split by tensor parallelism) and, for MoE layers,
 * "act.expert.*" (tokens routed to experts); "act.seq.embedding_dropout_mask" on the first
 * stage and "act.head.logits" on the last. docs/architecture.md lists them all.
 */
#ifndef PARAPLAN_PLAN_H
#define PARAPLAN_PLAN_H

#include "paraplan/abi.h"
#include "paraplan/model.h"

#define PP_NAME_CAPACITY 48
#define PP_OWNER_CAPACITY 24
#define PP_AXIS_NAME_CAPACITY 16

typedef enum pp_op_kind {
  PP_OP_GEMM = 1,       /* dense matrix multiply: flops = 2*m*n*k*count */
  PP_OP_ATTENTION = 2,  /* fused attention core (softmax(QK^T)V), flash-style */
  PP_OP_MEMORY = 3,     /* memory-bound kernel (norms, activations, optimizer): time ~ bytes */
  PP_OP_COLLECTIVE = 4, /* collective over one mesh axis */
  PP_OP_SEND_RECV = 5,  /* point-to-point transfer to the neighbouring rank along an axis */
  PP_OP_HOST_TRANSFER = 6 /* copy between GPU and host memory (offload): `bytes` over the host link */
} pp_op_kind;

typedef enum pp_phase {
  PP_PHASE_FORWARD = 1,
  PP_PHASE_BACKWARD = 2,
  PP_PHASE_STEP = 3,     /* after the last micro-batch: gradient sync tail, optimizer update */
  PP_PHASE_RECOMPUTE = 4, /* a forward op re-run during backward (activation recomputation) */
  /* Schedule steps only: the weight-gradient half of a backward pass, scheduled apart from the
   * input-gradient half (PP_PHASE_BACKWARD) by zero-bubble schedules. Ops keep both halves in
   * their BACKWARD entry. */
  PP_PHASE_WEIGHT_GRADIENT = 5
} pp_phase;

typedef enum pp_scope {
  PP_SCOPE_EMBEDDING = 1, /* first pipeline stage only */
  PP_SCOPE_LAYER = 2,     /* once per transformer layer held by the stage */
  PP_SCOPE_HEAD = 3,      /* last pipeline stage only */
  PP_SCOPE_STEP = 4       /* once per optimizer step on every rank */
} pp_scope;

typedef enum pp_frequency {
  PP_PER_MICRO_BATCH = 1, /* repeated for every micro-batch */
  PP_PER_STEP = 2         /* once per optimizer step (e.g. a bucketed gradient reduction) */
} pp_frequency;

typedef enum pp_collective {
  PP_COLLECTIVE_NONE = 0,
  PP_COLLECTIVE_ALL_REDUCE = 1,
  PP_COLLECTIVE_ALL_GATHER = 2,
  PP_COLLECTIVE_REDUCE_SCATTER = 3,
  PP_COLLECTIVE_ALL_TO_ALL = 4,
  PP_COLLECTIVE_BROADCAST = 5
} pp_collective;

typedef enum pp_overlap {
  PP_OVERLAP_NONE = 0,    /* on the critical path */
  PP_OVERLAP_COMPUTE = 1  /* may run concurrently with compute of the same phase */
} pp_overlap;

typedef struct pp_op {
  uint32_t struct_size;
  pp_op_kind kind;
  pp_phase phase;
  pp_scope scope;
  pp_frequency frequency;
  char name[PP_NAME_CAPACITY];   /* canonical name (see above) or the inserting strategy's own */
  char owner[PP_OWNER_CAPACITY]; /* "model" for workload ops, else the strategy plugin's name */
  pp_dtype dtype;
  /* GEMM shape (m x k) * (k x n), repeated `count` times; for ATTENTION m = query tokens,
   * n = key tokens, k = head_dim, count = heads. Other kinds leave them 0 and set flops, but
   * for one (1.6): an ALL_TO_ALL whose routing is uneven has count > 1, the busiest member's
   * share over the mean: each member sends bytes / count, the busiest receives `bytes` (its
   * buffer, what a step waits for); 0 or 1 is an even exchange. And (1.6) an ALL_TO_ALL with
   * k > 0 is a routed exchange (DeepEP, HybridEP): m tokens of n bytes, each sent once to every
   * member holding one of its k experts (bytes = m x n x those members on average) and once
   * across the outer tier to every domain holding one; the routing is the op's layer kind's
   * (paraplan/token_routing.hpp). Executors that ignore it price `bytes` as a plain all-to-all. */
  double m, n, k, count;
  double flops;       /* floating-point operations of this op on this rank */
  double bytes;       /* MEMORY: bytes read+written; COLLECTIVE/SEND_RECV: buffer size n */
  pp_collective collective;
  int32_t axis;       /* COLLECTIVE/SEND_RECV: index into the plan's mesh axes */
  pp_overlap overlap;
  uint32_t repeat;    /* identical back-to-back instances (e.g. 2 all-reduces); >= 1 */
} pp_op;

typedef enum pp_memory_kind {
  PP_MEMORY_PARAMETERS = 1,
  PP_MEMORY_GRADIENTS = 2,
  PP_MEMORY_OPTIMIZER = 3,
  PP_MEMORY_ACTIVATIONS = 4, /* per micro-batch in flight; the schedule multiplies */
  PP_MEMORY_OTHER = 5        /* buffers, workspace, fragmentation */
} pp_memory_kind;

typedef struct pp_memory_item {
  uint32_t struct_size;
  pp_memory_kind kind;
  pp_scope scope; /* LAYER items are per layer held; EMBEDDING/HEAD on first/last stage */
  char name[PP_NAME_CAPACITY];
  char owner[PP_OWNER_CAPACITY];
  double bytes;
} pp_memory_item;

/* One named axis of the device mesh. The host lays top-level axes innermost-first in the
 * recipe's mesh order and fills `stride` (ranks between neighbours on this axis); an axis with a
 * `parent` subdivides that axis (e.g. expert parallelism inside data parallelism), or (1.6) a
 * region of neighbouring top-level axes named innermost first and joined by '*' ("tp*cp*dp":
 * the ranks they span together, as Megatron-LM carves expert parallelism out of tp x cp x dp). */
typedef struct pp_mesh_axis {
  uint32_t struct_size;
  char name[PP_AXIS_NAME_CAPACITY];
  char parent[PP_AXIS_NAME_CAPACITY]; /* empty for a top-level axis */
  char owner[PP_OWNER_CAPACITY];
  int64_t degree;
  int64_t stride; /* filled by the host */
} pp_mesh_axis;

typedef enum pp_schedule_kind {
  PP_SCHEDULE_NONE = 0, /* no pipeline: one stage */
  PP_SCHEDULE_GPIPE = 1,
  PP_SCHEDULE_1F1B = 2,
  PP_SCHEDULE_INTERLEAVED_1F1B = 3,
  PP_SCHEDULE_ZERO_BUBBLE = 4,
  /* (1.6) DeepSeek's DualPipe-V ("cut-in-half" DualPipe): two chunks per rank placed in a V,
   * chunk 0 of stage s is virtual stage s and chunk 1 is virtual stage 2p - 1 - s, so stage 0
   * holds both the embedding and the output head. */
  PP_SCHEDULE_DUALPIPE_V = 5
} pp_schedule_kind;

typedef struct pp_pipeline {
  uint32_t struct_size;
  pp_schedule_kind schedule;
  int64_t stages;
  int64_t virtual_stages;   /* model chunks per rank (interleaved; 2 under DualPipe-V); 1 otherwise */
  int64_t micro_batches;    /* per optimizer step, per data-parallel rank */
  double bubble_fraction;   /* idle time / ideal compute time, as the schedule defines it */
  double in_flight_micro_batches; /* activation sets held at peak on the most loaded stage */
} pp_pipeline;

typedef struct pp_stage {
  uint32_t struct_size;
  int64_t layers;        /* layers on this stage (all its chunks and kinds together, MTP modules included) */
  int32_t has_embedding;
  int32_t has_head;
  /* Activation sets of this whole stage held at its peak (1F1B: min(p - stage, m)); 0 = use
   * the pipeline's in_flight_micro_batches. */
  double in_flight_micro_batches;
} pp_stage;

/* One entry of a stage's exact execution order: the pipeline strategy lists, for every stage, the
 * (micro-batch, chunk, phase) it runs, in order. A schedule that splits backward passes uses
 * PP_PHASE_BACKWARD for the input gradient and PP_PHASE_WEIGHT_GRADIENT for the weight gradient. */
typedef struct pp_schedule_step {
  uint32_t struct_size;
  int32_t stage;
  int32_t micro_batch;
  int32_t chunk; /* model chunk on this rank: chunk c of stage s is virtual stage c·p + s (Megatron-LM),
                  * under DualPipe-V s or 2p - 1 - s (paraplan::virtual_stage_of) */
  pp_phase phase;
} pp_schedule_step;

/* A read-only snapshot of the plan. Pointers stay valid until the next mutation through
 * pp_plan_api_v1 (or until the call it was passed to returns). */
typedef struct pp_plan_view_v1 {
  uint32_t struct_size;
  const pp_model* model;
  const pp_training* training;
  const pp_cluster* cluster;
  const pp_mesh_axis* axes;
  uint32_t axis_count;
  const pp_op* ops;
  uint32_t op_count;
  const pp_memory_item* memory;
  uint32_t memory_count;
  const pp_pipeline* pipeline;
  const pp_stage* stages;
  uint32_t stage_count;
  const pp_schedule_step* steps;
  uint64_t step_count;
  int64_t data_parallel_size; /* ranks that process different samples (see strategy.h) */
  /* ABI 1.6: which kind of layer (model.h) each LAYER-scope op and memory item belongs to, one
   * entry per op and per item (PP_EVERY_LAYER_KIND: every layer has it, whatever its kind; the
   * entries of other scopes are PP_EVERY_LAYER_KIND too), and how many layers of each kind every
   * chunk of every stage holds: layer_counts[(chunk * stages + stage) * layer_kind_count + kind],
   * chunk c of stage s being virtual stage c·p + s (under DualPipe-V, s for chunk 0 and 2p - 1 - s
   * for chunk 1: paraplan::virtual_stage_of). Read them only when struct_size covers them
   * (paraplan::PlanView does). */
  const uint32_t* op_layer_kinds;
  const uint32_t* memory_layer_kinds;
  uint32_t layer_kind_count;
  const int64_t* layer_counts;
  uint64_t layer_count_entries; /* stages * virtual_stages * layer_kind_count */
} pp_plan_view_v1;

/* The host's plan-editing services, handed to a strategy's apply(). Indices refer to the arrays
 * of the latest view. Every function returns PP_OK or an error status (bad index, full name). */
typedef struct pp_plan_api_v1 {
  uint32_t struct_size;
  void* plan;
  void (*get_view)(void* plan, pp_plan_view_v1* out);
  /* Adds a mesh axis; returns its index, or -1 if the name exists or the degree is < 1.
   * parent: NULL for a top-level axis, else the name of the axis this one subdivides. */
  int32_t (*add_axis)(void* plan, const char* name, int64_t degree, const char* parent,
                      const char* owner);
  pp_status (*set_op)(void* plan, uint32_t index, const pp_op* op);
  pp_status (*insert_op)(void* plan, uint32_t index, const pp_op* op); /* index == count appends */
  pp_status (*remove_op)(void* plan, uint32_t index);
  pp_status (*set_memory)(void* plan, uint32_t index, const pp_memory_item* item);
  pp_status (*add_memory)(void* plan, const pp_memory_item* item);
  pp_status (*set_pipeline)(void* plan, const pp_pipeline* pipeline, const pp_stage* stages,
                            uint32_t stage_count);
  pp_status (*set_schedule)(void* plan, const pp_schedule_step* steps, uint64_t count);
  /* ABI 1.6 (read struct_size before calling). insert_op and add_memory of a 1.5 plugin give a
   * LAYER op the kind of the LAYER op before it (else after it) and a LAYER item every kind;
   * these name the kind (PP_EVERY_LAYER_KIND allowed). */
  pp_status (*insert_layer_op)(void* plan, uint32_t index, const pp_op* op, uint32_t layer_kind);
  pp_status (*add_layer_memory)(void* plan, const pp_memory_item* item, uint32_t layer_kind);
  /* Layers of each kind on every chunk of every stage, laid out as pp_plan_view_v1.layer_counts, after
   * set_pipeline; each stage's kinds must add up to its pp_stage.layers and each kind's to the
   * model's count. Without it (a 1.5 pipeline plugin), the host fills the stages in the model's
   * layer order, each stage's layers split over its chunks as evenly as they go. */
  pp_status (*set_layer_counts)(void* plan, const int64_t* counts, uint64_t count);
} pp_plan_api_v1;

#endif /* PARAPLAN_PLAN_H */
