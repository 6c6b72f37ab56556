#!/usr/bin/env bash
# DeepSpeed launch for seed6-mixtral-8x7b-ep8-8xh100.toml (paraplan export): 1 node(s) x 8 GPUs.
# The training script parses deepspeed.add_config_arguments(parser) and calls deepspeed.initialize.
# Its MoE layers are deepspeed.moe.layer.MoE(..., ep_size=8).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
TRAIN_SCRIPT="${TRAIN_SCRIPT:-train.py}"
deepspeed --num_nodes 1 --num_gpus 8 \
  "$TRAIN_SCRIPT" --deepspeed --deepspeed_config "$HERE/ds_config.json" "$@"
