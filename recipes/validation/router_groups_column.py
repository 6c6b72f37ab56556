#!/usr/bin/env python3
"""Fills modern.csv's moe_router_groups and moe_router_group_topk columns from each model's config.

Megatron-Bridge builds its providers from the Hugging Face configs, whose n_group / topk_group
become Megatron-Core's moe_router_num_groups / moe_router_group_topk (model_bridge.py's mapping):
  deepseek-v3       n_group = 8, topk_group = 4 (deepseek-ai/DeepSeek-V3 config.json; node-limited
                    routing, arXiv 2412.19437 sec. 2.1.2) -> 8, 4
  nemotron-3-nano   n_group = 1, topk_group = 1 (Bridge's recipe sets both to 1)  -> blank (no limit)
  qwen3-*, gpt-oss-*, mixtral-*: no groups in their configs                       -> blank
Run from the repository root: python3 recipes/validation/router_groups_column.py
"""
import csv

PATH = "recipes/validation/modern.csv"
GROUPS = {"deepseek-v3": ("8", "4")}

with open(PATH, newline="") as source:
    reader = csv.DictReader(source)
    columns = list(reader.fieldnames)
    rows = list(reader)
for name in ("moe_router_group_topk", "moe_router_groups"):
    if name not in columns:
        columns.insert(columns.index("moe_shared_ffn_hidden") + 1, name)
for row in rows:
    groups, kept = GROUPS.get(row["model"], ("", ""))
    row["moe_router_groups"], row["moe_router_group_topk"] = groups, kept
with open(PATH, "w", newline="") as target:
    writer = csv.DictWriter(target, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
