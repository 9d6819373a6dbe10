#!/usr/bin/python3
"""Exports the real models cgc is tested and benchmarked on, as ONNX files.

Uses Debian's python3-torch 1.13 and python3-torchvision 0.14 with random
weights (weights=None): nothing is downloaded. The files go into a cache
directory (default: build/models) and are never committed.

    scripts/export_models.py [--out DIR] [--only NAME ...] [--force]

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
    export(model, (torch.randn(1, 3, 224, 224),), path, ["input"], ["logits"],
           {"input": {0: "batch"}, "logits": {0: "batch"}})


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
    parser.add_argument("--only", nargs="*", choices=MODELS, default=MODELS)
    parser.add_argument("--force", action="store_true")
    args = parser.parse_args()
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
