#!/usr/bin/env python3
"""Measure what dtsim's transformer compute model predicts, on one GPU, with PyTorch.

Three measurements, written as one JSON document (--out) for comparison with dtsim's prediction of the
same configuration:

  gemms      every GEMM of one GPT layer under tensor-parallel degree tp (forward Y = X W^T, data
             gradient dX = dY W, weight gradient dW = dY^T X), bf16, m = micro_batch x seq tokens;
             TFLOP/s = 2 m n k / time.
  attention  causal scaled-dot-product attention forward and backward (torch SDPA) per backend
             (cudnn, flash), heads / tp heads of head_dim, bf16. FLOPs are reported as dtsim counts
             them: forward 4 b s^2 h d (scores and context, the causal half not subtracted), backward
             2.5 x forward (recomputed scores, two gradient matmuls per product).
  step       a whole GPT (embedding, pre-LN layers with GELU MLP, final LN, logits, cross-entropy)
             forward + backward, bf16 parameters, no dropout, SDPA with the chosen backend; the median
             step time over --steps timed steps after warm-up, and a torch.profiler trace of one step
             (--trace) that `dtsim import kineto` reads. --step-tp N times one tensor-parallel rank's
             share of the model instead (heads / N, ffn / N, vocab / N; no communication), and
             --profile-step adds the step's kernel count, GPU busy time, host issue time and costliest
             kernels (step_profile.py). --optimizer ends each step with AdamW (a whole training
             iteration), --recompute checkpoints every layer (full activation recompute), --zero-grad chooses how
             the gradients are reset before each step.

With --profile GPU.json (a dtsim GPU profile, e.g. one `dtsim calibrate` wrote), the attention rows of
the --step-attention backend set that profile's attention efficiency: executed FLOPs (the causal half;
backward 5 of the forward's 4 matmuls, as dtsim counts them) over time, against the profile's bf16
peak, forward and backward combined by their FLOPs. Three or more shapes (--tp degrees, or runs
merged with --merge) fit attention_efficiency, attention_half_waves and attention_half_keys
(sim/compute/attention_efficiency.hpp); fewer set attention_efficiency to the median alone.

Every timing is the median over repeats of CUDA-event-timed runs after warm-up (each repeat of a single
kernel at least 10 ms of back-to-back calls, so host launch gaps are not counted); inputs are random.
Needs PyTorch with CUDA. Example:

  python3 calibration/torch/transformer_probe.py --layers 24 --hidden 2048 --heads 16 --ffn 8192 \
      --seq 4096 --vocab 131072 --tp 1 2 4 8 --out probe.json --trace step_trace.json
"""
import argparse
import json
import os
import statistics
import sys

try:
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.utils.checkpoint import checkpoint
except ImportError as error:
    sys.exit(f"transformer_probe: needs PyTorch 2.5 or later ({error})")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from attention_fit import write_attention_efficiency  # noqa: E402
from step_profile import kernel_profile, run_record  # noqa: E402

BACKENDS = {"cudnn": SDPBackend.CUDNN_ATTENTION, "flash": SDPBackend.FLASH_ATTENTION}


def timed(fn, repeats, warmup=3, min_seconds=0.0):
    """Median seconds per call. With min_seconds, each timed repeat runs enough back-to-back calls to
    last that long, so that the host's launch gaps of short kernels are not counted."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    calls = 1
    times = []
    for r in range(repeats + (1 if min_seconds else 0)):
        start = torch.cuda.Event(enable_timing=True)
        stop = torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(calls):
            fn()
        stop.record()
        stop.synchronize()
        seconds = start.elapsed_time(stop) / 1e3 / calls
        if min_seconds and r == 0:
            calls = max(1, int(min_seconds / seconds) + 1)
            continue
        times.append(seconds)
    return statistics.median(times), times


def gemm_rows(args, tp):
    m, h, f = args.micro_batch * args.seq, args.hidden, args.ffn
    kv = args.kv_heads or args.heads
    qkv_n = (args.heads + 2 * kv) * (h // args.heads) // tp
    linears = {"qkv": (qkv_n, h), "proj": (h, h // tp), "fc1": (f // tp, h), "fc2": (h, f // tp)}
    rows = []
    for name, (n, k) in linears.items():
        x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
        dy = torch.randn(m, n, device="cuda", dtype=torch.bfloat16)
        for kind, fn, shape in (
            ("forward", lambda: x @ w.t(), (m, n, k)),
            ("dgrad", lambda: dy @ w, (m, k, n)),
            ("wgrad", lambda: dy.t() @ x, (n, k, m)),
        ):
            sec, _ = timed(fn, args.repeats, min_seconds=0.01)
            mm, nn, kk = shape
            rows.append({"tp": tp, "linear": name, "pass": kind, "m": mm, "n": nn, "k": kk, "seconds": sec,
                         "tflops": 2 * mm * nn * kk / sec / 1e12})
    return rows


def attention_rows(args, tp):
    b, s, d = args.micro_batch, args.seq, args.hidden // args.heads
    heads = args.heads // tp
    rows = []
    for name, backend in BACKENDS.items():
        q, k, v = (torch.randn(b, heads, s, d, device="cuda", dtype=torch.bfloat16, requires_grad=True)
                   for _ in range(3))
        do = torch.randn(b, heads, s, d, device="cuda", dtype=torch.bfloat16)
        try:
            with sdpa_kernel(backend):
                fwd_s, _ = timed(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True), args.repeats,
                                 min_seconds=0.01)
                out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
                both_s, _ = timed(lambda: torch.autograd.grad(
                    F.scaled_dot_product_attention(q, k, v, is_causal=True), (q, k, v), do), args.repeats,
                                  min_seconds=0.01)
                del out
        except RuntimeError as e:
            rows.append({"tp": tp, "backend": name, "error": str(e).splitlines()[0]})
            continue
        flops_fwd = 4 * b * s * s * heads * d
        bwd_s = both_s - fwd_s
        rows.append({"tp": tp, "backend": name, "heads": heads, "head_dim": d, "seq": s, "batch": b,
                     "forward_s": fwd_s, "backward_s": bwd_s,
                     "forward_tflops_dtsim_count": flops_fwd / fwd_s / 1e12,
                     "backward_tflops_dtsim_count": 2.5 * flops_fwd / bwd_s / 1e12})
    return rows


class Layer(torch.nn.Module):
    """One pre-LN GPT layer, or with tp > 1 one tensor-parallel rank's share of it (Megatron's column and
    row split: heads / tp attention heads, ffn / tp MLP columns) without the collectives between ranks."""

    def __init__(self, h, heads, f, backend, tp=1):
        super().__init__()
        d = h // heads
        self.ln1, self.ln2 = torch.nn.LayerNorm(h), torch.nn.LayerNorm(h)
        self.qkv, self.proj = torch.nn.Linear(h, 3 * h // tp), torch.nn.Linear(h // tp, h)
        self.fc1, self.fc2 = torch.nn.Linear(h, f // tp), torch.nn.Linear(f // tp, h)
        self.heads, self.head_dim, self.backend = heads // tp, d, backend

    def forward(self, x):
        b, s, h = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, s, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
        with sdpa_kernel(self.backend):
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, s, self.heads * self.head_dim))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x)), approximate="tanh"))


class Gpt(torch.nn.Module):
    """The model, or with --step-tp N one tensor-parallel rank's share (its layers' shares and vocab / N
    rows of the tied embedding and logits), without communication."""

    def __init__(self, args, backend):
        super().__init__()
        tp = args.step_tp
        self.embed = torch.nn.Embedding(args.vocab // tp, args.hidden)
        self.pos = torch.nn.Embedding(args.seq, args.hidden)
        self.layers = torch.nn.ModuleList(
            Layer(args.hidden, args.heads, args.ffn, backend, tp) for _ in range(args.layers))
        self.ln = torch.nn.LayerNorm(args.hidden)
        self.recompute = args.recompute

    def forward(self, tokens, targets):
        x = self.embed(tokens) + self.pos.weight[: tokens.shape[1]]
        for layer in self.layers:
            # --recompute: full activation recompute, one checkpoint per layer (Megatron's "full",
            # uniform method with one layer per chunk): the layer's forward runs again in the backward,
            # through torch.utils.checkpoint's non-reentrant ("full") or reentrant ("full-reentrant",
            # an autograd Function, as Megatron's CheckpointFunction) implementation.
            if self.recompute == "none":
                x = layer(x)
            else:
                x = checkpoint(layer, x, use_reentrant=self.recompute == "full-reentrant")
        logits = F.linear(self.ln(x), self.embed.weight)
        return F.cross_entropy(logits.view(-1, logits.shape[-1]).float(), targets.view(-1))


def step_row(args):
    backend = BACKENDS[args.step_attention]
    model = Gpt(args, backend).cuda().to(torch.bfloat16)
    tokens = torch.randint(0, args.vocab // args.step_tp, (args.micro_batch, args.seq), device="cuda")
    targets = torch.randint(0, args.vocab // args.step_tp, (args.micro_batch, args.seq), device="cuda")

    # --optimizer: the step ends with AdamW over every parameter, as a training iteration does
    # (fused: one multi-tensor kernel launch per group of tensors; foreach: PyTorch's default on CUDA).
    optimizer = None
    if args.optimizer != "none":
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5, fused=args.optimizer == "adamw-fused",
                                      foreach=args.optimizer == "adamw-foreach")

    def step():
        # --zero-grad fill: one fill kernel per parameter's gradient, and autograd then adds each new
        # gradient into it (one add per tensor); set-to-none: autograd writes fresh gradients.
        model.zero_grad(set_to_none=args.zero_grad == "set-to-none")
        model(tokens, targets).backward()
        if optimizer is not None:
            optimizer.step()

    median_s, times = timed(step, args.steps, warmup=3)
    params = sum(p.numel() for p in model.parameters())
    h, s, L, V, B = args.hidden, args.seq, args.layers, args.vocab, args.micro_batch
    # Narayanan et al. SC'21 eq. (model FLOPs, no recompute): 72 B s L h^2 (1 + s/6h + V/12hL) / 3 x 3 passes,
    # a tensor-parallel rank's share of them with --step-tp (its layer norms, not split, left out).
    model_flops = 72 * B * s * L * h * h * (1 + s / (6 * h) + V / (12 * h * L)) / args.step_tp
    if args.recompute != "none":
        model_flops *= 4 / 3  # the forward once more (hardware FLOPs, as the name says no longer model's)
    row = {"params": params, "step_s": median_s, "step_s_all": times, "model_flops": model_flops,
           "model_tflops": model_flops / median_s / 1e12, "attention": args.step_attention, "tp": args.step_tp,
           "peak_memory_bytes": torch.cuda.max_memory_allocated()}
    if args.trace or args.profile_step:
        row.update(kernel_profile(step, args.trace))
    return row


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--layers", type=int, default=24)
    p.add_argument("--hidden", type=int, default=2048)
    p.add_argument("--heads", type=int, default=16)
    p.add_argument("--kv-heads", type=int, default=0)
    p.add_argument("--ffn", type=int, default=8192)
    p.add_argument("--seq", type=int, default=4096)
    p.add_argument("--vocab", type=int, default=131072)
    p.add_argument("--micro-batch", type=int, default=1)
    p.add_argument("--tp", type=int, nargs="+", default=[1])
    p.add_argument("--repeats", type=int, default=20)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--step-attention", choices=sorted(BACKENDS), default="cudnn")
    p.add_argument("--skip-step", action="store_true")
    p.add_argument("--step-tp", type=int, default=1,
                   help="time one tensor-parallel rank's share of the model (no communication)")
    p.add_argument("--optimizer", choices=["none", "adamw-fused", "adamw-foreach"], default="none",
                   help="end each step with an AdamW step over every parameter")
    p.add_argument("--recompute", choices=["none", "full", "full-reentrant"], default="none",
                   help="full activation recompute, one checkpoint per layer")
    p.add_argument("--zero-grad", choices=["fill", "set-to-none"], default="fill",
                   help="zero the gradients in place (fill) or drop them (set-to-none) before each step")
    p.add_argument("--profile-step", action="store_true",
                   help="add the step's kernel count, GPU busy time, host issue time and costliest kernels")
    p.add_argument("--skip-gemms", action="store_true")
    p.add_argument("--trace", default="")
    p.add_argument("--profile", default="", help="GPU profile JSON whose attention efficiency to set")
    p.add_argument("--merge", nargs="*", default=[], help="earlier --out files whose attention rows join the fit")
    p.add_argument("--out", required=True)
    args = p.parse_args()
    if not torch.cuda.is_available():
        print("transformer_probe: no CUDA device is visible", file=sys.stderr)
        return 2
    torch.manual_seed(0)
    doc = {**run_record(args), "gemms": [], "attention": []}
    for tp in args.tp:
        if not args.skip_gemms:
            doc["gemms"] += gemm_rows(args, tp)
        doc["attention"] += attention_rows(args, tp)
    if not args.skip_step:
        doc["step"] = step_row(args)
    with open(args.out, "w") as f:
        json.dump(doc, f, indent=1)
    if args.profile:
        rows = list(doc["attention"])
        for path in args.merge:
            with open(path) as f:
                rows += json.load(f)["attention"]
        e = write_attention_efficiency(args.profile, rows, args.step_attention, doc)
        print(f"{args.profile}: attention_efficiency {e:.3f}")
    for r in doc["gemms"]:
        print(f"tp{r['tp']} {r['linear']:4} {r['pass']:7} {r['m']}x{r['n']}x{r['k']}: {r['tflops']:.0f} TFLOP/s")
    for r in doc["attention"]:
        print(f"tp{r['tp']} attention {r['backend']}: " + (r.get("error") or
              f"fwd {r['forward_tflops_dtsim_count']:.0f} bwd {r['backward_tflops_dtsim_count']:.0f} TFLOP/s"))
    if "step" in doc:
        st = doc["step"]
        print(f"step: {st['step_s']*1e3:.1f} ms, {st['model_tflops']:.0f} model TFLOP/s, {st['params']/1e9:.2f} B params"
              + (f", {st['kernels']} kernels busy {st['kernel_busy_s']*1e3:.1f} ms, host issue "
                 f"{st['host_issue_s']*1e3:.1f} ms" if "kernels" in st else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
