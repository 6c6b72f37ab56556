#!/usr/bin/env bash
# DeepSpeed launch for seed1-llama2-70b-4k-64xh100.toml (paraplan export): 8 node(s) x 8 GPUs.
# HOSTFILE lists the 8 nodes, one line each: "<hostname> slots=8" (DeepSpeed's hostfile format).
# The training script parses deepspeed.add_config_arguments(parser) and calls deepspeed.initialize.
# It builds the model as PipelineModule(layers=..., num_stages=2, partition_method="uniform") and steps with engine.train_batch().
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
TRAIN_SCRIPT="${TRAIN_SCRIPT:-train.py}"
HOSTFILE="${HOSTFILE:-$HERE/hostfile}"
deepspeed --hostfile "$HOSTFILE" --num_nodes 8 --num_gpus 8 \
  "$TRAIN_SCRIPT" --deepspeed --deepspeed_config "$HERE/ds_config.json" "$@"
