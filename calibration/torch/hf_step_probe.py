#!/usr/bin/env python3
"""Measure Hugging Face `transformers` training steps on one GPU as many users run them: a model built
from its configuration (random weights, nothing downloaded), FP32 parameters under BF16 autocast, SDPA
attention, eager PyTorch (or torch.compile with --compile), fused AdamW, one micro-batch per step.

Per model: the median step time (forward, backward, optimizer step and zeroing of the gradients) over
--steps after warm-up, the peak memory allocated, and one profiled step: kernels and GPU time per kernel
class (GEMM, attention, optimizer, and the memory-bound rest split into element-wise, reduction,
copy/layout and normalization/softmax kernels), the GPU's busy time and the host's time to issue a step
(step_profile.py). Writes one JSON document (--out). Needs PyTorch with CUDA and transformers. Example:
python3 calibration/torch/hf_step_probe.py --out hf_steps.json
"""
import argparse
import json
import re
import statistics
import sys
import time

import torch

from step_profile import run_record

CLASSES = [("gemm", r"gemm|gemv|cutlass|xmma|nvjet|cublas|splitk"),
           ("attention", r"flash|fmha|attention|cudnn|sdpa"),
           ("optimizer", r"adam|multi_tensor"),
           ("norm_softmax", r"norm|softmax|cross_entropy|nll"),
           ("reduction", r"reduce|sum|mean"),
           ("copy_layout", r"copy|cat|index|gather|scatter|transpose|fill")]

MODELS = {
    "llama-1b": ("llama", dict(hidden_size=2048, intermediate_size=8192, num_hidden_layers=16,
                               num_attention_heads=32, num_key_value_heads=8, vocab_size=128256), 4096, 1),
    "llama-1b-mb2": ("llama", dict(hidden_size=2048, intermediate_size=8192, num_hidden_layers=16,
                                   num_attention_heads=32, num_key_value_heads=8, vocab_size=128256), 4096, 2),
    "llama-3b": ("llama", dict(hidden_size=3072, intermediate_size=8192, num_hidden_layers=28,
                               num_attention_heads=24, num_key_value_heads=8, vocab_size=128256), 2048, 1),
    "gpt2-1.3b": ("gpt2", dict(n_embd=2048, n_layer=24, n_head=16, vocab_size=50257), 2048, 1),
}


def kernel_class(name):
    lowered = name.lower()
    for label, pattern in CLASSES:
        if re.search(pattern, lowered):
            return label
    return "elementwise"


def build(family, config, seq):
    import transformers
    if family == "llama":
        cfg = transformers.LlamaConfig(max_position_embeddings=seq, tie_word_embeddings=False, **config)
        cls = transformers.LlamaForCausalLM
    else:
        cfg = transformers.GPT2Config(n_positions=seq, **config)
        cls = transformers.GPT2LMHeadModel
    try:
        cfg._attn_implementation = "sdpa"
    except (AttributeError, ValueError):  # transformers picks SDPA by default where it can
        pass
    with torch.device("cuda"):
        model = cls(cfg)
    return model, cfg


def measure(name, steps, compile_model):
    family, config, seq, micro_batch = MODELS[name]
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    model, cfg = build(family, config, seq)
    model.train()
    params = sum(p.numel() for p in model.parameters())
    forward = torch.compile(model) if compile_model else model
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5, fused=True)
    ids = torch.randint(0, cfg.vocab_size, (micro_batch, seq), device="cuda")

    def step():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = forward(input_ids=ids, labels=ids).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    t0 = time.perf_counter()
    for _ in range(2):
        step()
    torch.cuda.synchronize()
    warmup_s = time.perf_counter() - t0
    times = []
    for _ in range(steps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        step()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        step()
        torch.cuda.synchronize()
    kernels = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    classes, by_name = {}, {}
    for e in kernels:
        label = kernel_class(e.name)
        count, us = classes.get(label, (0, 0.0))
        classes[label] = (count + 1, us + e.device_time)
        count, us = by_name.get(e.name, (0, 0.0))
        by_name[e.name] = (count + 1, us + e.device_time)
    issue = []
    for _ in range(3):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        step()
        issue.append(time.perf_counter() - t0)
        torch.cuda.synchronize()
    top = sorted(by_name.items(), key=lambda item: -item[1][1])[:30]
    row = {"model": name, "family": family, "config": config, "seq": seq, "micro_batch": micro_batch,
           "compiled": compile_model, "parameters": params, "step_s": statistics.median(times),
           "steps_s": times, "warmup_s": warmup_s, "peak_allocated_bytes": torch.cuda.max_memory_allocated(),
           "kernels": len(kernels), "kernel_busy_s": sum(e.device_time for e in kernels) / 1e6,
           "host_issue_s": statistics.median(issue),
           "classes": {k: {"kernels": c, "seconds": us / 1e6} for k, (c, us) in sorted(classes.items())},
           "top_kernels": [{"name": n[:160], "count": c, "seconds": us / 1e6} for n, (c, us) in top]}
    del model, opt, forward
    return row


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    p.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    p.add_argument("--compile", nargs="*", default=[], choices=list(MODELS),
                   help="models also measured under torch.compile (after the eager ones)")
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--deadline-s", type=float, default=1e9, help="skip what starts after this many seconds")
    args = p.parse_args()
    import transformers
    doc = {"record": run_record(args, transformers=transformers.__version__), "method": __doc__, "rows": []}
    t_start = time.perf_counter()
    for name, compiled in [(m, False) for m in args.models] + [(m, True) for m in args.compile]:
        if time.perf_counter() - t_start > args.deadline_s:
            doc.setdefault("skipped", []).append({"model": name, "compiled": compiled})
            continue
        try:
            row = measure(name, args.steps, compiled)
        except Exception as error:  # out of memory, say: keep the other models' rows
            row = {"model": name, "compiled": compiled, "error": repr(error)[:400]}
        doc["rows"].append(row)
        print(json.dumps({k: v for k, v in row.items() if k not in ("top_kernels", "config", "steps_s")}),
              flush=True)
        with open(args.out, "w") as out:
            json.dump(doc, out, indent=1)
        torch.cuda.empty_cache()


if __name__ == "__main__":
    sys.exit(main())
