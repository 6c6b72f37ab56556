#!/usr/bin/env python3
"""Fills modern.csv's cuda_graph_modules column from each Megatron-Bridge row's notes.

The notes list the recipe's settings where the row matched a Bridge preset:
  cuda_graph_impl=full_iteration, or local with cuda_graph_scope=full_iteration -> full_iteration
  cuda_graph_impl=transformer_engine (or local) with cuda_graph_scope=[...]     -> those modules
  cuda_graph_impl=none, or no setting in the notes                             -> blank (eager)
Run from the repository root: python3 recipes/validation/cuda_graph_column.py
"""
import csv
import re

PATH = "recipes/validation/modern.csv"


def modules(notes):
    impl = re.search(r"cuda_graph_impl=([a-z_]+)", notes)
    if not impl or impl.group(1) == "none":
        return ""
    scope = re.search(r"cuda_graph_scope=(\[[^\]]*\]|[a-z_]+)", notes)
    text = scope.group(1) if scope else ""
    names = re.findall(r"[a-z_]+", text)
    if impl.group(1) == "full_iteration" or names == ["full_iteration"]:
        return "full_iteration"
    return ",".join(names)


with open(PATH, newline="") as source:
    reader = csv.DictReader(source)
    columns = list(reader.fieldnames)
    rows = list(reader)
if "cuda_graph_modules" not in columns:
    columns.insert(columns.index("moe_a2a_overlap") + 1, "cuda_graph_modules")
for row in rows:
    row["cuda_graph_modules"] = modules(row["notes"])
with open(PATH, "w", newline="") as target:
    writer = csv.DictWriter(target, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
