#!/usr/bin/env python3
"""Fills modern.csv's main_grads column: the dtype each run accumulated and reduced gradients in.

Megatron keeps its gradient buffer in fp32 when grad_reduce_in_fp32 is set and in the parameters'
dtype (bf16) when not; NVIDIA's benchmark scripts turn it off:
  Megatron-Bridge, every release the rows come from (25.09 .. 26.08): scripts/performance's
    configs set mixed_precision.grad_reduce_in_fp32 = False and ddp.grad_reduce_in_fp32 = False
    (v0.1.0 the YAML configs, v0.2.0-v0.5.0 configs/*/*_llm_pretrain.py, v0.6.0
    perf_recipes/_common.py _benchmark_common)                                  -> bf16
  NeMo 25.07 (NeMo 2.4.0): scripts/performance/helpers.py set_precision_configs sets
    recipe.trainer.plugins.grad_reduce_in_fp32 = False for every run            -> bf16
  NeMo 25.02 and 25.04 (NeMo 2.2, 2.3): helpers.py does not; MegatronMixedPrecision's default
    grad_reduce_in_fp32 = True                                                   -> blank (fp32)
  NeMo 24.x (NeMo 1 launcher), torchtitan: not stated                           -> blank (fp32)
Run from the repository root: python3 recipes/validation/main_grads_column.py
"""
import csv

PATH = "recipes/validation/modern.csv"


def main_grads(row_id):
    if row_id.startswith("bridge") or row_id.startswith("nemo2507"):
        return "bf16"
    return ""


with open(PATH, newline="") as source:
    reader = csv.DictReader(source)
    columns = list(reader.fieldnames)
    rows = list(reader)
if "main_grads" not in columns:
    columns.insert(columns.index("recompute_modules") + 1, "main_grads")
for row in rows:
    row["main_grads"] = main_grads(row["id"])
with open(PATH, "w", newline="") as target:
    writer = csv.DictWriter(target, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
