"""calibration/torch/attention_fit.py: the fit recovers the model it fits, and the profile it writes."""
import json
import math
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "calibration", "torch"))
import attention_fit  # noqa: E402


def model(e, c, s0, seq, work, sm_count=132):
    w = work * math.ceil(seq / 128) / sm_count
    return e * w / (w + c) * seq / (seq + s0)


def row(seq, heads, fwd, bwd):
    # Rates as the probe reports them: FLOPs counted over the full score matrix, so twice the executed.
    return {"backend": "cudnn", "seq": seq, "batch": 1, "heads": heads, "head_dim": 128, "tp": 1,
            "forward_tflops_dtsim_count": 2 * fwd * 1000.0, "backward_tflops_dtsim_count": 2 * bwd * 1000.0}


class AttentionFit(unittest.TestCase):
    def test_recovers_parameters_on_its_grid(self):
        # E 0.7, c 1.5 waves, s0 1024 keys lie on the search grid (c in steps of 0.05, s0 of 128).
        points = [(s, u, model(0.7, 1.5, 1024, s, u)) for s in (2048, 4096, 8192) for u in (4, 16, 64)]
        e, c, s0, rms = attention_fit.fit_attention(points, 132)
        self.assertAlmostEqual(e, 0.7, places=9)
        self.assertAlmostEqual(c, 1.5)
        self.assertEqual(s0, 1024)
        self.assertLess(rms, 1e-9)

    def test_writes_the_fit_or_the_median(self):
        doc = {"device": "GPU", "torch": "t", "cuda": "c", "cudnn": 1}
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "g.json")
            profile = {"peak_tflops": {"bf16": 1000.0}, "sm_count": 132, "attention_efficiency": 1.0,
                       "attention_half_waves": 9.0, "sources": {"attention_half_waves": "old"}}
            with open(path, "w") as f:
                json.dump(profile, f)
            # Equal forward and backward rates: the combined efficiency is that rate.
            rows = [row(s, u, model(0.6, 2.0, 512, s, u), model(0.6, 2.0, 512, s, u))
                    for s in (2048, 8192) for u in (8, 32)]
            self.assertAlmostEqual(attention_fit.write_attention_efficiency(path, rows, "cudnn", doc), 0.6)
            with open(path) as f:
                written = json.load(f)
            self.assertEqual(written["attention_half_waves"], 2.0)
            self.assertEqual(written["attention_half_keys"], 512)
            self.assertIn("seq 2048 x 8 heads", written["sources"]["attention_efficiency"])
            self.assertEqual(len(written["attention_measured"]), 4)
            self.assertEqual(written["attention_measured"][0]["batch_heads"], 8)
            self.assertAlmostEqual(written["attention_measured"][0]["efficiency"],
                                   round(model(0.6, 2.0, 512, 2048, 8), 3))
            # Two shapes: the median alone (of 0.3 and 0.5, the upper), and no half values left.
            rows = [row(4096, 16, 0.3, 0.3), row(4096, 32, 0.5, 0.5)]
            self.assertAlmostEqual(attention_fit.write_attention_efficiency(path, rows, "cudnn", doc), 0.5)
            with open(path) as f:
                written = json.load(f)
            self.assertNotIn("attention_half_waves", written)
            self.assertNotIn("attention_half_keys", written["sources"])


if __name__ == "__main__":
    unittest.main()
