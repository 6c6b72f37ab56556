#!/usr/bin/env python3
"""Fills modern.csv's position_embedding, linear_bias and activation_clamp columns from each model's config.

What Megatron-Bridge's providers set (Megatron-Core TransformerConfig fields), by model:
  llama2-*, llama3-*, llama3.1-*, mixtral-*, qwen3-*, nemotron4-*, nemotron3-*
                    position_embedding_type "rope" (their Hugging Face configs' rope_theta)   -> rope
  gpt-oss-120b      position_embedding_type "yarn", add_bias_linear True,
                    activation_func_clamp_value 7.0 (Megatron-Bridge models/gpt_oss
                    gpt_oss_provider.py, v0.2.0-v0.3.0; gpt_oss_bridge.py from v0.3.1)    -> yarn, true, 7.0
  nemotron-3-nano   position_embedding_type "none" (models/nemotronh nemotron_h_bridge.py)  -> none
  gpt3-*            NeMo's GPT-3 configs: learned absolute positions                        -> learned_absolute
  deepseek-v3       MLA's decoupled rotary part lives in its latent path, not priced here     -> blank
Run from the repository root: python3 recipes/validation/model_features_column.py
"""
import csv

PATH = "recipes/validation/modern.csv"
ROPE = ("llama2-", "llama3", "mixtral-", "qwen3-", "nemotron4-", "nemotron3-")
FEATURES = {
    "gpt-oss-120b": ("yarn", "true", "7.0"),
    "nemotron-3-nano": ("none", "", ""),
}


def features(model):
    if model in FEATURES:
        return FEATURES[model]
    if model.startswith("gpt3-"):
        return ("learned_absolute", "", "")
    if model.startswith(ROPE):
        return ("rope", "", "")
    return ("", "", "")


with open(PATH, newline="") as source:
    reader = csv.DictReader(source)
    columns = list(reader.fieldnames)
    rows = list(reader)
anchor = columns.index("layer_pattern")
for offset, name in enumerate(("position_embedding", "linear_bias", "activation_clamp")):
    if name not in columns:
        columns.insert(anchor + 1 + offset, name)
for row in rows:
    row["position_embedding"], row["linear_bias"], row["activation_clamp"] = features(row["model"])
with open(PATH, "w", newline="") as target:
    writer = csv.DictWriter(target, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
