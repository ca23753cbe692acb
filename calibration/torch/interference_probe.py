#!/usr/bin/env python3
"""Measure, on one GPU, how a communication kernel and the compute beside it slow one another.

NCCL runs a collective as one kernel of one thread block per channel (512 threads for the Simple
protocol), each block copying (and reducing) chunks between buffers in HBM for as long as the collective
lasts. Its stand-in here is a persistent Triton copy kernel of P programs of 16 warps (512 threads), each
looping over a 512 MiB BF16 buffer: P thread blocks held for the whole copy, HBM read and written at the
rate those blocks reach. Beside it, on a second stream, run in turn:

  gemm       BF16 8192 x 8192 x 8192 products (torch.mm, cuBLAS): compute-bound
  memory     a BF16 add of two 64 Mi-element tensors: bandwidth-bound

For each P: the copy alone (its bandwidth), the victim alone, the victim with the copy started first
(the copy's blocks resident, as when a collective is running when compute is launched), and the copy
with the victim started first. Slowdowns are the times beside over the times alone. Writes one JSON
document (--out). Needs PyTorch with CUDA and Triton. Example:
python3 calibration/torch/interference_probe.py --out interference.json
"""
import argparse
import json

import torch
import triton
import triton.language as tl

from step_profile import run_record

BLOCK = 8192


@triton.jit
def persistent_copy(src, dst, n, passes, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    programs = tl.num_programs(0)
    for _p in range(passes):
        for start in range(pid * BLOCK, n, programs * BLOCK):
            offsets = start + tl.arange(0, BLOCK)
            mask = offsets < n
            tl.store(dst + offsets, tl.load(src + offsets, mask=mask), mask=mask)


def launch_copy(src, dst, programs, passes):
    persistent_copy[(programs,)](src, dst, src.numel(), passes, BLOCK=BLOCK, num_warps=16)


def timed_pair(first, second, s1, s2):
    """Run `first` on stream s1, then `second` on s2 once the first is queued; the elapsed time of each
    from a common start (the GPU kept busy until both are queued)."""
    torch.cuda.synchronize()
    start = torch.cuda.Event(enable_timing=True)
    ends = [torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)]
    torch.cuda._sleep(20_000_000)
    start.record()
    for stream, fn, end in ((s1, first, ends[0]), (s2, second, ends[1])):
        stream.wait_event(start)
        with torch.cuda.stream(stream):
            fn()
            end.record()
    torch.cuda.synchronize()
    return [start.elapsed_time(e) / 1e3 for e in ends]


def alone(fn, stream):
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda._sleep(20_000_000)
    start.record()
    stream.wait_event(start)
    with torch.cuda.stream(stream):
        fn()
        end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / 1e3


def median3(fn):
    return sorted(fn() for _ in range(3))[1]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    p.add_argument("--programs", type=int, nargs="+", default=[4, 8, 16, 24, 32, 64, 132])
    args = p.parse_args()
    s_comm, s_comp = torch.cuda.Stream(), torch.cuda.Stream()
    src = torch.randn(256 << 20, dtype=torch.bfloat16, device="cuda")
    dst = torch.empty_like(src)
    a, b = (torch.randn(8192, 8192, dtype=torch.bfloat16, device="cuda") for _ in range(2))
    c = torch.empty_like(a)
    x, y = (torch.randn(64 << 20, dtype=torch.bfloat16, device="cuda") for _ in range(2))
    z = torch.empty_like(x)

    def gemms(reps):
        for _ in range(reps):
            torch.mm(a, b, out=c)

    def adds(reps):
        for _ in range(reps):
            torch.add(x, y, out=z)

    victims = {"gemm": (gemms, 8), "memory": (adds, 40)}
    launch_copy(src, dst, 8, 1)
    for fn, reps in victims.values():
        fn(1)
    torch.cuda.synchronize()
    bytes_per_pass = 2 * src.numel() * src.element_size()
    doc = {"record": run_record(args), "method": __doc__, "rows": []}
    victim_alone = {name: median3(lambda: alone(lambda: fn(reps), s_comp)) for name, (fn, reps) in victims.items()}
    doc["victims_alone_s"] = victim_alone
    for programs in args.programs:
        one_pass = median3(lambda: alone(lambda: launch_copy(src, dst, programs, 1), s_comm))
        row = {"programs": programs, "copy_gbytes_per_s": bytes_per_pass / one_pass / 1e9}
        for name, (fn, reps) in victims.items():
            # The copy lasts at least twice the victim's time alone, so the victim runs beside it throughout.
            passes = max(1, int(2 * victim_alone[name] / one_pass) + 1)
            copy_alone = median3(lambda: alone(lambda: launch_copy(src, dst, programs, passes), s_comm))
            victim_beside = median3(lambda: timed_pair(lambda: launch_copy(src, dst, programs, passes),
                                                       lambda: fn(reps), s_comm, s_comp)[1])
            # The victim lasts at least twice the copy's time alone, started first.
            many = max(reps, int(2 * reps * one_pass / victim_alone[name]) + 1)
            copy_beside = median3(lambda: timed_pair(lambda: fn(many), lambda: launch_copy(src, dst, programs, 1),
                                                     s_comp, s_comm)[1])
            row[name] = {"victim_slowdown_copy_first": victim_beside / victim_alone[name],
                         "copy_slowdown_victim_first": copy_beside / one_pass,
                         "copy_passes": passes, "copy_alone_s": copy_alone}
        doc["rows"].append(row)
        print(json.dumps(row))
        with open(args.out, "w") as out:
            json.dump(doc, out, indent=1)


if __name__ == "__main__":
    main()
