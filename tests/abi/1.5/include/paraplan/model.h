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
  PP_FFN_GELU = 1,  /* two matrices: up (h -> f) and down (f -> h) */
  PP_FFN_SWIGLU = 2 /* three matrices: gate and up (h -> f), down (f -> h) */
} pp_ffn_type;

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
} pp_model;

typedef enum pp_precision { PP_PRECISION_BF16 = 1, PP_PRECISION_FP16 = 2, PP_PRECISION_FP8 = 3 } pp_precision;

typedef enum pp_recompute {
  PP_RECOMPUTE_NONE = 0,
  PP_RECOMPUTE_SELECTIVE = 1, /* recompute the attention core only (Korthikanti et al. 2022) */
  PP_RECOMPUTE_FULL = 2       /* keep only each layer's input; recompute the whole forward */
} pp_recompute;

typedef enum pp_optimizer { PP_OPTIMIZER_ADAM = 1, PP_OPTIMIZER_SGD = 2 } pp_optimizer;

typedef struct pp_training {
  uint32_t struct_size;
  int64_t global_batch; /* sequences per optimizer step */
  int64_t micro_batch;  /* sequences per micro-batch on one data-parallel rank */
  pp_precision precision;
  pp_recompute recompute;
  pp_optimizer optimizer;
} pp_training;

typedef struct pp_cluster {
  uint32_t struct_size;
  int64_t num_gpus;
  int64_t gpus_per_node;
} pp_cluster;

#endif /* PARAPLAN_MODEL_H */
