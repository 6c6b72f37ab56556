#!/usr/bin/env bash
# Megatron-LM launch script written by `paraplan export --to megatron`.
#   recipe: recipes/export/llama3-70b-32k-cp4-256xh100.toml (model llama3-70b)
#   plan:   256 GPUs = tp 8 x cp 4 x pp 4 (interleaved-1f1b, 2 virtual stages, 32 micro-batches) x dp 2
# Flag names follow Megatron-LM's megatron/training/arguments.py. Run it on every node with
# NODE_RANK=0..NNODES-1 and MASTER_ADDR set to node 0's address.
set -euo pipefail

MEGATRON_PATH="${MEGATRON_PATH:-/workspace/Megatron-LM}"
NNODES="${NNODES:-32}"
GPUS_PER_NODE="${GPUS_PER_NODE:-8}"
NODE_RANK="${NODE_RANK:-0}"
MASTER_ADDR="${MASTER_ADDR:-localhost}"
MASTER_PORT="${MASTER_PORT:-6000}"

# Tensor and context parallelism: Megatron-LM requires ordered kernel launches before Blackwell.
export CUDA_DEVICE_MAX_CONNECTIONS=1

# model shape
MODEL_ARGS=(
  --num-layers 80
  --hidden-size 8192
  --ffn-hidden-size 28672
  --num-attention-heads 64
  --group-query-attention
  --num-query-groups 8
  --seq-length 32768
  --max-position-embeddings 32768
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
  --global-batch-size 64
)

# precision
PRECISION_ARGS=(
  --bf16
)

# parallelism
PARALLEL_ARGS=(
  --tensor-model-parallel-size 8
  --sequence-parallel
  --context-parallel-size 4
  --cp-comm-type p2p
  --pipeline-model-parallel-size 4
  --num-layers-per-virtual-pipeline-stage 10
  --use-distributed-optimizer
  --overlap-grad-reduce
  --overlap-param-gather
  --ddp-bucket-size 106956800
)

# activation recomputation
RECOMPUTE_ARGS=(
  --recompute-granularity selective
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
  --vocab-size 128255
  --padded-vocab-size 128256
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
  "${TRAINING_ARGS[@]}" \
  "${DATA_ARGS[@]}"
