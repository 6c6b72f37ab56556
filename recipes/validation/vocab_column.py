#!/usr/bin/env python3
"""Fills the vocabulary of modern.csv's rows whose tables give none, from the models' own
sources; each is checked against the row's published Model TFLOP/s over its tokens/s through
NeMo's FLOP formula (the 6·V·h the output layer adds per token):
  GPT-3 (NeMo's gpt3-* configurations): GPT-2's BPE tokenizer, 50,257 tokens (GPT-3 5B: implied
    within 5 %).
  Nemotron-3 8B / 22B and Nemotron-4 15B: a 256,000-token SentencePiece vocabulary (Nemotron-4
    15B Technical Report, Parmar et al. 2024; implied 256K within 1 % for all three).
Run from the repository root: python3 recipes/validation/vocab_column.py
"""
from csv_column import fill

VOCABULARIES = {"gpt3": "50257", "nemotron3": "256000", "nemotron4": "256000"}


def vocabulary(row):
    if row["vocab"]:
        return row["vocab"]
    for family, size in VOCABULARIES.items():
        if row["model"].startswith(family):
            return size
    return ""


fill("recipes/validation/modern.csv", "vocab", vocabulary, "ffn_type")
