#!/usr/bin/env python3
"""Fills recompute and recompute_num_layers for torchtitan's selective *layer* activation
checkpointing: `activation_checkpoint.mode = "selective"` with `selective_ac_option = "2"`, the
value torchtitan's configs shipped ("'int' = ac every positive int layer"), checkpoints every
second TransformerBlock whole and runs the others plainly (torchtitan parallelize_llama.py,
_apply_ac_to_transformer_block). Without pipelining that is, op for op and byte for byte, full
recomputation of half the layers: recompute = full, recompute_num_layers = layers / 2 (which
layers does not matter to the cost). The *-selectivelayer rows of modern.csv (torchtitan's
April 2024 A100 table) ran it.

Every other torchtitan row that recomputes selectively ran the *op* policy, the default of the
llama3 train configs (`selective_ac_option = "op"`: matmul and attention outputs saved but every
second matmul's, parallelize_llama.py's _custom_policy): recompute_modules = torchtitan_op (SDK
1.8). The *-selectiveop rows name it; the others inherit it from llama3_8b.toml at the commits
their notes give.
Run from the repository root: python3 recipes/validation/torchtitan_ac_column.py
"""
from csv_column import fill


def layer_checkpointed(row):
    return row["id"].startswith("tt") and row["id"].endswith("-selectivelayer")


def recompute(row):
    return "full" if layer_checkpointed(row) else row["recompute"]


def recomputed_layers(row):
    return str(int(row["layers"]) // 2) if layer_checkpointed(row) else ""


def op_policy(row):
    return row["id"].startswith("tt") and row["recompute"] == "selective"


def recompute_modules(row):
    return "torchtitan_op" if op_policy(row) else row["recompute_modules"]


fill("recipes/validation/modern.csv", "recompute", recompute, "global_batch")
fill("recipes/validation/modern.csv", "recompute_num_layers", recomputed_layers, "recompute")
fill("recipes/validation/modern.csv", "recompute_modules", recompute_modules, "recompute_num_layers")
