#!/usr/bin/env python3
"""Measure, on one GPU with PyTorch, the facts dtsim's compute model takes per kernel class:

  memory     the memory-bound operations of a training step (copy, add, casts, LayerNorm, RMSNorm eager
             and fused, GELU, SwiGLU, dropout, layout copy, bias-gradient sum, gradient accumulation,
             cross-entropy over a vocabulary, AdamW fused and for-each) at several sizes, forward and
             backward: GPU time, kernels launched (torch.profiler) and the bandwidth over the fewest HBM
             bytes the operation must move (every input read once, every output written once; stated
             per row as bytes_min).
  fp8        FP8 (e4m3) GEMMs through torch._scaled_mm beside the same BF16 GEMMs, and the per-tensor
             scaling casts around them as eager PyTorch runs them (amax, scale, cast) and the FP8
             transpose a weight-gradient GEMM needs.
  host       the host's time per eager operation (a one-element add; a Linear forward with autograd),
             the GPU's time per kernel when launches queue back to back, and per kernel replayed from a
             CUDA graph.

GPU times are taken with the host ahead of the GPU (gpu_timing.py); inputs are random. Writes one JSON
document (--out). Example: python3 calibration/torch/kernel_class_probe.py --out kernel_classes.json
"""
import argparse
import json
import math
import sys

import torch
import torch.nn.functional as F

from gpu_timing import gpu_seconds, host_seconds, kernel_names, launch_queue_depth
from step_profile import run_record

BF16 = torch.bfloat16
A = 2  # bytes per bf16 element


def rms_norm_eager(x, w, eps=1e-6):
    """torchtitan's and Hugging Face's RMSNorm: computed in FP32, cast back, times the weight."""
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).type_as(x) * w


def new_gelu(x):
    """Hugging Face's NewGELUActivation (GPT-2's gelu_new), one PyTorch kernel per operation."""
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


def measure(name, size, forward, inputs, bytes_fwd, bytes_bwd, rows, grad_inputs=None):
    """One row forward (no autograd) and one backward (forward + backward minus forward with autograd)."""
    with torch.no_grad():
        t_fwd = gpu_seconds(lambda: forward(*inputs))
        k_fwd = kernel_names(lambda: forward(*inputs))
    rows.append({"op": name, "pass": "forward", **size, "seconds": t_fwd, "bytes_min": bytes_fwd,
                 "gbytes_per_s": bytes_fwd / t_fwd / 1e9, "kernels": len(k_fwd), "kernel_names": k_fwd[:12]})
    if bytes_bwd is None:
        return
    leaves = [t.detach().requires_grad_(t.is_floating_point()) for t in inputs]
    wrt = [leaves[i] for i in (grad_inputs or [0])]
    out = forward(*leaves)
    grad = torch.randn_like(out)

    def fwd_only():
        forward(*leaves)

    def fwd_bwd():
        torch.autograd.grad(forward(*leaves), wrt, grad)

    t_both = gpu_seconds(fwd_bwd)
    t_fwd_ag = gpu_seconds(fwd_only)
    names = kernel_names(fwd_bwd)[len(kernel_names(fwd_only)):]
    t_bwd = max(t_both - t_fwd_ag, 1e-9)
    rows.append({"op": name, "pass": "backward", **size, "seconds": t_bwd, "bytes_min": bytes_bwd,
                 "gbytes_per_s": bytes_bwd / t_bwd / 1e9, "kernels": len(names), "kernel_names": names[:16]})


def memory_rows(shapes, vocab_shapes):
    rows = []
    for t, h in shapes:
        e, f = t * h, 4 * t * h
        size = {"tokens": t, "hidden": h}
        x, y = torch.randn(t, h, dtype=BF16, device="cuda"), torch.randn(t, h, dtype=BF16, device="cuda")
        w, b = torch.randn(h, dtype=BF16, device="cuda"), torch.randn(h, dtype=BF16, device="cuda")
        g4, u4 = torch.randn(t, 4 * h, dtype=BF16, device="cuda"), torch.randn(t, 4 * h, dtype=BF16, device="cuda")
        xf = torch.randn(t, h, dtype=torch.float32, device="cuda")
        measure("copy", size, lambda a: a.clone(), [x], 2 * A * e, None, rows)
        measure("add", size, lambda a, c: a + c, [x, y], 3 * A * e, 3 * A * e, rows, [0, 1])
        measure("cast_up", size, lambda a: a.float(), [x], (A + 4) * e, None, rows)
        measure("cast_down", size, lambda a: a.to(BF16), [xf], (A + 4) * e, None, rows)
        measure("grad_accum", size, lambda acc, g: acc.add_(g), [xf, x], (8 + A) * e, None, rows)
        measure("layer_norm", size, lambda a, ww, bb: F.layer_norm(a, (h,), ww, bb), [x, w, b],
                2 * A * e, 3 * A * e, rows, [0, 1, 2])
        measure("rms_norm_eager", size, rms_norm_eager, [x, w], 2 * A * e, 3 * A * e, rows, [0, 1])
        measure("rms_norm", size, lambda a, ww: F.rms_norm(a, (h,), ww, 1e-6), [x, w], 2 * A * e,
                3 * A * e, rows, [0, 1])
        measure("dropout", size, lambda a: F.dropout(a, 0.1, training=True), [x], (2 * A + 1) * e,
                (2 * A + 1) * e, rows)
        measure("layout_copy", size, lambda a: a.view(t // 1024, 1024, h // 128, 128).transpose(1, 2).contiguous(),
                [x], 2 * A * e, 2 * A * e, rows)
        measure("bias_grad_sum", size, lambda a: a.sum(0), [x], A * e, None, rows)
        size4 = {"tokens": t, "hidden": h, "intermediate": 4 * h}
        measure("gelu_tanh", size4, lambda a: F.gelu(a, approximate="tanh"), [g4], 2 * A * f, 3 * A * f, rows)
        measure("gelu_new_eager", size4, new_gelu, [g4], 2 * A * f, 3 * A * f, rows)
        measure("swiglu_eager", size4, lambda g, u: F.silu(g) * u, [g4, u4], 3 * A * f, 5 * A * f, rows, [0, 1])
        del x, y, g4, u4, xf
    for t, v in vocab_shapes:
        size = {"tokens": t, "vocab": v}
        logits = torch.randn(t, v, dtype=BF16, device="cuda")
        labels = torch.randint(0, v, (t,), device="cuda")
        # The upcast logits (Hugging Face's loss: logits.float()), log-softmax and the loss; backward writes
        # the logits' gradient. Fewest bytes: read the logits once forward, read and write once backward.
        measure("cross_entropy_fp32", size, lambda lg, lb: F.cross_entropy(lg.float(), lb), [logits, labels],
                A * t * v, 2 * A * t * v, rows)
        del logits
    for params, tensors in ((256 << 20, 128),):
        size = {"parameters": params, "tensors": tensors}
        for fused in (True, False):
            ps = [torch.nn.Parameter(torch.randn(params // tensors, device="cuda")) for _ in range(tensors)]
            for p in ps:
                p.grad = torch.randn_like(p)
            opt = torch.optim.AdamW(ps, lr=1e-4, fused=fused, foreach=not fused)
            measure("adamw_fused" if fused else "adamw_foreach", size, lambda: opt.step(), [], 28 * params,
                    None, rows)
            del ps, opt
    return rows


def fp8_rows(gemms, casts):
    rows = []
    one = torch.ones((), device="cuda")
    for m, n, k in gemms:
        a, b = torch.randn(m, k, dtype=BF16, device="cuda"), torch.randn(n, k, dtype=BF16, device="cuda")
        a8, b8 = a.to(torch.float8_e4m3fn), b.to(torch.float8_e4m3fn)
        t16 = gpu_seconds(lambda: torch.mm(a, b.t()))
        t8 = gpu_seconds(lambda: torch._scaled_mm(a8, b8.t(), scale_a=one, scale_b=one, out_dtype=BF16))
        rows.append({"kind": "gemm", "m": m, "n": n, "k": k, "bf16_seconds": t16, "fp8_seconds": t8,
                     "bf16_tflops": 2 * m * n * k / t16 / 1e12, "fp8_tflops": 2 * m * n * k / t8 / 1e12})
        del a, b, a8, b8
    for t, h in casts:
        x = torch.randn(t, h, dtype=BF16, device="cuda")

        def cast():  # torchao/Transformer Engine's per-tensor current scaling, eager
            amax = x.abs().amax().float()
            return (x.float() * (448.0 / amax)).to(torch.float8_e4m3fn)

        x8 = cast()
        for name, fn, nbytes in (("amax_scale_cast", cast, (A + 1) * t * h),
                                 ("fp8_transpose", lambda: x8.t().contiguous(), 2 * t * h)):
            sec = gpu_seconds(fn)
            rows.append({"kind": name, "tokens": t, "hidden": h, "seconds": sec, "bytes_min": nbytes,
                         "gbytes_per_s": nbytes / sec / 1e9, "kernels": len(kernel_names(fn)),
                         "kernel_names": kernel_names(fn)[:8]})
        del x, x8
    return rows


def host_rows():
    tiny = torch.zeros(1, device="cuda")
    lin = torch.nn.Linear(1024, 1024, device="cuda", dtype=BF16)
    xin = torch.randn(8, 1024, dtype=BF16, device="cuda", requires_grad=True)
    rows = {"eager_add_host_s": host_seconds(lambda: tiny.add_(1.0), count=500),
            "launch_queue_depth": launch_queue_depth(lambda: tiny.add_(1.0)),
            "linear_autograd_host_s": host_seconds(lambda: lin(xin), count=500),
            "queued_kernel_gpu_s": gpu_seconds(lambda: tiny.add_(1.0), count=500)}
    graph, kernels = torch.cuda.CUDAGraph(), 1000
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        tiny.add_(1.0)
    torch.cuda.current_stream().wait_stream(side)
    with torch.cuda.graph(graph):
        for _ in range(kernels):
            tiny.add_(1.0)
    rows["graph_kernel_gpu_s"] = gpu_seconds(graph.replay, count=1) / kernels
    rows["graph_replay_host_s_per_kernel"] = host_seconds(graph.replay, count=5) / kernels
    return rows


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    p.add_argument("--quick", action="store_true", help="fewer sizes (a smoke test)")
    args = p.parse_args()
    shapes = [(1024, 1024), (4096, 1024), (4096, 2048), (4096, 4096), (8192, 4096), (8192, 8192)]
    vocab = [(4096, 32000), (4096, 50304), (4096, 128256), (8192, 128256)]
    gemms = [(2048, 2048, 2048), (4096, 4096, 4096), (8192, 6144, 4096), (8192, 4096, 4096),
             (8192, 28672, 4096), (8192, 4096, 14336), (4096, 14336, 8192), (16384, 8192, 8192)]
    casts = [(4096, 4096), (8192, 4096), (8192, 14336)]
    if args.quick:
        shapes, vocab, gemms, casts = shapes[:1], vocab[:1], gemms[:1], casts[:1]
    doc = {"record": run_record(args), "method": __doc__}
    for name, fn in (("host", host_rows), ("memory", lambda: memory_rows(shapes, vocab)),
                     ("fp8", lambda: fp8_rows(gemms, casts))):
        try:
            doc[name] = fn()
        except Exception as error:  # keep what the other sections measured
            doc[name + "_error"] = repr(error)
            print(f"{name}: {error!r}", file=sys.stderr)
        torch.cuda.empty_cache()
        with open(args.out, "w") as out:
            json.dump(doc, out, indent=1)
    for row in doc.get("memory", []):
        print(f"{row['op']:20s} {row['pass']:8s} {row.get('tokens', row.get('parameters'))!s:>10} "
              f"{row.get('hidden', row.get('vocab', ''))!s:>6} {row['seconds'] * 1e6:9.1f} us "
              f"{row['gbytes_per_s']:7.0f} GB/s {row['kernels']:3d} kernels")
    for row in doc.get("fp8", []):
        print(json.dumps({k: v for k, v in row.items() if k != "kernel_names"}))
    print(json.dumps(doc.get("host", {})))


if __name__ == "__main__":
    main()
