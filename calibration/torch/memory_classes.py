#!/usr/bin/env python3
"""A GPU profile's memory_classes and kernel_launch_us from kernel_class_probe.py's measurement.

For each memory class (sim/core/memory_class.hpp) the probe's operations of that class are costed as
dtsim's models cost them: the model's bytes for the operation (below, per element of the probe's
tensor; a = 2 bytes per BF16 element) and the model's kernel count. The class's efficiency is the median,
over the rows that move at least 64 MiB (smaller tensors stay in the 50 MB L2 cache between repeats), of

    bytes / (time - kernels x launch) / peak HBM bandwidth

where launch is the GPU's time per queued kernel (the probe's host.queued_kernel_gpu_s, which becomes
kernel_launch_us) and the peak is the profile's hbm_bandwidth_gbytes_per_s. Prints the JSON to put into
the profile and each row's efficiency. Example:

  python3 calibration/torch/memory_classes.py kernel_classes.json hardware_profiles/gpus/h100-sxm5-80gb.json
"""
import json
import statistics
import sys

A = 2
MIN_BYTES = 64 << 20

# class: [(probe op, pass, model bytes per element, model kernels)]; elements are the probe row's tensor
# elements (tokens x hidden; x intermediate for the activations; tokens x vocab; parameters).
CLASSES = {
    "streaming": [("copy", "forward", 2 * A, 1), ("add", "forward", 3 * A, 1), ("cast_down", "forward", A + 4, 1),
                  ("dropout", "backward", 2 * A + 1, 1), ("gelu_tanh", "forward", 2 * A, 1),
                  ("gelu_tanh", "backward", 3 * A, 1)],
    "widening_cast": [("cast_up", "forward", A + 4, 1)],
    "mixed_add": [("grad_accum", "forward", 8 + A, 1)],
    "reduction": [("bias_grad_sum", "forward", A, 1)],
    "norm_forward": [("layer_norm", "forward", 2 * A, 1), ("rms_norm", "forward", 2 * A, 1)],
    "norm_backward": [("layer_norm", "backward", 3 * A, 1), ("rms_norm", "backward", 3 * A, 1)],
    "norm_eager_forward": [("rms_norm_eager", "forward", 24 + 4 * A, 8)],
    "norm_eager_backward": [("rms_norm_eager", "backward", 8 * A + 68, 12)],
    "transpose": [("layout_copy", "forward", 2 * A, 1), ("layout_copy", "backward", 2 * A, 1)],
    "cross_entropy_forward": [("cross_entropy_fp32", "forward", A + 4 + 8, 3)],
    "cross_entropy_backward": [("cross_entropy_fp32", "backward", 16 + 4 + A, 4)],
    "optimizer": [("adamw_fused", "forward", 28, 4)],
}


def elements(row):
    if "parameters" in row:
        return row["parameters"]
    if "vocab" in row:
        return row["tokens"] * row["vocab"]
    return row["tokens"] * row.get("intermediate", row["hidden"])


def main():
    probe = json.load(open(sys.argv[1]))
    profile = json.load(open(sys.argv[2]))
    peak = profile["hbm_bandwidth_gbytes_per_s"] * 1e9
    launch = probe["host"]["queued_kernel_gpu_s"]
    classes = {}
    for name, ops in CLASSES.items():
        values = []
        for op, direction, per_element, kernels in ops:
            for row in probe["memory"]:
                if row["op"] != op or row["pass"] != direction:
                    continue
                nbytes = per_element * elements(row)
                if nbytes < MIN_BYTES:
                    continue
                efficiency = nbytes / (row["seconds"] - kernels * launch) / peak
                values.append(efficiency)
                print(f"{name:24s} {op:20s} {direction:8s} {nbytes / 2**20:9.0f} MiB {efficiency:.3f}", file=sys.stderr)
        classes[name] = round(statistics.median(values), 3)
    print(json.dumps({"kernel_launch_us": round(launch * 1e6, 2), "memory_classes": classes}, indent=1))


if __name__ == "__main__":
    main()
