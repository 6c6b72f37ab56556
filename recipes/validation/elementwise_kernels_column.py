#!/usr/bin/env python3
"""Fills the elementwise_kernels column: how each run's norms, rotary embedding and GLU ran.

fused (blank): one kernel each. Megatron-LM, NeMo and Megatron-Bridge run Transformer Engine's
  and Megatron-Core's fused kernels; torchtitan with torch.compile fuses them.
eager: PyTorch eager mode, each composite op as its own kernels (SDK 1.8). torchtitan's runs
  without torch.compile (modern.csv, ids tt*):
  - its April 2024 A100 table (tt202404-*): the train configs of that time set
    `compile = false` and `norm_type = "rmsnorm"` (train_configs/llama3_8b.toml and the Llama 2
    configs: the eager RMSNorm, not the fused_rmsnorm option);
  - its December 2024 tables' "FSDP" columns (tt202412-*-e), beside "FSDP + torch.compile" (-c).
Run from the repository root: python3 recipes/validation/elementwise_kernels_column.py
"""
from csv_column import fill


def kernels(row):
    run = row["id"]
    eager = run.startswith("tt202404-") or (run.startswith("tt202412-") and run.endswith("-e"))
    return "eager" if eager else ""


fill("recipes/validation/modern.csv", "elementwise_kernels", kernels, "attention_kernel")
