"""Fit of dtsim's fused-attention efficiency model to measured attention rates (no PyTorch needed).

sim/compute/attention_efficiency.hpp models a fused attention kernel's fraction of peak as

    efficiency = E * w / (w + c) * s / (s + s0),   w = batch x heads x ceil(s / 128) / sm_count

(E: attention_efficiency, c: attention_half_waves, s0: attention_half_keys). transformer_probe.py
measures rates and calls write_attention_efficiency to store the fit in a GPU profile.
"""
import json
import math


def fit_attention(points, sm_count):
    """Least squares on the log of efficiency = E w/(w + c) s/(s + s0) (sim/compute/attention_efficiency.hpp),
    w = heads x ceil(s/128) / sm_count, over (seq, batch x heads, efficiency) points; a grid over c and s0
    with E in closed form. Returns (E, c, s0, rms log error)."""
    best = None
    for c in [x / 20 for x in range(0, 121)]:
        for s0 in [x * 128 for x in range(0, 65)]:
            logs = []
            for seq, work, e in points:
                w = work * math.ceil(seq / 128) / sm_count
                logs.append(math.log(e) - math.log(w / (w + c)) - math.log(seq / (seq + s0)))
            log_e = sum(logs) / len(logs)
            err = sum((v - log_e) ** 2 for v in logs)
            if best is None or err < best[0]:
                best = (err, math.exp(log_e), c, s0)
    err, e, c, s0 = best
    return e, c, s0, math.sqrt(err / len(points))


def write_attention_efficiency(path, rows, backend, doc):
    """Sets attention_efficiency (and, given three or more distinct shapes, attention_half_waves and
    attention_half_keys), with their sources, in the GPU profile at path from the measured rows, and
    stores the combined rates as attention_measured."""
    with open(path) as f:
        profile = json.load(f)
    peak = profile["peak_tflops"]["bf16"]
    points = []
    for r in rows:
        if r["backend"] != backend or "error" in r:
            continue
        fwd = r["forward_tflops_dtsim_count"] * 0.5 / peak  # executed: the causal half
        bwd = r["backward_tflops_dtsim_count"] * 0.5 / peak
        points.append((r["seq"], r["batch"] * r["heads"], 3.5 / (1 / fwd + 2.5 / bwd)))
    if not points:
        raise SystemExit(f"transformer_probe: no {backend} attention was measured; the profile is unchanged")
    cases = ", ".join(f"seq {q} x {u} heads: {e:.3f}" for q, u, e in sorted(points))
    run = (f"measured by calibration/torch/transformer_probe.py on {doc['device']} (torch {doc['torch']}, CUDA "
           f"{doc['cuda']}, cuDNN {doc['cudnn']}): causal {backend} attention forward + backward, bf16, against "
           f"peak {peak} TFLOP/s: {cases}")
    sources = profile.setdefault("sources", {})
    profile["attention_measured"] = [{"batch_heads": u, "seq": q, "efficiency": round(e, 3)}
                                     for q, u, e in sorted(points)]
    sources["attention_measured"] = "the measurements attention_efficiency was fitted to: see its source"
    for key in ("attention_half_waves", "attention_half_keys"):
        profile.pop(key, None)
        sources.pop(key, None)
    if len({(q, u) for q, u, _ in points}) >= 3:
        e, c, s0, rms = fit_attention(points, profile["sm_count"])
        profile["attention_efficiency"] = round(e, 3)
        profile["attention_half_waves"] = c
        profile["attention_half_keys"] = s0
        sources["attention_efficiency"] = (f"{run}; fitted with attention_half_waves {c} and attention_half_keys "
                                           f"{s0} (rms error {rms:.1%} on the log)")
        sources["attention_half_waves"] = sources["attention_half_keys"] = "fitted with attention_efficiency: see its source"
    else:
        e = sorted(p[2] for p in points)[len(points) // 2]
        profile["attention_efficiency"] = round(e, 3)
        sources["attention_efficiency"] = f"{run}; the median"
    with open(path, "w") as f:
        json.dump(profile, f, indent=2)
        f.write("\n")
    return profile["attention_efficiency"]
