#!/usr/bin/env python3
"""Whole eager training steps of small GPT models on one GPU, where the host that issues the kernels
sets the pace: the regime of small per-GPU work (hidden 1024-2048, sequence 1024, micro-batch 1-8, one
tensor-parallel rank's share at tp 1-4) in which published Megatron runs are slowest against dtsim.

Each configuration is transformer_probe.py's step (pre-LN GPT, BF16 parameters, cuDNN causal attention,
eager element-wise kernels, tied embedding, FP32 cross-entropy) with --optimizer and --profile-step: the
median wall time of a whole iteration (zeroing the gradients, forward, backward, AdamW), the kernels it
launched, the GPU's busy time and the host's time to issue it. Recompute rows checkpoint every layer
with torch.utils.checkpoint, non-reentrant ("full") or reentrant ("full-reentrant"). A last
configuration is one tensor-parallel rank's share (tp 4, four layers) of GPT-3 175B's layer at
micro-batch 2, the shape of the planner's first plan for that model. All in one process (one CUDA context), one JSON document (--out).
Needs PyTorch with CUDA. Example: python3 calibration/torch/host_bound_sweep.py --out host_bound.json
"""
import argparse
import json
import os
import sys

try:
    import torch
except ImportError as error:
    sys.exit(f"host_bound_sweep: needs PyTorch 2.5 or later ({error})")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from step_profile import run_record  # noqa: E402
from transformer_probe import step_row  # noqa: E402

GPT_SMALL = dict(layers=24, hidden=1024, heads=16, ffn=4096, seq=1024, vocab=50304)
GPT_MEDIUM = dict(layers=24, hidden=2048, heads=16, ffn=8192, seq=1024, vocab=50304)
GPT3_175B_SHARE = dict(layers=4, hidden=12288, heads=96, ffn=49152, seq=2048, vocab=51200)


def grid(quick):
    rows = []
    for mb in (1, 2, 4, 8):
        for tp in (1, 2, 4):
            rows.append(dict(GPT_SMALL, micro_batch=mb, step_tp=tp, recompute="none"))
    for mb in (1, 4):
        for tp in (1, 4):
            rows.append(dict(GPT_SMALL, micro_batch=mb, step_tp=tp, recompute="full"))
    for mb in (1, 2, 4, 8):
        for tp in (1, 4):
            rows.append(dict(GPT_MEDIUM, micro_batch=mb, step_tp=tp, recompute="none"))
    for mb in (1, 4):
        rows.append(dict(GPT_MEDIUM, micro_batch=mb, step_tp=2, recompute="full"))
    for mb in (1, 4):
        for tp in (1, 4):
            rows.append(dict(GPT_SMALL, micro_batch=mb, step_tp=tp, recompute="full-reentrant"))
    rows.append(dict(GPT3_175B_SHARE, micro_batch=2, step_tp=4, recompute="none"))
    return rows[:3] if quick else rows


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--optimizer", choices=["none", "adamw-fused", "adamw-foreach"], default="adamw-fused")
    p.add_argument("--zero-grad", choices=["fill", "set-to-none"], default="fill")
    p.add_argument("--quick", action="store_true", help="the first three configurations only")
    p.add_argument("--out", required=True)
    args = p.parse_args()
    if not torch.cuda.is_available():
        print("host_bound_sweep: no CUDA device is visible", file=sys.stderr)
        return 2
    torch.manual_seed(0)
    cpus = [line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")]
    doc = {**run_record(args), "host_cpu": cpus[0] if cpus else "", "host_cpu_threads": len(cpus), "rows": []}
    for config in grid(args.quick):
        step_args = argparse.Namespace(**config, steps=args.steps, optimizer=args.optimizer,
                                       zero_grad=args.zero_grad, step_attention="cudnn", profile_step=True,
                                       trace="")
        torch.cuda.reset_peak_memory_stats()
        try:
            row = {**config, **step_row(step_args)}
        except RuntimeError as error:  # out of memory or an unsupported shape: keep the sweep going
            row = {**config, "error": str(error).splitlines()[0]}
        row.pop("step_s_all", None)
        doc["rows"].append(row)
        torch.cuda.empty_cache()
        if "error" in row:
            print(f"{config}: {row['error']}", flush=True)
            continue
        recompute = "" if row["recompute"] == "none" else " " + row["recompute"]
        print(f"h{row['hidden']} L{row['layers']} mb{row['micro_batch']} tp{row['step_tp']}{recompute}: "
              f"step {row['step_s'] * 1e3:.2f} ms, busy {row['kernel_busy_s'] * 1e3:.2f} ms, "
              f"host issue {row['host_issue_s'] * 1e3:.2f} ms, "
              f"{row['kernels']} kernels", flush=True)
        with open(args.out, "w") as f:
            json.dump(doc, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
