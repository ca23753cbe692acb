"""What the PyTorch probes share: the record of where they ran, and where one training step's time goes
on the GPU and on the host, with torch.profiler (the probes' --profile). Needs PyTorch with CUDA;
imported by cnn_probe.py and transformer_probe.py."""
import statistics
import time

import torch

TOP_KERNELS = 25  # the kernels (by name) that took the most time, with count and total


def run_record(args, **libraries):
    """The device, the CUDA, cuDNN and PyTorch versions (and `libraries`, name: version) a probe ran with,
    and its arguments: the head of every probe's output."""
    return {"device": torch.cuda.get_device_name(), "torch": torch.__version__, **libraries,
            "cuda": torch.version.cuda, "cudnn": torch.backends.cudnn.version(), "args": vars(args)}


def kernel_profile(step, trace=""):
    """One call of `step` under torch.profiler: its GPU kernels' count and summed duration (the GPU's busy
    time when kernels do not overlap) and the TOP_KERNELS that took the most time; then the host's time to
    issue a step (from the call to its return, the GPU idle at the start), the median of 5 calls. With
    `trace`, the profiled step's Chrome trace is written there (dtsim import kineto reads it)."""
    from torch.profiler import ProfilerActivity, profile
    activities = [ProfilerActivity.CUDA] + ([ProfilerActivity.CPU] if trace else [])
    with profile(activities=activities, record_shapes=bool(trace)) as prof:
        step()
        torch.cuda.synchronize()
    if trace:
        prof.export_chrome_trace(trace)
    kernels = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    busy_us = sum(e.device_time for e in kernels)
    by_name = {}
    for e in kernels:
        count, us = by_name.get(e.name, (0, 0.0))
        by_name[e.name] = (count + 1, us + e.device_time)
    top = sorted(by_name.items(), key=lambda item: -item[1][1])
    issue = []
    for _ in range(5):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        step()
        issue.append(time.perf_counter() - t0)
        torch.cuda.synchronize()
    return {"kernels": len(kernels), "kernel_busy_s": busy_us / 1e6, "host_issue_s": statistics.median(issue),
            "top_kernels": [{"name": name[:160], "count": count, "total_s": us / 1e6}
                            for name, (count, us) in top[:TOP_KERNELS]]}
