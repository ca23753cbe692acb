#!/usr/bin/env python3
"""Writes models/layer_table/tables/*.json: per-layer tables derived from the published architectures.

Not part of the build: the JSON files are committed; this script records how every number was derived
(conv output sizes, implicit-GEMM shapes, FLOPs = 2 x multiply-adds, parameter tensors, output
activation bytes in fp32). Run: python3 models/layer_table/generate_tables.py
"""
import json
import os

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tables")
FP32 = 4


def add_layer(name, values, epilogue):
    """A residual addition of `values` values per sample: reads the branch's output and the shortcut,
    writes their sum (one add per value), then its epilogue (ResNet's ReLU, BERT's layer norm)."""
    return {"name": name, "kind": "add", "forward_flops": values, "tensors": [],
            "activation_bytes": values * FP32, "input_bytes": 2 * values * FP32, "epilogue": epilogue}


class Net:
    def __init__(self):
        self.layers = []

    def conv(self, name, cin, cout, kh, kw, hin, win, stride=1, ph=0, pw=0, epilogue="bn_relu", bias=False):
        hout = (hin + 2 * ph - kh) // stride + 1
        wout = (win + 2 * pw - kw) // stride + 1
        k = cin * kh * kw
        m = hout * wout
        tensors = [k * cout]
        if epilogue.startswith("bn"):
            tensors += [cout, cout]  # gamma, beta
        if bias:
            tensors.append(cout)
        self.layers.append({"name": name, "kind": "conv", "gemm": {"m": m, "n": cout, "k": k},
                            "forward_flops": 2 * m * cout * k, "tensors": tensors,
                            "activation_bytes": m * cout * FP32, "epilogue": epilogue})
        return cout, hout, wout

    def fc(self, name, cin, cout, epilogue="none", rows=1):
        self.layers.append({"name": name, "kind": "fc", "gemm": {"m": rows, "n": cout, "k": cin},
                            "forward_flops": 2 * rows * cout * cin, "tensors": [cin * cout, cout],
                            "activation_bytes": rows * cout * FP32, "epilogue": epilogue})

    def add(self, name, c, h, w, epilogue="relu"):
        self.layers.append(add_layer(name, h * w * c, epilogue))

    def pool(self, name, c, hin, win, k, stride, pad=0):
        hout = (hin + 2 * pad - k) // stride + 1
        wout = (win + 2 * pad - k) // stride + 1
        self.layers.append({"name": name, "kind": "pool", "forward_flops": hout * wout * c * k * k,
                            "tensors": [], "activation_bytes": hout * wout * c * FP32,
                            "input_bytes": hin * win * c * FP32, "epilogue": "none"})
        return c, hout, wout


def resnet(depth, v1=False):
    """v1.5 (torchvision, tf_cnn_benchmarks resnet50_v1.5): a stage's first block strides in its 3x3
    convolution. v1 (He et al. 2016; tf_cnn_benchmarks' resnet50/101 of 2017, resnet_model.py
    bottleneck_block): it strides in the first 1x1 convolution, and the projection shortcut is a plain
    convolution (use_batch_norm=False), created before the block's other convolutions."""
    blocks = {50: [3, 4, 6, 3], 101: [3, 4, 23, 3]}[depth]
    n = Net()
    c, h, w = n.conv("conv1", 3, 64, 7, 7, 224, 224, 2, 3, 3)
    c, h, w = n.pool("pool1", c, h, w, 3, 2, 1)
    for stage, count in enumerate(blocks):
        width = 64 * 2 ** stage
        for b in range(count):
            stride = 2 if (b == 0 and stage > 0) else 1
            p = f"conv{stage + 2}_{b + 1}"
            cin, hin, win = c, h, w
            if v1:
                if b == 0:
                    n.conv(p + "_shortcut", cin, width * 4, 1, 1, hin, win, stride, epilogue="none")
                c1, h1, w1 = n.conv(p + "_1x1a", cin, width, 1, 1, hin, win, stride)
                c2, h2, w2 = n.conv(p + "_3x3", c1, width, 3, 3, h1, w1, 1, 1, 1)
            else:
                c1, h1, w1 = n.conv(p + "_1x1a", cin, width, 1, 1, hin, win)
                c2, h2, w2 = n.conv(p + "_3x3", c1, width, 3, 3, h1, w1, stride, 1, 1)
            c3, h3, w3 = n.conv(p + "_1x1b", c2, width * 4, 1, 1, h2, w2, epilogue="bn")
            if b == 0 and not v1:
                n.conv(p + "_shortcut", cin, width * 4, 1, 1, hin, win, stride, epilogue="bn")
            n.add(p + "_add", c3, h3, w3)  # y = relu(branch + shortcut)
            c, h, w = c3, h3, w3
    c, h, w = n.pool("avgpool", c, h, w, h, 1)
    n.fc("fc1000", 2048, 1000)
    return n.layers


def vgg16():
    n = Net()
    cfg = [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"]
    c, h, w = 3, 224, 224
    block, idx = 1, 1
    for v in cfg:
        if v == "M":
            c, h, w = n.pool(f"pool{block}", c, h, w, 2, 2)
            block, idx = block + 1, 1
        else:
            c, h, w = n.conv(f"conv{block}_{idx}", c, v, 3, 3, h, w, 1, 1, 1, epilogue="relu", bias=True)
            idx += 1
    n.fc("fc6", 512 * 7 * 7, 4096, "relu")
    n.fc("fc7", 4096, 4096, "relu")
    n.fc("fc8", 4096, 1000)
    return n.layers


def inception_v3():
    n = Net()
    C = n.conv

    def conv(name, cin, cout, k, hw, stride=1, pad=(0, 0)):
        kh, kw = k if isinstance(k, tuple) else (k, k)
        return C(name, cin, cout, kh, kw, hw[0], hw[1], stride, pad[0], pad[1])

    c, h, w = conv("Conv2d_1a_3x3", 3, 32, 3, (299, 299), 2)
    c, h, w = conv("Conv2d_2a_3x3", c, 32, 3, (h, w))
    c, h, w = conv("Conv2d_2b_3x3", c, 64, 3, (h, w), 1, (1, 1))
    c, h, w = n.pool("MaxPool_3a", c, h, w, 3, 2)
    c, h, w = conv("Conv2d_3b_1x1", c, 80, 1, (h, w))
    c, h, w = conv("Conv2d_4a_3x3", c, 192, 3, (h, w))
    c, h, w = n.pool("MaxPool_5a", c, h, w, 3, 2)

    def block_a(p, cin, pool_features, hw):
        conv(p + "_b1x1", cin, 64, 1, hw)
        conv(p + "_b5x5_1", cin, 48, 1, hw)
        conv(p + "_b5x5_2", 48, 64, 5, hw, 1, (2, 2))
        conv(p + "_b3x3dbl_1", cin, 64, 1, hw)
        conv(p + "_b3x3dbl_2", 64, 96, 3, hw, 1, (1, 1))
        conv(p + "_b3x3dbl_3", 96, 96, 3, hw, 1, (1, 1))
        n.pool(p + "_pool", cin, hw[0], hw[1], 3, 1, 1)
        conv(p + "_bpool", cin, pool_features, 1, hw)
        return 64 + 64 + 96 + pool_features

    hw = (h, w)
    c = block_a("Mixed_5b", c, 32, hw)
    c = block_a("Mixed_5c", c, 64, hw)
    c = block_a("Mixed_5d", c, 64, hw)
    # Mixed_6a (reduction)
    _, h2, w2 = conv("Mixed_6a_b3x3", c, 384, 3, hw, 2)
    conv("Mixed_6a_b3x3dbl_1", c, 64, 1, hw)
    conv("Mixed_6a_b3x3dbl_2", 64, 96, 3, hw, 1, (1, 1))
    conv("Mixed_6a_b3x3dbl_3", 96, 96, 3, hw, 2)
    n.pool("Mixed_6a_pool", c, hw[0], hw[1], 3, 2)
    c, hw = 384 + 96 + c, (h2, w2)

    def block_c(p, cin, c7, hw):
        conv(p + "_b1x1", cin, 192, 1, hw)
        conv(p + "_b7x7_1", cin, c7, 1, hw)
        conv(p + "_b7x7_2", c7, c7, (1, 7), hw, 1, (0, 3))
        conv(p + "_b7x7_3", c7, 192, (7, 1), hw, 1, (3, 0))
        conv(p + "_b7x7dbl_1", cin, c7, 1, hw)
        conv(p + "_b7x7dbl_2", c7, c7, (7, 1), hw, 1, (3, 0))
        conv(p + "_b7x7dbl_3", c7, c7, (1, 7), hw, 1, (0, 3))
        conv(p + "_b7x7dbl_4", c7, c7, (7, 1), hw, 1, (3, 0))
        conv(p + "_b7x7dbl_5", c7, 192, (1, 7), hw, 1, (0, 3))
        n.pool(p + "_pool", cin, hw[0], hw[1], 3, 1, 1)
        conv(p + "_bpool", cin, 192, 1, hw)
        return 768

    c = block_c("Mixed_6b", c, 128, hw)
    c = block_c("Mixed_6c", c, 160, hw)
    c = block_c("Mixed_6d", c, 160, hw)
    c = block_c("Mixed_6e", c, 192, hw)
    # Mixed_7a (reduction)
    conv("Mixed_7a_b3x3_1", c, 192, 1, hw)
    _, h3, w3 = conv("Mixed_7a_b3x3_2", 192, 320, 3, hw, 2)
    conv("Mixed_7a_b7x7x3_1", c, 192, 1, hw)
    conv("Mixed_7a_b7x7x3_2", 192, 192, (1, 7), hw, 1, (0, 3))
    conv("Mixed_7a_b7x7x3_3", 192, 192, (7, 1), hw, 1, (3, 0))
    conv("Mixed_7a_b7x7x3_4", 192, 192, 3, hw, 2)
    n.pool("Mixed_7a_pool", c, hw[0], hw[1], 3, 2)
    c, hw = 320 + 192 + c, (h3, w3)

    def block_e(p, cin, hw):
        conv(p + "_b1x1", cin, 320, 1, hw)
        conv(p + "_b3x3_1", cin, 384, 1, hw)
        conv(p + "_b3x3_2a", 384, 384, (1, 3), hw, 1, (0, 1))
        conv(p + "_b3x3_2b", 384, 384, (3, 1), hw, 1, (1, 0))
        conv(p + "_b3x3dbl_1", cin, 448, 1, hw)
        conv(p + "_b3x3dbl_2", 448, 384, 3, hw, 1, (1, 1))
        conv(p + "_b3x3dbl_3a", 384, 384, (1, 3), hw, 1, (0, 1))
        conv(p + "_b3x3dbl_3b", 384, 384, (3, 1), hw, 1, (1, 0))
        n.pool(p + "_pool", cin, hw[0], hw[1], 3, 1, 1)
        conv(p + "_bpool", cin, 192, 1, hw)
        return 2048

    c = block_e("Mixed_7b", c, hw)
    c = block_e("Mixed_7c", c, hw)
    n.pool("avgpool", c, hw[0], hw[1], hw[0], 1)
    n.fc("fc1000", 2048, 1000)
    return n.layers


def bert(layers, hidden, heads, seq=128, vocab=30522):
    L = []
    ffn = 4 * hidden
    L.append({"name": "word_embeddings", "kind": "embedding", "tensors": [vocab * hidden], "sparse": True,
              "lookups_per_sample": seq, "row_params": hidden, "forward_flops": 0,
              "activation_bytes": seq * hidden * FP32, "epilogue": "none"})
    L.append({"name": "position_type_embeddings_ln", "kind": "norm",
              "tensors": [512 * hidden, 2 * hidden, hidden, hidden], "forward_flops": 0,
              "activation_bytes": seq * hidden * FP32, "epilogue": "none"})
    for i in range(layers):
        p = f"layer{i}"

        def fc(name, k, nout, epilogue="none"):
            L.append({"name": f"{p}_{name}", "kind": "fc", "gemm": {"m": seq, "n": nout, "k": k},
                      "forward_flops": 2 * seq * nout * k, "tensors": [k * nout, nout],
                      "activation_bytes": seq * nout * FP32, "epilogue": epilogue})

        def residual(name):
            L.append(add_layer(f"{p}_{name}", seq * hidden, "layernorm"))

        fc("qkv", hidden, 3 * hidden)
        L.append({"name": f"{p}_attention", "kind": "attention", "tensors": [],
                  "gemm": {"m": seq, "n": seq, "k": hidden // heads, "batch": heads},
                  "forward_flops": 2 * 2 * seq * seq * hidden,
                  "activation_bytes": heads * seq * seq * FP32 + seq * hidden * FP32, "epilogue": "softmax"})
        # Each sublayer's output is added to its input before the layer norm (post-LN BERT): the norm's
        # parameters stay with the sublayer's last projection, the addition carries the norm.
        fc("attn_out", hidden, hidden)
        L[-1]["tensors"] += [hidden, hidden]
        residual("attn_residual")
        fc("ffn_in", hidden, ffn, "gelu")
        fc("ffn_out", ffn, hidden)
        L[-1]["tensors"] += [hidden, hidden]
        residual("ffn_residual")
    L.append({"name": "pooler", "kind": "fc", "gemm": {"m": 1, "n": hidden, "k": hidden},
              "forward_flops": 2 * hidden * hidden, "tensors": [hidden * hidden, hidden],
              "activation_bytes": hidden * FP32, "epilogue": "none"})
    return L


IMAGENET_EXAMPLES = 1281167
IMAGENET_B_NOISE = 1.0e4
BERT_B_NOISE = 2.0e8 / 2.0 ** (1 / 0.21) / 128


def imagenet_convergence():
    steps_256 = 90 * IMAGENET_EXAMPLES / 256
    return {"b_noise": IMAGENET_B_NOISE, "s_min": round(steps_256 / (1 + IMAGENET_B_NOISE / 256)),
            "target": "ImageNet top-1 accuracy of the 90-epoch, batch-256 reference schedule",
            "source": "b_noise: McCandlish et al. 2018 (arXiv 1812.06162) Fig. 4, ImageNet critical batch ~1e4 images (read off the figure, as quoted in secondary notes; the noise scale at a fixed loss is about independent of model size, Sec. 4, so one value serves every ImageNet CNN: an assumption). s_min: derived from the reference schedule of Goyal et al. 2017 (arXiv 1706.02677): 90 epochs of 1,281,167 images at batch 256 = 450,410 steps = S(256) = s_min (1 + b_noise / 256)."}


def bert_convergence():
    return {"b_noise": round(BERT_B_NOISE), "s_min": round(1.0e6 / (1 + BERT_B_NOISE / 512)),
            "target": "the BERT pre-training loss of the 1M-step reference run",
            "source": "b_noise: Kaplan et al. 2020 (arXiv 2001.08361) Sec. 5.1, B_crit(L) = 2e8 tokens / L^(1/0.21), at an assumed loss L = 2.0 nats/token (assumption: BERT's masked-LM loss is not WebText2's), 7.37e6 tokens = 57,600 sequences of 128 tokens. s_min: derived from the reference run as cited by You et al. 2020 (LAMB, arXiv 1904.00962, abstract): 1M iterations at batch 512 = S(512) = s_min (1 + b_noise / 512)."}


CNN_SRC = "tf_cnn_benchmarks / torchvision layer definitions; FLOPs counted as 2 x multiply-adds of convolutions and fully connected layers, derived by models/layer_table/generate_tables.py"
TABLES = [
    ("resnet-50", "ResNet-50 (v1.5)", "image", 224, resnet(50),
     "He et al. 2016, 'Deep Residual Learning for Image Recognition', Table 1 (50-layer: [3,4,6,3] bottleneck blocks); stride on the 3x3 convolution as in torchvision and tf_cnn_benchmarks resnet50_v1.5. " + CNN_SRC),
    ("resnet-50-v1", "ResNet-50 (v1, tf_cnn_benchmarks 2017)", "image", 224, resnet(50, v1=True),
     "He et al. 2016, Table 1 (50-layer: [3,4,6,3] bottleneck blocks), as tf_cnn_benchmarks built it in 2017 (tensorflow/benchmarks scripts/tf_cnn_benchmarks/resnet_model.py, bottleneck_block): a stage's first block strides in its first 1x1 convolution, the projection shortcut has no batch norm and is created first. The ResNet-50 of TensorFlow's published benchmarks of 2017. " + CNN_SRC),
    ("resnet-101", "ResNet-101 (v1.5)", "image", 224, resnet(101),
     "He et al. 2016, Table 1 (101-layer: [3,4,23,3] bottleneck blocks); stride on the 3x3 convolution. " + CNN_SRC),
    ("resnet-101-v1", "ResNet-101 (v1, tf_cnn_benchmarks 2017)", "image", 224, resnet(101, v1=True),
     "He et al. 2016, Table 1 (101-layer: [3,4,23,3] bottleneck blocks), as tf_cnn_benchmarks built it in 2017 (tensorflow/benchmarks scripts/tf_cnn_benchmarks/resnet_model.py, bottleneck_block): a stage's first block strides in its first 1x1 convolution, the projection shortcut has no batch norm and is created first. The model of the Horovod benchmarks (arXiv 1802.05799). " + CNN_SRC),
    ("vgg-16", "VGG-16", "image", 224, vgg16(),
     "Simonyan and Zisserman 2015, 'Very Deep Convolutional Networks for Large-Scale Image Recognition', Table 1 configuration D (13 3x3 convolutions + 3 fully connected). " + CNN_SRC),
    ("inception-v3", "Inception-v3", "image", 299, inception_v3(),
     "Szegedy et al. 2016, 'Rethinking the Inception Architecture for Computer Vision', Table 1 and Figures 5-7, with the exact branch widths of the reference implementation (torchvision inception_v3 / TF-slim inception_v3, 299x299 input; auxiliary classifier omitted). " + CNN_SRC),
    ("bert-base", "BERT-Base (uncased), sequence 128", "sequence", 128, bert(12, 768, 12),
     "Devlin et al. 2019, BERT, Sec. 3 (BERT_BASE: L=12, H=768, A=12, feed-forward 4H), vocabulary 30522 and 512 positions from the released config; per sample = one 128-token sequence (phase-1 pre-training length). The word embedding is a sparse variable (only looked-up rows get gradients). Output heads omitted."),
    ("bert-large", "BERT-Large (uncased), sequence 128", "sequence", 128, bert(24, 1024, 16),
     "Devlin et al. 2019, BERT, Sec. 3 (BERT_LARGE: L=24, H=1024, A=16, feed-forward 4H), vocabulary 30522 and 512 positions from the released config; per sample = one 128-token sequence. The word embedding is a sparse variable. Output heads omitted."),
]

if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    for tid, name, unit, size, layers, source in TABLES:
        conv = imagenet_convergence() if unit == "image" else bert_convergence()
        doc = {"schema_version": 1, "id": tid, "name": name, "source": source, "sample": unit,
               "input_size": size, "convergence": conv, "layers": layers}
        params = sum(sum(l["tensors"]) for l in layers)
        flops = sum(l["forward_flops"] for l in layers)
        print(f"{tid:14s} layers {len(layers):4d} params {params / 1e6:8.2f} M  forward {flops / 1e9:7.2f} GFLOP")
        with open(os.path.join(OUT, tid + ".json"), "w") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")
