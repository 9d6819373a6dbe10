#!/usr/bin/python3
"""Checks the Input IR imported from an ONNX model against the model.

    check_import.py MODEL.onnx INPUT_IR.mlir OUTPUT=DIMS...

Compares, op type by op type, the number of ONNX nodes with the number of
cgc_op ops they map to one-to-one (Conv, MatMul, Gemm, ...), checks that no
shape computation is left (the ONNX model's Shape/Gather/Concat/... nodes on
int64 values are folded), and that each named graph output has the given
static shape (e.g. logits=1x1000). Prints what differs and exits 1.
"""

import collections
import re
import sys

import onnx

ONE_TO_ONE = {
    "Conv": "convolution",
    "MatMul": "matmul",
    "Gemm": "gemm",
    "LayerNormalization": "layer_norm",
    "Softmax": "softmax",
    "MaxPool": "max_pool",
    "GlobalAveragePool": "global_avg_pool",
    "Erf": "erf",
    "Sigmoid": "sigmoid",
}


def main():
    model_path, ir_path = sys.argv[1], sys.argv[2]
    expected_outputs = dict(arg.split("=", 1) for arg in sys.argv[3:])
    model = onnx.load(model_path, load_external_data=False)
    with open(ir_path) as f:
        ir = f.read()
    onnx_counts = collections.Counter(node.op_type for node in model.graph.node)
    # Layer norms written out op by op (exports before opset 17) import as
    # one layer_norm each: count them as LayerNormalization nodes. Their
    # signature: a Sqrt of an Add of a ReduceMean, read by a Div.
    producer = {out: node for node in model.graph.node for out in node.output}
    readers = collections.defaultdict(list)
    for node in model.graph.node:
        for name in node.input:
            readers[name].append(node)
    for node in model.graph.node:
        if node.op_type != "Sqrt":
            continue
        add = producer.get(node.input[0])
        mean = add is not None and add.op_type == "Add" and any(
            producer.get(i) is not None and producer[i].op_type == "ReduceMean"
            for i in add.input)
        if mean and [r.op_type for r in readers[node.output[0]]] == ["Div"]:
            onnx_counts["LayerNormalization"] += 1
    ir_counts = collections.Counter(re.findall(r"cgc_op\.(\w+)\(", ir))
    errors = []
    for onnx_op, cgc_op in ONE_TO_ONE.items():
        if onnx_counts[onnx_op] != ir_counts[cgc_op]:
            errors.append("%d %s nodes but %d cgc_op.%s ops" % (
                onnx_counts[onnx_op], onnx_op, ir_counts[cgc_op], cgc_op))
    # Integer tensors in the IR are ids, masks or positions, never shapes.
    for line in ir.splitlines():
        if re.search(r"cgc_op\.(concat|gather|reshape|slice|unsqueeze)\(", line) and \
                re.search(r"-> !cgc\.tensor<\d+x!cgc\.int64>$", line.strip()):
            errors.append("a shape computation is left: " + line.strip())
    signature = next(l for l in ir.splitlines() if "cgc.entry_point @main" in l)
    for name, dims in expected_outputs.items():
        wanted = "!cgc.tensor<%sx!cgc." % dims
        match = re.search(r"(!cgc\.tensor<[^>]*>) \{cgc\.name = \"%s\"\}" % re.escape(name),
                          signature)
        if not match or not match.group(1).startswith(wanted):
            errors.append("output %s is %s, expected %s..." % (
                name, match.group(1) if match else "missing", wanted))
    for error in errors:
        print("error: " + error)
    if not errors:
        print("ok: %d ONNX nodes, %d cgc_op ops" % (
            sum(onnx_counts.values()), sum(ir_counts.values())))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
