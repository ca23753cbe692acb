#!/usr/bin/env python3
"""Measure whole training steps of the convolutional networks dtsim has layer tables for, on one GPU.

For each model (torchvision's resnet50 and resnet101 = the layer tables resnet-50 and resnet-101, vgg16 =
vgg-16, inception_v3 without its auxiliary classifier = inception-v3) and precision, one training step
is: forward on a random batch, cross-entropy loss, backward, and a momentum-SGD update, all on the GPU,
as tf_cnn_benchmarks times its synthetic-data steps. Precisions:

  fp32  FP32 everywhere, TF32 tensor-core math turned off (cuDNN and cuBLAS)
  tf32  FP32 tensors, TF32 math allowed in convolutions and matrix products
  bf16  parameters, activations and gradients in BF16 (the model converted with .to(bfloat16)), as dtsim
        costs a bf16 layer table; channels-last memory layout, which cuDNN prefers for tensor cores

cudnn.benchmark is on (cuDNN picks the fastest algorithm per layer, as TensorFlow's autotuning did).
Each row is the median of --steps CUDA-event-timed steps after --warmup steps; images/s = batch / step.
With --profile, each row also has the step's kernel count, the sum of its kernels' durations
(torch.profiler), the kernels that took the most time (by name) and the host's time to issue the step,
which tell GPU time from host dispatch time. The output (--out) lists the rows with the device, the
library versions and the arguments, for comparison with dtsim's prediction of the same model on one GPU
of that kind (tests/validation/h100_cnn_pytorch.json holds such a run, which
tests/validation/test_cnn_compute_validation.cpp reads). Needs PyTorch and torchvision with CUDA:

  python3 calibration/torch/cnn_probe.py --batch 64 --profile --out cnn_h100.json
"""
import argparse
import json
import os
import statistics
import sys

try:
    import torch
    import torchvision
except ImportError as error:
    sys.exit(f"cnn_probe: needs PyTorch and torchvision ({error})")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from step_profile import kernel_profile, run_record  # noqa: E402

# dtsim layer table id -> (torchvision constructor, input size)
MODELS = {
    "resnet-50": (lambda: torchvision.models.resnet50(), 224),
    "resnet-101": (lambda: torchvision.models.resnet101(), 224),
    "vgg-16": (lambda: torchvision.models.vgg16(), 224),
    "inception-v3": (lambda: torchvision.models.inception_v3(aux_logits=False, init_weights=False), 299),
}


def set_precision(name):
    tf32 = name == "tf32"
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32


def step_time(model_id, precision, batch, warmup, steps, profile, trace_dir=""):
    build, size = MODELS[model_id]
    set_precision(precision)
    model = build().cuda()
    dtype = torch.bfloat16 if precision == "bf16" else torch.float32
    layout = torch.channels_last if precision == "bf16" else torch.contiguous_format
    model = model.to(dtype=dtype, memory_format=layout).train()
    images = torch.randn(batch, 3, size, size, device="cuda", dtype=dtype).contiguous(memory_format=layout)
    labels = torch.randint(0, 1000, (batch,), device="cuda")
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()

    def step():
        optimizer.zero_grad(set_to_none=True)
        loss_fn(model(images).float(), labels).backward()
        optimizer.step()

    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    times = []
    for _ in range(steps):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        step()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop) / 1e3)
    seconds = statistics.median(times)
    row = {"model": model_id, "precision": precision, "batch": batch, "step_s": seconds,
           "step_s_all": times, "images_per_s": batch / seconds,
           "peak_memory_bytes": torch.cuda.max_memory_allocated()}
    if profile:
        trace = f"{trace_dir}/{model_id}-{precision}-b{batch}.json" if trace_dir else ""
        row.update(kernel_profile(step, trace))
    del model, optimizer, images
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    return row


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", nargs="+", choices=sorted(MODELS), default=sorted(MODELS))
    p.add_argument("--precisions", nargs="+", choices=["fp32", "tf32", "bf16"], default=["fp32", "tf32", "bf16"])
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--profile", action="store_true",
                   help="also count the step's kernels, sum their durations and time the host's issue")
    p.add_argument("--trace-dir", default="",
                   help="with --profile: write each profiled step's torch.profiler trace there (dtsim import kineto)")
    p.add_argument("--out", required=True)
    args = p.parse_args()
    if not torch.cuda.is_available():
        print("cnn_probe: no CUDA device is visible", file=sys.stderr)
        return 2
    torch.manual_seed(0)
    torch.backends.cudnn.benchmark = True
    doc = {**run_record(args, torchvision=torchvision.__version__), "rows": []}
    for model_id in args.models:
        for precision in args.precisions:
            row = step_time(model_id, precision, args.batch, args.warmup, args.steps, args.profile,
                            args.trace_dir)
            doc["rows"].append(row)
            print(f"{model_id:13} {precision:5} batch {args.batch}: {row['step_s'] * 1e3:7.1f} ms, "
                  f"{row['images_per_s']:7.1f} images/s" + (
                      f", {row['kernels']} kernels busy {row['kernel_busy_s'] * 1e3:.1f} ms, host issue "
                      f"{row['host_issue_s'] * 1e3:.1f} ms" if args.profile else ""), flush=True)
    with open(args.out, "w") as f:
        json.dump(doc, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
