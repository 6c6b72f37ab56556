#!/usr/bin/env python3
"""vTrain's measured runs (Bang et al., MICRO 2024) in the column format of published.csv.

vTrain publishes one CSV per cluster size with columns such as "hidden size", "# layers",
"tensor parallelism" and "iteration time (ms)". This writes them as `paraplan validate` reads
them, with what vTrain states about every run made explicit: Megatron-DeepSpeed GPT models
(4h GELU MLP, GPT-2's 50,257-token vocabulary), fp16, full activation recomputation, the 1F1B
schedule, no ZeRO, no sequence parallelism, no fused attention, gradients reduced after the
backward pass (no bucketing), on vTrain's cluster (vtrain-a100.toml).

    convert_vtrain.py multi_node.csv multi > vtrain-multi-node.csv
    convert_vtrain.py single_node.csv single > vtrain-single-node.csv
"""
import csv
import sys

COLUMNS = (
    "id,source,confidence,layers,hidden,heads,kv_heads,head_dim,ffn_hidden,ffn_type,vocab,seq_len,"
    "moe_experts,moe_top_k,moe_ffn_hidden,moe_shared_experts,hardware,num_gpus,gpus_per_node,tp,pp,vpp,dp,"
    "cp,ep,sequence_parallel,zero_stage,micro_batch,global_batch,recompute,precision,metric,value,notes,"
    "flash_attention,tp_comm_overlap,dp_comm_overlap"
).split(",")


def convert(rows, kind):
    for number, run in enumerate(rows, start=1):
        hidden = int(run["hidden size"])
        gpus = int(run["# GPUs"])
        tp, pp, dp = (int(run[k]) for k in ("tensor parallelism", "pipeline parallelism", "data parallelism"))
        if tp * pp * dp != gpus:
            raise SystemExit(f"row {number}: tp x pp x dp = {tp * pp * dp}, not # GPUs = {gpus}")
        size = run.get("Parameters (billion)")
        yield {
            **{column: "" for column in COLUMNS},
            "id": f"vtrain-{kind}-{number:04d}",
            "source": "vTrain (Bang et al., MICRO 2024) measured runs",
            "confidence": "published iteration time",
            "layers": run["# layers"], "hidden": hidden, "heads": run["attention heads"],
            "ffn_hidden": 4 * hidden, "ffn_type": "gelu", "vocab": 50257, "seq_len": run["sequence length"],
            "hardware": "vtrain-a100.toml", "num_gpus": gpus, "gpus_per_node": min(8, gpus),
            "tp": tp, "pp": pp, "vpp": 1, "dp": dp, "cp": 1, "ep": 1,
            "sequence_parallel": "false", "zero_stage": 0,
            "micro_batch": run["micro batch"], "global_batch": run["global batch"],
            "recompute": "full", "precision": "fp16",
            "metric": "iteration_s", "value": float(run["iteration time (ms)"]) / 1000,
            "notes": (f"{size}B; " if size else "") + "Megatron-DeepSpeed, 1F1B, no gradient bucketing",
            "flash_attention": "false", "dp_comm_overlap": "false",
        }


def main():
    if len(sys.argv) != 3 or sys.argv[2] not in ("multi", "single"):
        raise SystemExit(__doc__)
    with open(sys.argv[1], newline="") as source:
        rows = list(csv.DictReader(source))
    writer = csv.DictWriter(sys.stdout, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(convert(rows, sys.argv[2]))


if __name__ == "__main__":
    main()
