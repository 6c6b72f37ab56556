#!/usr/bin/env python3
"""Fills the cpu_offloading_num_layers column: how many layers' activations a run copied to host
memory and back (Megatron-LM's --cpu-offloading-num-layers, Transformer Engine's cpu_offload.py).

Read from the row's notes, where the run's recipe was matched to its source: Megatron-Bridge's
Llama 3 70B pre-training configs on GB200 with Megatron FSDP set cpu_offloading_num_layers=40
(scripts/performance/configs/llama/llama3_workload_base_configs.py, releases 26.02 on). A row
whose notes do not name it is left blank (none).
Run from the repository root: python3 recipes/validation/cpu_offloading_column.py
"""
import re

from csv_column import fill


def offloaded_layers(row):
    found = re.search(r"cpu_offloading_num_layers=(\d+)", row["notes"])
    return found.group(1) if found else ""


if __name__ == "__main__":
    fill("recipes/validation/modern.csv", "cpu_offloading_num_layers", offloaded_layers, after="cuda_graph_modules")
