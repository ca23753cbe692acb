#!/usr/bin/env python3
"""Measure, on one GPU with PyTorch, what a GEMM dimension that is not a multiple of 8 elements costs.

cuBLAS's fast 16-bit kernels load operands 16 bytes at a time; a leading dimension that is not a multiple
of 8 BF16 elements (GPT-2's vocabulary of 50,257 words, say) sends the product to kernels that load one
element at a time. For each case the same product is timed with the odd dimension and with it rounded
up to the next multiple of 8, in the three layouts of a linear layer's forward (Y = X W^T), data
gradient (dX = dY W) and weight gradient (dW = dY^T X); TFLOP/s count 2 m n k of the odd shape for both.
GPU times with the host ahead (gpu_timing.py); inputs random. Writes one JSON document (--out). Example:
python3 calibration/torch/gemm_alignment_probe.py --out gemm_alignment.json
"""
import argparse
import json

import torch

from gpu_timing import gpu_seconds, kernel_names
from step_profile import run_record

# (tokens, hidden, odd width): a linear layer [tokens x hidden] -> [tokens x width]
CASES = [(2048, 2048, 50257), (4096, 2048, 50257), (8192, 4096, 50257), (4096, 4096, 32001),
         (4096, 4096, 4097), (8192, 1600, 50257), (4096, 4100, 4096)]


def rates(tokens, hidden, width, dtype):
    x = torch.randn(tokens, hidden, dtype=dtype, device="cuda")
    w = torch.randn(width, hidden, dtype=dtype, device="cuda")
    dy = torch.randn(tokens, width, dtype=dtype, device="cuda")
    flops = 2.0 * tokens * hidden * width
    layouts = {"forward": lambda: torch.mm(x, w.t()), "dgrad": lambda: torch.mm(dy, w),
               "wgrad": lambda: torch.mm(dy.t(), x)}
    out = {}
    for name, fn in layouts.items():
        sec = gpu_seconds(fn, count=10)
        out[name] = {"seconds": sec, "tflops": flops / sec / 1e12, "kernel": kernel_names(fn)[-1][:120]}
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    args = p.parse_args()
    doc = {"record": run_record(args), "method": __doc__, "rows": []}
    for tokens, hidden, width in CASES:
        aligned_hidden, aligned_width = -(-hidden // 8) * 8, -(-width // 8) * 8
        row = {"tokens": tokens, "hidden": hidden, "width": width,
               "odd": rates(tokens, hidden, width, torch.bfloat16),
               "aligned": rates(tokens, aligned_hidden, aligned_width, torch.bfloat16)}
        for layout in row["odd"]:
            # The aligned product does a little more work; its time is scaled to the odd shape's FLOPs.
            scale = (hidden * width) / (aligned_hidden * aligned_width)
            row["odd"][layout]["over_aligned"] = (row["aligned"][layout]["seconds"] * scale /
                                                  row["odd"][layout]["seconds"])
        doc["rows"].append(row)
        print(json.dumps({"tokens": tokens, "hidden": hidden, "width": width,
                          **{k: round(v["over_aligned"], 3) for k, v in row["odd"].items()},
                          "odd_kernel": row["odd"]["forward"]["kernel"][:60]}), flush=True)
        with open(args.out, "w") as out:
            json.dump(doc, out, indent=1)


if __name__ == "__main__":
    main()
