#!/usr/bin/env bash
# Megatron-LM launch script written by `paraplan export --to megatron`.
#   recipe: recipes/scenarios/seed6-mixtral-8x7b-ep8-8xh100.toml (model mixtral-8x7b)
#   plan:   8 GPUs = dp 8 (ep 8 x edp 1)
# Flag names follow Megatron-LM's megatron/training/arguments.py. Run it on every node with
# NODE_RANK=0..NNODES-1 and MASTER_ADDR set to node 0's address.
# Megatron-LM cannot express, so this run differs from the plan in:
#   - fsdp stage 3: Megatron-LM's --use-torch-fsdp2 runs neither with pipeline nor with expert parallelism (validate_args); exported as the distributed optimizer (stage 1)
set -euo pipefail

MEGATRON_PATH="${MEGATRON_PATH:-/workspace/Megatron-LM}"
NNODES="${NNODES:-1}"
GPUS_PER_NODE="${GPUS_PER_NODE:-8}"
NODE_RANK="${NODE_RANK:-0}"
MASTER_ADDR="${MASTER_ADDR:-localhost}"
MASTER_PORT="${MASTER_PORT:-6000}"

# model shape
MODEL_ARGS=(
  --num-layers 32
  --hidden-size 4096
  --ffn-hidden-size 14336
  --num-attention-heads 32
  --group-query-attention
  --num-query-groups 8
  --seq-length 4096
  --max-position-embeddings 4096
  --swiglu
  --normalization RMSNorm
  --position-embedding-type rope
  --disable-bias-linear
  --untie-embeddings-and-output-weights
  --hidden-dropout 0.0
  --attention-dropout 0.0
  --attention-backend auto
)

# batch
BATCH_ARGS=(
  --micro-batch-size 1
  --global-batch-size 32
)

# precision
PRECISION_ARGS=(
  --bf16
)

# parallelism
PARALLEL_ARGS=(
  --tensor-model-parallel-size 1
  --pipeline-model-parallel-size 1
  --expert-model-parallel-size 8
  --expert-tensor-parallel-size 1
  --use-distributed-optimizer
  --overlap-grad-reduce
  --overlap-param-gather
  --ddp-bucket-size 41984000
)

# activation recomputation
RECOMPUTE_ARGS=(
  --recompute-granularity full
  --recompute-method uniform
  --recompute-num-layers 1
)

# mixture of experts
MOE_ARGS=(
  --num-experts 8
  --moe-router-topk 2
  --moe-ffn-hidden-size 14336
  --moe-token-dispatcher-type alltoall
  --moe-expert-capacity-factor 1.0
  --moe-pad-expert-input-to-capacity
)

# training run
TRAINING_ARGS=(
  --train-iters 100
  --optimizer adam
  --lr 3.0e-4
  --log-interval 1
  --eval-iters 0
)

# data: mock samples and a null tokenizer of the model's vocabulary
DATA_ARGS=(
  --mock-data
  --tokenizer-type NullTokenizer
  --vocab-size 31999
  --padded-vocab-size 32000
)

torchrun \
  --nnodes "$NNODES" \
  --nproc-per-node "$GPUS_PER_NODE" \
  --node-rank "$NODE_RANK" \
  --master-addr "$MASTER_ADDR" \
  --master-port "$MASTER_PORT" \
  "$MEGATRON_PATH/pretrain_gpt.py" \
  "${MODEL_ARGS[@]}" \
  "${BATCH_ARGS[@]}" \
  "${PRECISION_ARGS[@]}" \
  "${PARALLEL_ARGS[@]}" \
  "${RECOMPUTE_ARGS[@]}" \
  "${MOE_ARGS[@]}" \
  "${TRAINING_ARGS[@]}" \
  "${DATA_ARGS[@]}"
