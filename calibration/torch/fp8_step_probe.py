#!/usr/bin/env python3
"""Measure what FP8 training costs on one GPU as it runs: a GPT's forward and backward pass with its
linear layers in BF16 and in FP8 (e4m3 forward, e5m2 gradients, per-tensor dynamic scales), side by side.

The model is transformer_probe.py's step model (pre-LN layers, PyTorch LayerNorm, tanh GELU, causal SDPA
on the cuDNN backend, tied embedding and logits in BF16, cross-entropy in FP32, micro-batch 1), or with
tp > 1 one tensor-parallel rank's share of it without communication. Its four linear layers per layer
(QKV, attention projection, FC1, FC2) run in turn as:

  bf16        torch.nn.Linear in BF16 (the baseline)
  fp8_eager   tensor-wise dynamic scaling in eager PyTorch, as torchao.float8's default recipe runs
              without torch.compile: per GEMM operand an amax (abs, max), a scale, a saturating cast to
              FP8 (multiply, clamp, convert) and, for the backward GEMMs, a transposed copy, each its own
              kernel; the GEMMs through torch._scaled_mm (cuBLASLt FP8); the bias added by the GEMM
  fp8_fused   the same recipe with each cast compiled (torch.compile): one amax reduction, then one
              kernel that scales, saturates and writes the FP8 tensor and, where a backward GEMM needs
              it, its transposed copy; as torchao.float8 runs under torch.compile and as Transformer
              Engine's fused cast-transpose kernels do
  torchao     torchao.float8.convert_to_float8_training (eager, and compiled with --compile), when
              torchao is installed
  te          Transformer Engine's te.Linear under fp8_autocast (delayed scaling, its fused
              cast-transpose kernels), when transformer_engine is installed

Per model and variant: the forward and backward GPU busy time (the sum of the step's kernel durations,
torch.profiler), the kernel count, the step's median wall time, the host's time to issue a step and the
costliest kernels (step_profile.py). Writes one JSON document (--out). Needs PyTorch with CUDA. Example:
python3 calibration/torch/fp8_step_probe.py --out fp8_steps.json
"""
import argparse
import json
import os
import sys
import time
from types import SimpleNamespace

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from step_profile import kernel_profile, run_record  # noqa: E402
from transformer_probe import BACKENDS, Gpt, timed  # noqa: E402

E4M3, E5M2 = torch.float8_e4m3fn, torch.float8_e5m2

# The Megatron-LM 2024 H100 table's 1.7B model, and one tensor-parallel rank's share of its 7.1B (tp 2) and
# 16B (tp 4) models: the shapes of this project's BF16 step measurement (h100_gpt_step_pytorch.json).
MODELS = {
    "gpt-1.7b": dict(layers=24, hidden=2048, heads=16, ffn=8192, step_tp=1),
    "gpt-7.1b-tp2": dict(layers=30, hidden=4096, heads=32, ffn=16384, step_tp=2),
    "gpt-16b-tp4": dict(layers=32, hidden=6144, heads=48, ffn=24576, step_tp=4),
}


def to_fp8(t, dtype):
    """Tensor-wise dynamic scaling (torchao.float8's hp_tensor_to_float8_dynamic, eager): the amax of
    |t|, scale = FP8 max / amax in FP32, the product saturated to the FP8 range and converted. Returns the
    FP8 tensor and the inverse scale _scaled_mm takes."""
    fmax = torch.finfo(dtype).max
    amax = t.abs().max().float()
    scale = fmax / torch.clamp(amax, min=1e-12)
    return (t.float() * scale).clamp(-fmax, fmax).to(dtype), scale.reciprocal()


def column_major(t):
    """The same matrix stored column-major, as _scaled_mm's second operand must be: a transposed copy."""
    return t.t().contiguous().t()


def _cast_with_transpose(t, dtype):
    fmax = torch.finfo(dtype).max
    scale = fmax / torch.clamp(t.abs().max().float(), min=1e-12)
    q = (t.float() * scale).clamp(-fmax, fmax).to(dtype)
    return q, q.t().contiguous().t(), scale.reciprocal()


_compiled_cast = None


def cast_with_transpose(t, dtype, fused):
    """The FP8 tensor, its column-major copy and the inverse scale: eager (to_fp8, then a transposed
    copy) or, with `fused`, one compiled function (amax, then scale, saturate, convert and transpose)."""
    global _compiled_cast
    if not fused:
        q, inv = to_fp8(t, dtype)
        return q, column_major(q), inv
    if _compiled_cast is None:
        import torch._dynamo
        for limit in ("cache_size_limit", "recompile_limit"):  # one compilation per shape and dtype
            if hasattr(torch._dynamo.config, limit):
                setattr(torch._dynamo.config, limit, 256)
        _compiled_cast = torch.compile(_cast_with_transpose, dynamic=False)
    return _compiled_cast(t, dtype)


class Fp8Matmul(torch.autograd.Function):
    """y = x W^T + b with both operands cast to e4m3; the backward casts the output gradient to e5m2 and
    runs dX = dY W and dW = dY^T X as FP8 GEMMs (the operands' transposed copies made for them)."""

    @staticmethod
    def forward(ctx, x, weight, bias, fused):
        if fused:
            x8, x8_cm, x_inv = cast_with_transpose(x, E4M3, True)
            w8, w8_cm, w_inv = cast_with_transpose(weight, E4M3, True)
        else:  # eager: the transposed copies are made in the backward pass, where they are used
            x8, x_inv = to_fp8(x, E4M3)
            w8, w_inv = to_fp8(weight, E4M3)
            x8_cm = w8_cm = None
        y = torch._scaled_mm(x8, w8.t(), scale_a=x_inv, scale_b=w_inv, bias=bias, out_dtype=torch.bfloat16)
        ctx.save_for_backward(x8_cm if fused else x8, x_inv, w8_cm if fused else w8, w_inv)
        ctx.fused = fused
        return y

    @staticmethod
    def backward(ctx, gy):
        x8, x_inv, w8, w_inv = ctx.saved_tensors
        if ctx.fused:  # the saved operands are already column-major
            g8, g8_cm, g_inv = cast_with_transpose(gy.contiguous(), E5M2, True)
            x_cm, w_cm, g_t = x8, w8, g8_cm.t()
        else:
            g8, g_inv = to_fp8(gy, E5M2)
            x_cm, w_cm, g_t = column_major(x8), column_major(w8), g8.t().contiguous()
        dx = torch._scaled_mm(g8, w_cm, scale_a=g_inv, scale_b=w_inv, out_dtype=torch.bfloat16)
        dw = torch._scaled_mm(g_t, x_cm, scale_a=g_inv, scale_b=x_inv, out_dtype=torch.bfloat16)
        return dx, dw, gy.sum(0), None


class Fp8Linear(torch.nn.Linear):
    fused = False

    def forward(self, x):
        shape = x.shape
        y = Fp8Matmul.apply(x.reshape(-1, shape[-1]), self.weight, self.bias, self.fused)
        return y.view(*shape[:-1], y.shape[-1])


def swap_linears(model, make):
    for layer in model.layers:
        for name in ("qkv", "proj", "fc1", "fc2"):
            old = getattr(layer, name)
            setattr(layer, name, make(old))


def fp8_linear(old, fused):
    new = Fp8Linear(old.in_features, old.out_features, device="cuda", dtype=torch.bfloat16)
    new.load_state_dict(old.state_dict())
    new.fused = fused
    return new


def build(shape, variant, args):
    ns = SimpleNamespace(vocab=args.vocab, seq=args.seq, **shape)
    model = Gpt(ns, BACKENDS["cudnn"]).cuda().to(torch.bfloat16)
    context = None
    if variant in ("fp8_eager", "fp8_fused"):
        swap_linears(model, lambda old: fp8_linear(old, variant == "fp8_fused"))
    elif variant.startswith("torchao"):
        from torchao.float8 import convert_to_float8_training
        convert_to_float8_training(model, module_filter_fn=lambda m, fqn: fqn.startswith("layers."))
        if variant == "torchao_compiled":
            model = torch.compile(model)
    elif variant == "te":
        import transformer_engine.pytorch as te
        from transformer_engine.common.recipe import DelayedScaling, Format

        def te_linear(old):
            new = te.Linear(old.in_features, old.out_features, bias=True, params_dtype=torch.bfloat16)
            return new
        swap_linears(model, te_linear)
        context = (te.fp8_autocast, DelayedScaling(fp8_format=Format.HYBRID, amax_history_len=16,
                                                   amax_compute_algo="max"))
    return model, context


def measure(name, shape, variant, args):
    model, context = build(shape, variant, args)
    vocab = args.vocab // shape["step_tp"]
    tokens = torch.randint(0, vocab, (1, args.seq), device="cuda")
    targets = torch.randint(0, vocab, (1, args.seq), device="cuda")

    def step():
        model.zero_grad(set_to_none=False)
        if context:
            with context[0](enabled=True, fp8_recipe=context[1]):
                loss = model(tokens, targets)
        else:
            loss = model(tokens, targets)
        loss.backward()

    torch.cuda.reset_peak_memory_stats()
    step_s, times = timed(step, args.steps, warmup=3)
    row = {"model": name, **shape, "seq": args.seq, "vocab": args.vocab, "micro_batch": 1, "variant": variant,
           "step_s": step_s, "step_s_all": times, "peak_memory_bytes": torch.cuda.max_memory_allocated()}
    row.update(kernel_profile(step))
    del model
    torch.cuda.empty_cache()
    return row


def available_variants(compile_too):
    variants = ["bf16", "fp8_eager", "fp8_fused"]
    versions = {}
    try:
        import torchao
        versions["torchao"] = getattr(torchao, "__version__", "?")
        variants.append("torchao")
        if compile_too:
            variants.append("torchao_compiled")
    except ImportError:
        pass
    try:
        import transformer_engine
        versions["transformer_engine"] = getattr(transformer_engine, "__version__", "?")
        variants.append("te")
    except ImportError:
        pass
    return variants, versions


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    p.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    p.add_argument("--seq", type=int, default=4096)
    p.add_argument("--vocab", type=int, default=131072)
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--variants", nargs="*", default=[], help="only these of the available variants")
    p.add_argument("--compile", action="store_true", help="also time torchao's recipe under torch.compile")
    p.add_argument("--deadline-s", type=float, default=1e9, help="skip what starts after this many seconds")
    args = p.parse_args()
    if not torch.cuda.is_available():
        print("fp8_step_probe: no CUDA device is visible", file=sys.stderr)
        return 2
    torch.manual_seed(0)
    variants, versions = available_variants(args.compile)
    if args.variants:
        variants = [v for v in variants if v in args.variants]
    doc = {**run_record(args, **versions), "variants": variants, "rows": [], "errors": []}
    start = time.time()
    for name in args.models:
        for variant in variants:
            if time.time() - start > args.deadline_s:
                doc["errors"].append({"model": name, "variant": variant, "error": "skipped: deadline"})
                continue
            try:
                row = measure(name, MODELS[name], variant, args)
            except Exception as error:  # a variant this software cannot run is recorded, not fatal
                doc["errors"].append({"model": name, "variant": variant, "error": repr(error)[:400]})
                torch.cuda.empty_cache()
                continue
            doc["rows"].append(row)
            print(f"{name} {variant}: step {row['step_s']*1e3:.1f} ms, busy {row['kernel_busy_s']*1e3:.1f} ms, "
                  f"{row['kernels']} kernels, issue {row['host_issue_s']*1e3:.1f} ms", flush=True)
            with open(args.out, "w") as f:
                json.dump(doc, f, indent=1)
    with open(args.out, "w") as f:
        json.dump(doc, f, indent=1)
    for e in doc["errors"]:
        print(f"{e['model']} {e['variant']}: {e['error']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
