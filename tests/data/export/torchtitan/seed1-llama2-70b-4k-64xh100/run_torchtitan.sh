#!/usr/bin/env bash
# torchtitan launch for seed1-llama2-70b-4k-64xh100.toml (paraplan export): 8 node(s) x 8 GPUs.
# Run it on every node (or under a scheduler) with MASTER_ADDR / MASTER_PORT naming node 0, from a
# torchtitan checkout. Without the job file, pass the lines of torchtitan_overrides.txt instead.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
NNODES="${NNODES:-8}"
NPROC_PER_NODE="${NPROC_PER_NODE:-8}"
CONFIG_FILE="${CONFIG_FILE:-$HERE/torchtitan_job.toml}"
torchrun --nnodes "$NNODES" --nproc-per-node "$NPROC_PER_NODE" \
  --rdzv-backend c10d --rdzv-endpoint "${MASTER_ADDR:-localhost}:${MASTER_PORT:-29500}" \
  -m torchtitan.train --job.config_file "$CONFIG_FILE" "$@"
