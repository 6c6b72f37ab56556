#!/usr/bin/env python3
"""Fills the tp_comm_overlap column: whether a run overlapped its tensor-parallel communication
with its GEMMs (Megatron-LM's --tp-comm-overlap, Transformer Engine's userbuffers; blank: off).

The releases' own configurations, at the tag nearest each container (matched by date):
  NeMo 24.07 (nemo2407*): NeMo-Framework-Launcher 24.07 conf/training/*.yaml ub_tp_comm_overlap:
    True for GPT-3 20B, Nemotron-3 8B/22B, Llama 2 70B, Llama 3 70B; False for GPT-3 175B
    (gpt3/175b.yaml, "Set ub_tp_overlap to False", 2023-09).
  NeMo 24.12 (nemo-h100-fp8.csv) and 25.02-25.07 (nemo25*): NeMo 2's recipes (llm/recipes/
    gpt3_175b.py, llama3_70b.py, llama31_405b.py, nemotron*.py) and performance scripts turn it on
    wherever TP > 1 (with sequence parallelism), a userbuffers configuration per GPU.
  Megatron-Bridge 25.09-26.06 (bridge*): the Llama recipes turn it on with TP > 1; the
    performance configs turn it off for NVFP4 (llama3_llm_pretrain.py, llama31_llm_pretrain.py:
    tp_comm_overlap = False if precision == "nvfp4").
  torchtitan (tt*): async TP (micro-pipelined TP under torch.compile) on the *-asynctp rows, plain
    TP on the *-vanillatp rows.
Left blank: rows with TP 1, NeMo 24.03's long-context rows (no configuration published), and the
mixture-of-experts rows (not checked).
Run from the repository root: python3 recipes/validation/tp_comm_overlap_column.py
"""
from csv_column import fill

def modern_overlap(row):
    identifier = row["id"]
    if int(row["tp"] or 1) <= 1 or int(row["moe_experts"] or 0) > 0:
        return ""
    release = identifier.split("-")[0]
    if release.startswith("tt"):
        return "true" if "asynctp" in identifier else "false"
    if release == "nemo2407":
        return "false" if "gpt3-175b" in identifier else "true"
    if release.startswith("nemo25"):
        return "true"
    if release.startswith("bridge"):
        return "false" if row["precision"] == "nvfp4" else "true"
    return ""


def nemo_2412_overlap(row):
    return "true" if int(row["tp"] or 1) > 1 else ""


fill("recipes/validation/modern.csv", "tp_comm_overlap", modern_overlap, "model")
fill("recipes/validation/nemo-h100-fp8.csv", "tp_comm_overlap", nemo_2412_overlap, "flash_attention")
