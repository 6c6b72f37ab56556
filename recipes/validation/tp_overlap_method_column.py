#!/usr/bin/env python3
"""Fills the tp_overlap_method column: how a run with tp_comm_overlap = true overlapped its
tensor-parallel collectives (tp's overlap_method, docs/recipes.md).

userbuffers (blank): Megatron-LM's --tp-comm-overlap, Transformer Engine's userbuffers, in every
  pass. The NeMo and Megatron-Bridge runs.
micro_pipeline: PyTorch's async TP under torch.compile (torchtitan's
  enable_async_tensor_parallel), which hides the forward passes' collectives only. torchtitan's
  June 2025 async-TP study (tt202506-*-asynctp; its docs/performance.md: "async TP" against
  "vanilla TP" on Llama 3 8B, 64 H100).
Run from the repository root: python3 recipes/validation/tp_overlap_method_column.py
"""
from csv_column import fill


def method(row):
    torchtitan = row["id"].startswith("tt")
    return "micro_pipeline" if torchtitan and row["tp_comm_overlap"] == "true" else ""


fill("recipes/validation/modern.csv", "tp_overlap_method", method, "tp_comm_overlap")
