#!/usr/bin/python3
"""Exports the real models cgc is tested and benchmarked on, as ONNX files.

Uses Debian's python3-torch 1.13 and python3-torchvision 0.14 with random
weights (weights=None): nothing is downloaded. The files go into a cache
directory (default: build/models) and are never committed.

    scripts/export_models.py [--out DIR] [--only NAME ...] [--force]
    scripts/export_models.py --set wide    # 29 more networks (below)

Models (file name: what):
  resnet50.onnx          torchvision ResNet-50, input [batch, 3, 224, 224]
  mobilenet_v2.onnx      torchvision MobileNetV2, input [batch, 3, 224, 224]
  efficientnet_b0.onnx   torchvision EfficientNet-B0, input [batch, 3, 224, 224]
  bert_encoder.onnx      a 12-layer BERT-base-sized encoder (hidden 768, 12
                         heads, FFN 3072, GELU, LayerNorm), int64 token ids
                         [batch, sequence] (exported with sequence 128)
  bert_encoder_external/ the same encoder with its weights in an external
                         data file beside the model (model.onnx + weights.bin)
  vit_b_16.onnx          torchvision ViT-B/16, input [batch, 3, 224, 224],
                         exported at opset 14 as older exports are: its layer
                         norms decomposed (ReduceMean, Sub, Pow, Sqrt, Div),
                         attention as torch.nn.MultiheadAttention exports it

The CNNs and the encoder are exported with symbolic batch (and sequence)
dimensions, as users' models usually are; import them with
--input-shape input=1x3x224x224 or --input-shape input_ids=1x128.
The wide set (--set wide, into OUT/wide, static shapes, batch 1): the
torchvision networks of WIDE below, and those of BUILT: a DBNet-style text
detector at 640x640 (text_detector), SSDlite320's backbone and head
(ssdlite320_mobilenet_v3_large), the encoder at sequence 32 (bert_seq32), a
784-512-512-10 perceptron (mlp) and LeNet-5 (lenet).

An existing file is kept unless --force is given.
"""

import argparse
import math
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def export(model, args, path, input_names, output_names, dynamic_axes, opset=17, grad=False):
    import torch

    model.eval()
    with torch.set_grad_enabled(grad):
        torch.onnx.export(model, args, path, input_names=input_names,
                          output_names=output_names, dynamic_axes=dynamic_axes,
                          opset_version=opset, do_constant_folding=True)


def calibrate_with(model, make_input, batches=2):
    """Sets every BatchNorm's running statistics to those of `batches`
    forward passes on make_input() in training mode (cumulative averages)."""
    import torch

    for module in model.modules():
        if isinstance(module, torch.nn.modules.batchnorm._BatchNorm):
            module.reset_running_stats()
            module.momentum = None
    model.train()
    with torch.no_grad():
        for _ in range(batches):
            model(make_input())
    model.eval()


def calibrate(model, size=224, batches=2, batch=4):
    """Sets every BatchNorm's running statistics to those of random images
    (calibrate_with), and gives layers that torchvision zero-initializes
    random weights: with the initial statistics (mean 0, variance 1) the
    activations of a deep random network shrink layer by layer and the
    logits are of scale 1e-9 to 1e-14, which any wrong output "matches"."""
    import torch

    for module in model.modules():
        if isinstance(module, torch.nn.modules.batchnorm._BatchNorm) and module.affine:
            # zero_init_residual-style gammas of 0 silence whole branches.
            with torch.no_grad():
                module.weight.uniform_(0.5, 1.5)
                module.bias.uniform_(-0.2, 0.2)
    calibrate_with(model, lambda: torch.randn(batch, 3, size, size), batches)


def export_vision(name, path):
    import torch
    import torchvision

    constructor = {
        "resnet50": torchvision.models.resnet50,
        "mobilenet_v2": torchvision.models.mobilenet_v2,
        "efficientnet_b0": torchvision.models.efficientnet_b0,
    }[name]
    torch.manual_seed(0)
    model = constructor(weights=None)
    calibrate(model)
    export(model, (torch.randn(1, 3, 224, 224),), path, ["input"], ["logits"],
           {"input": {0: "batch"}, "logits": {0: "batch"}})


# The wider set (--set wide): torchvision's classification and segmentation
# networks, batch 1, static shapes, BatchNorm calibrated. They check what
# the zoo alone cannot (memory plans, conformance of real op mixes) on models
# no issue names. name -> (constructor name, input size).
WIDE = {
    "resnet18": ("resnet18", 224),
    "resnet34": ("resnet34", 224),
    "resnet101": ("resnet101", 224),
    "wide_resnet50_2": ("wide_resnet50_2", 224),
    "resnext50_32x4d": ("resnext50_32x4d", 224),
    "mobilenet_v3_small": ("mobilenet_v3_small", 224),
    "mobilenet_v3_large": ("mobilenet_v3_large", 224),
    "efficientnet_b1": ("efficientnet_b1", 240),
    "regnet_x_400mf": ("regnet_x_400mf", 224),
    "regnet_y_400mf": ("regnet_y_400mf", 224),
    "shufflenet_v2_x1_0": ("shufflenet_v2_x1_0", 224),
    "squeezenet1_1": ("squeezenet1_1", 224),
    "densenet121": ("densenet121", 224),
    "googlenet": ("googlenet", 224),
    "inception_v3": ("inception_v3", 299),
    "mnasnet1_0": ("mnasnet1_0", 224),
    "convnext_tiny": ("convnext_tiny", 224),
    "vgg11_bn": ("vgg11_bn", 224),
    "alexnet": ("alexnet", 224),
    "swin_t": ("swin_t", 224),
    "vit_b_32": ("vit_b_32", 224),
    "fcn_resnet50": ("segmentation.fcn_resnet50", 224),
    "lraspp_mobilenet_v3_large": ("segmentation.lraspp_mobilenet_v3_large", 224),
    "deeplabv3_mobilenet_v3_large": ("segmentation.deeplabv3_mobilenet_v3_large", 224),
}


def export_wide(name, path):
    import torch
    import torchvision

    constructor_name, size = WIDE[name]
    constructor = torchvision.models
    for part in constructor_name.split("."):
        constructor = getattr(constructor, part)
    torch.manual_seed(0)
    kwargs = {"weights": None}
    if name in ("googlenet", "inception_v3"):
        kwargs.update(aux_logits=False, init_weights=True)
    if name.startswith(("fcn", "deeplab", "lraspp")):
        kwargs["weights_backbone"] = None
    model = constructor(**kwargs)
    calibrate(model, size)
    for module in model.modules():
        # Classifiers that torchvision zero-initializes (ViT's head).
        if isinstance(module, torch.nn.Linear) and not module.weight.detach().abs().sum():
            torch.nn.init.normal_(module.weight, std=0.02)

    class Plain(torch.nn.Module):
        """Segmentation models return a dict; export its 'out'."""

        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, x):
            y = self.inner(x)
            return y["out"] if isinstance(y, dict) else y

    export(Plain(model), (torch.randn(1, 3, size, size),), path, ["input"], ["output"],
           None, grad=name.startswith(("vit", "swin")))


# Models of the wide set built here rather than taken whole from torchvision:
# a text detector of the DBNet kind (the issue-29 example), SSDlite's
# detector without its box decoding, the encoder at a second sequence
# length, and small models whose runs are dominated by per-dispatch costs.
# Each builder returns (module, [(input name, shape, "float32" or "int64:N")]).


def decomposed_hardswish(model):
    """Replaces every Hardswish with x * clip(x + 3, 0, 6) / 6, as PaddlePaddle
    and older exporters write it (Add, Clip, Div, Mul instead of HardSwish)."""
    import torch

    class Decomposed(torch.nn.Module):
        def forward(self, x):
            return x * torch.clamp(x + 3.0, 0.0, 6.0) / 6.0

    for name, child in model.named_children():
        if isinstance(child, torch.nn.Hardswish):
            setattr(model, name, Decomposed())
        else:
            decomposed_hardswish(child)
    return model


def text_detector():
    """A DBNet-style text detector at 640x640: MobileNetV3-Large backbone
    (hard-swish decomposed), an FPN with nearest Resize, and the
    probability head (3x3 conv, two 2x2 stride-2 ConvTranspose, sigmoid)."""
    import torch
    import torchvision
    from torch import nn
    from torch.nn import functional

    class TextDetector(nn.Module):
        def __init__(self):
            super().__init__()
            features = torchvision.models.mobilenet_v3_large(weights=None).features
            decomposed_hardswish(features)
            self.stages = nn.ModuleList([features[:4], features[4:7], features[7:13],
                                         features[13:]])
            inner = 96
            self.lateral = nn.ModuleList(nn.Conv2d(c, inner, 1, bias=False)
                                         for c in (24, 40, 112, 960))
            self.smooth = nn.ModuleList(nn.Conv2d(inner, inner // 4, 3, padding=1, bias=False)
                                        for _ in range(4))
            self.head = nn.Sequential(
                nn.Conv2d(inner, inner // 4, 3, padding=1, bias=False),
                nn.BatchNorm2d(inner // 4), nn.ReLU(),
                nn.ConvTranspose2d(inner // 4, inner // 4, 2, 2),
                nn.BatchNorm2d(inner // 4), nn.ReLU(),
                nn.ConvTranspose2d(inner // 4, 1, 2, 2), nn.Sigmoid())

        def forward(self, x):
            levels = []
            for stage in self.stages:
                x = stage(x)
                levels.append(x)
            laterals = [conv(level) for conv, level in zip(self.lateral, levels)]
            for i in range(3, 0, -1):
                laterals[i - 1] = laterals[i - 1] + functional.interpolate(
                    laterals[i], scale_factor=2.0, mode="nearest")
            outs = [conv(level) for conv, level in zip(self.smooth, laterals)]
            outs = [outs[0]] + [functional.interpolate(o, scale_factor=float(2 ** i),
                                                       mode="nearest")
                                for i, o in enumerate(outs[1:], 1)]
            return self.head(torch.cat(outs, 1))

    return TextDetector(), [("input", (1, 3, 640, 640), "float32")]


def ssdlite():
    """torchvision's SSDlite320 (MobileNetV3-Large): backbone and head, the
    box regressions and class logits of its 3234 anchors (box decoding and
    NMS left to the application, as deployed detectors usually do)."""
    import torch
    import torchvision

    detector = torchvision.models.detection.ssdlite320_mobilenet_v3_large(
        weights=None, weights_backbone=None)

    class Raw(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.backbone, self.head = detector.backbone, detector.head

        def forward(self, x):
            out = self.head(list(self.backbone(x).values()))
            return out["bbox_regression"], out["cls_logits"]

    return Raw(), [("input", (1, 3, 320, 320), "float32")]


def bert_seq32():
    """The zoo's encoder with static shapes at sequence 32 (the zoo's is 128)."""
    return bert_encoder(), [("input_ids", (1, 32), "int64:30522"),
                            ("attention_mask", (1, 32), "int64:2")]


def mlp():
    """A 784-512-512-10 perceptron at batch 1: three GEMMs of microseconds."""
    from torch import nn

    return (nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                          nn.Linear(512, 10)),
            [("input", (1, 784), "float32")])


def lenet():
    """LeNet-5 on a 32x32 image (BatchNorm after each convolution)."""
    from torch import nn

    return (nn.Sequential(nn.Conv2d(1, 6, 5), nn.BatchNorm2d(6), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(6, 16, 5), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Flatten(), nn.Linear(400, 120), nn.ReLU(), nn.Linear(120, 84),
                          nn.ReLU(), nn.Linear(84, 10)),
            [("input", (1, 1, 32, 32), "float32")])


BUILT = {
    "text_detector": text_detector,
    "ssdlite320_mobilenet_v3_large": ssdlite,
    "bert_seq32": bert_seq32,
    "mlp": mlp,
    "lenet": lenet,
}


def export_built(name, path):
    """Exports a model of BUILT with static shapes. An integer input's spec
    "int64:N" records N, the bound of its values, in the model's metadata
    (cgc.input_high.NAME), which the benchmarks' input generator reads."""
    import onnx
    import torch

    torch.manual_seed(0)
    model, inputs = BUILT[name]()

    def example(batch=1):
        tensors = []
        for _, shape, spec in inputs:
            if spec.startswith("int64"):
                tensors.append(torch.randint(0, int(spec.split(":")[1]), shape))
            else:
                tensors.append(torch.randn((batch,) + tuple(shape[1:])))
        return tuple(tensors)

    if all(spec == "float32" for _, _, spec in inputs):
        calibrate_with(model, lambda: example(4)[0])
    model.eval()
    outputs = {"ssdlite320_mobilenet_v3_large": ["bbox_regression", "cls_logits"],
               "bert_seq32": ["last_hidden_state", "pooled"]}.get(name, ["output"])
    export(model, example(), path, [n for n, _, _ in inputs], outputs, None)
    proto = onnx.load(path)
    for input_name, _, spec in inputs:
        if ":" in spec:
            entry = proto.metadata_props.add()
            entry.key, entry.value = "cgc.input_high." + input_name, spec.split(":")[1]
    onnx.save(proto, path)


def export_vit(path):
    import torch
    import torchvision

    torch.manual_seed(0)
    model = torchvision.models.vit_b_16(weights=None)
    # torchvision zero-initializes the classifier: its logits would all be 0.
    torch.nn.init.normal_(model.heads.head.weight, std=0.02)
    # With gradients off, torch 1.13's MultiheadAttention takes its fused
    # fast path, which has no ONNX export.
    export(model, (torch.randn(1, 3, 224, 224),), path, ["input"], ["logits"],
           {"input": {0: "batch"}, "logits": {0: "batch"}}, opset=14, grad=True)


def bert_encoder():
    """BERT-base-sized encoder written as explicit modules (no fused
    attention), so that torch 1.13 exports plain MatMul/Softmax/LayerNorm."""
    import torch
    from torch import nn

    hidden, heads, ffn, layers, vocab, positions = 768, 12, 3072, 12, 30522, 512

    class SelfAttention(nn.Module):
        def __init__(self):
            super().__init__()
            self.query = nn.Linear(hidden, hidden)
            self.key = nn.Linear(hidden, hidden)
            self.value = nn.Linear(hidden, hidden)
            self.output = nn.Linear(hidden, hidden)
            self.head_size = hidden // heads

        def split(self, x):
            batch, sequence, _ = x.shape
            return x.view(batch, sequence, heads, self.head_size).permute(0, 2, 1, 3)

        def forward(self, x, mask):
            q, k, v = self.split(self.query(x)), self.split(self.key(x)), self.split(self.value(x))
            scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_size)
            probabilities = torch.softmax(scores + mask, dim=-1)
            context = torch.matmul(probabilities, v).permute(0, 2, 1, 3)
            batch, sequence = x.shape[0], x.shape[1]
            return self.output(context.reshape(batch, sequence, hidden))

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.attention = SelfAttention()
            self.attention_norm = nn.LayerNorm(hidden, eps=1e-12)
            self.intermediate = nn.Linear(hidden, ffn)
            self.activation = nn.GELU()
            self.output = nn.Linear(ffn, hidden)
            self.output_norm = nn.LayerNorm(hidden, eps=1e-12)

        def forward(self, x, mask):
            x = self.attention_norm(x + self.attention(x, mask))
            return self.output_norm(x + self.output(self.activation(self.intermediate(x))))

    class Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.word_embeddings = nn.Embedding(vocab, hidden)
            self.position_embeddings = nn.Embedding(positions, hidden)
            self.token_type_embeddings = nn.Embedding(2, hidden)
            self.embedding_norm = nn.LayerNorm(hidden, eps=1e-12)
            self.layers = nn.ModuleList([Layer() for _ in range(layers)])
            self.pooler = nn.Linear(hidden, hidden)

        def forward(self, input_ids, attention_mask):
            sequence = input_ids.shape[1]
            positions_ids = torch.arange(sequence, dtype=torch.long).unsqueeze(0)
            x = (self.word_embeddings(input_ids) + self.position_embeddings(positions_ids)
                 + self.token_type_embeddings(torch.zeros_like(input_ids)))
            x = self.embedding_norm(x)
            mask = (1.0 - attention_mask[:, None, None, :].to(x.dtype)) * -10000.0
            for layer in self.layers:
                x = layer(x, mask)
            pooled = torch.tanh(self.pooler(x[:, 0]))
            return x, pooled

    torch.manual_seed(0)
    return Encoder()


def export_bert(path):
    import torch

    model = bert_encoder()
    ids = torch.randint(0, 30522, (1, 128), dtype=torch.long)
    mask = torch.ones(1, 128, dtype=torch.long)
    axes = {0: "batch", 1: "sequence"}
    export(model, (ids, mask), path, ["input_ids", "attention_mask"],
           ["last_hidden_state", "pooled"],
           {"input_ids": axes, "attention_mask": axes,
            "last_hidden_state": axes, "pooled": {0: "batch"}})


def export_bert_external(directory, source):
    import onnx

    os.makedirs(directory, exist_ok=True)
    model = onnx.load(source)
    onnx.save_model(model, os.path.join(directory, "model.onnx"),
                    save_as_external_data=True, all_tensors_to_one_file=True,
                    location="weights.bin", size_threshold=1024)


MODELS = ["resnet50", "mobilenet_v2", "efficientnet_b0", "bert_encoder",
          "bert_encoder_external", "vit_b_16"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=os.path.join(ROOT, "build", "models"))
    parser.add_argument("--only", nargs="*", choices=MODELS + sorted(list(WIDE) + list(BUILT)),
                        default=None)
    parser.add_argument("--set", choices=["zoo", "wide"], default="zoo",
                        help="zoo: the models above; wide: %d more networks (into "
                        "OUT/wide)" % (len(WIDE) + len(BUILT)))
    parser.add_argument("--force", action="store_true")
    args = parser.parse_args()
    if args.set == "wide":
        out = os.path.join(args.out, "wide")
        os.makedirs(out, exist_ok=True)
        failed = 0
        for name in args.only or sorted(list(WIDE) + list(BUILT)):
            target = os.path.join(out, name + ".onnx")
            if os.path.exists(target) and not args.force:
                print("%s: exists" % target)
                continue
            try:
                (export_built if name in BUILT else export_wide)(name, target)
            except Exception as error:  # a torch export failure names the model
                print("%s: export failed: %s" % (name, error), file=sys.stderr)
                failed += 1
                continue
            print("%s: %.1f MB" % (target, os.path.getsize(target) / 1e6))
        return 1 if failed else 0
    args.only = args.only or MODELS
    os.makedirs(args.out, exist_ok=True)
    for name in args.only:
        if name == "bert_encoder_external":
            target = os.path.join(args.out, name, "model.onnx")
        else:
            target = os.path.join(args.out, name + ".onnx")
        if os.path.exists(target) and not args.force:
            print("%s: exists" % target)
            continue
        if name == "bert_encoder":
            export_bert(target)
        elif name == "bert_encoder_external":
            source = os.path.join(args.out, "bert_encoder.onnx")
            if not os.path.exists(source):
                export_bert(source)
            export_bert_external(os.path.dirname(target), source)
        elif name == "vit_b_16":
            export_vit(target)
        else:
            export_vision(name, target)
        print("%s: %.1f MB" % (target, os.path.getsize(target) / 1e6))
    return 0


if __name__ == "__main__":
    sys.exit(main())
