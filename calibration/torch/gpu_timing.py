"""GPU time of a callable without the host in it: the GPU is kept busy (torch.cuda._sleep) while the host
queues `count` calls, so the events around them measure the GPU's back-to-back time, launch gaps on the
GPU included and the host's issue time excluded. Shared by the kernel-class, interference and
Hugging Face step probes. Needs PyTorch with CUDA."""
import statistics
import time

import torch

SLEEP_CYCLES = 60_000_000  # about 30 ms at 2 GHz: longer than the host needs to queue a timed batch


def gpu_seconds(fn, count=10, repeats=5, warmup=2):
    """Median over `repeats` of the GPU time per call of `fn`, `count` calls queued behind a sleep."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(SLEEP_CYCLES)
        start.record()
        for _ in range(count):
            fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / 1e3 / count)
    return statistics.median(times)


def host_seconds(fn, count=200, repeats=5):
    """Median over `repeats` of the host's wall time per call of `fn` (the GPU kept busy by a sleep, so
    the host never waits for it unless the launch queue fills)."""
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        torch.cuda._sleep(SLEEP_CYCLES * 4)
        t0 = time.perf_counter()
        for _ in range(count):
            fn()
        times.append((time.perf_counter() - t0) / count)
        torch.cuda.synchronize()
    return statistics.median(times)


def kernel_names(fn):
    """The names of the GPU kernels one call of `fn` launches (torch.profiler), in launch order."""
    from torch.profiler import ProfilerActivity, profile
    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    events = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    events.sort(key=lambda e: e.time_range.start)
    return [e.name for e in events]


def launch_queue_depth(fn, limit=8192):
    """How many launches of `fn` the host can queue behind a busy GPU before a launch blocks: the index of
    the first launch that took over 1 ms (0 if none did within `limit`)."""
    fn()
    torch.cuda.synchronize()
    torch.cuda._sleep(SLEEP_CYCLES * 10)
    depth = 0
    for i in range(limit):
        t0 = time.perf_counter()
        fn()
        if time.perf_counter() - t0 > 1e-3:
            depth = i
            break
    torch.cuda.synchronize()
    return depth
