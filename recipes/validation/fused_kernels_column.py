#!/usr/bin/env python3
"""Fills modern.csv's fp8_attention and moe_fused_mlp columns from each row's notes.

  fp8_dot_product_attention=True in the notes -> fp8_attention = true (Megatron-Core's
    fp8_dot_product_attention: Transformer Engine's fused attention in FP8)
  cutedsl_fused_grouped_mlp=True in the notes  -> moe_fused_mlp = true (Megatron-Bridge's
    WorkloadBaseConfig.cutedsl_fused_grouped_mlp, which sets Megatron-Core's
    use_transformer_engine_op_fuser = True and moe_mlp_glu_interleave_size = 32:
    scripts/performance/utils/overrides.py, v0.5.0, lines 238-242)

The notes of the rows below did not carry those settings (their recipe-matching step read only
the workload base config's own fields, or only cfg.model/cfg.train assignments); they are appended
here once, read from Megatron-Bridge at the tag each row names:
  - v0.5.0 and v0.5.1 scripts/performance/configs/qwen/qwen3_workload_base_configs.py:
    QWEN3_30B_A3B_PRETRAIN_CONFIG_GB200_FP8_MX_V1 and QWEN3_235B_A22B_PRETRAIN_CONFIG_GB200_FP8_MX_V2
    set cutedsl_fused_grouped_mlp=True and fp8_dot_product_attention=True (the NeMo 26.06 rows,
    matched at v0.5.0, and 26.06.01, at v0.5.1);
  - v0.6.0 src/megatron/bridge/perf_recipes/qwen/gb200/qwen3_moe.py (lines 328, 488) call
    _enable_hybridep_full_iteration_mxfp8 (perf_recipes/qwen/common.py, lines 36-60): whole-
    iteration CUDA graphs, use_transformer_engine_op_fuser with moe_mlp_glu_interleave_size 32,
    fp8_dot_product_attention, overlap_moe_expert_parallel_comm (the NeMo 26.08 rows, whose
    moe_a2a_overlap and cuda_graph_modules columns this also fills; run cuda_graph_column.py after).
No other row's configuration at its tag sets either (checked for every row with a recipe match).
Run from the repository root: python3 recipes/validation/fused_kernels_column.py
"""
import csv

PATH = "recipes/validation/modern.csv"
V050 = (" | fused kernels (the matched Megatron-Bridge config at its tag, qwen3_workload_base_configs.py):"
        " cutedsl_fused_grouped_mlp=True; fp8_dot_product_attention=True")
V060 = (" | _enable_hybridep_full_iteration_mxfp8 (Megatron-Bridge v0.6.0 perf_recipes/qwen/common.py:36-60):"
        " cuda_graph_impl=full_iteration; cuda_graph_scope=[]; moe_a2a_overlap=True;"
        " cutedsl_fused_grouped_mlp=True; fp8_dot_product_attention=True")
FROM_SOURCE = {
    "bridge260601-gb200-qwen3-30b-8-mxfp8": V050,
    "bridge2606-gb200-qwen3-30b-8-mxfp8": V050,
    "bridge260601-gb200-qwen3-235b-256-mxfp8": V050,
    "bridge2606-gb200-qwen3-235b-256-mxfp8": V050,
    "bridge2608-gb200-qwen3-30b-8-mxfp8": V060,
    "bridge2608-gb200-qwen3-235b-256-mxfp8": V060,
}

with open(PATH, newline="") as source:
    reader = csv.DictReader(source)
    columns = list(reader.fieldnames)
    rows = list(reader)
for column, after in (("fp8_attention", "attention_kernel"), ("moe_fused_mlp", "moe_a2a_overlap")):
    if column not in columns:
        columns.insert(columns.index(after) + 1, column)
for row in rows:
    extra = FROM_SOURCE.get(row["id"], "")
    if extra and extra not in row["notes"]:
        row["notes"] += extra
    notes = row["notes"]
    row["fp8_attention"] = "true" if "fp8_dot_product_attention=True" in notes else ""
    row["moe_fused_mlp"] = "true" if "cutedsl_fused_grouped_mlp=True" in notes else ""
    if "moe_a2a_overlap=True" in notes and row["moe_experts"] not in ("", "0"):
        row["moe_a2a_overlap"] = "true"
with open(PATH, "w", newline="") as target:
    writer = csv.DictWriter(target, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
