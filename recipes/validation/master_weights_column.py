#!/usr/bin/env python3
"""Fills the master_weights column: where each run kept its fp32 master weights.

separate (blank): 2-byte weights and an fp32 copy in the optimizer state, as Megatron-LM and
  NeMo/Megatron-Bridge keep them (the distributed optimizer's main params).
in_place: the weights themselves are fp32 and the optimizer updates them; a 2-byte copy exists
  only while a layer is gathered or cast for compute.
  torchtitan (modern.csv, ids tt*): FSDP2's MixedPrecisionPolicy(param_dtype=bfloat16,
    reduce_dtype=float32) over a model built in fp32 (torchtitan's apply_fsdp and
    training.mixed_precision_param / mixed_precision_reduce defaults).
  MosaicML's MPT runs (mpt-h100-fsdp.csv): Composer's PyTorch FSDP with the benchmark table's
    "MP Mode" DEFAULT (llm-foundry scripts/train/benchmarking/README.md): fp32 flat parameters,
    sharded, cast to bf16 for compute; gradients reduced in fp32.
Run from the repository root: python3 recipes/validation/master_weights_column.py
"""
from csv_column import fill

fill("recipes/validation/modern.csv", "master_weights", lambda row: "in_place" if row["id"].startswith("tt") else "", "main_grads")
fill("recipes/validation/mpt-h100-fsdp.csv", "master_weights", lambda row: "in_place", "dp_comm_overlap")
