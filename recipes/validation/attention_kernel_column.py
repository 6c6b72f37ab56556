#!/usr/bin/env python3
"""Fills the attention_kernel column: which fused attention kernel each run's core ran.

tuned (blank): the kernel tuned for the GPU's generation. Megatron-LM, NeMo and Megatron-Bridge
  run Transformer Engine's attention, which on Hopper and later prefers cuDNN's fused attention
  ("Disabling FlashAttention to give FusedAttention preference on Hopper+", TE
  dot_product_attention/utils.py); on Ampere FlashAttention-2 is that kernel.
flash2: FlashAttention-2 and kernels of its generation, which leave Hopper's asynchronous tensor
  cores unused.
  torchtitan (modern.csv, ids tt*): PyTorch SDPA. Its flash backend (FlashAttention-2) came first
    on Hopper until PyTorch made cuDNN opt-in after 2.5 (pytorch/pytorch#138522; #142132 measures
    the default at 329 TFLOP/s against cuDNN's 631 on an H100, 2.6 nightly of 2024-12), and
    torchtitan pinned FLASH_ATTENTION first below sm100 from 2025-05 (pytorch/torchtitan#1196):
    every H100, H200 and A100 row. (On an A100 the two classes are one kernel.)
triton: the 2022 Triton implementation of FlashAttention (SDK 1.7).
  MosaicML's MPT runs (mpt-h100-fsdp.csv): llm-foundry's benchmark harness sets the model's
    attn_impl from --attn_impl, default "triton" (scripts/train/benchmarking/submit_benchmarks.py),
    which sweep.sh does not override: that kernel, with ALiBi's bias.
Run from the repository root: python3 recipes/validation/attention_kernel_column.py
"""
from csv_column import fill


def torchtitan_kernel(row):
    titan = row["id"].startswith("tt")
    return "flash2" if titan and row["hardware"].startswith(("h100", "h200", "a100")) else ""


fill("recipes/validation/modern.csv", "attention_kernel", torchtitan_kernel, "master_weights")
fill("recipes/validation/mpt-h100-fsdp.csv", "attention_kernel", lambda row: "triton", "master_weights")
