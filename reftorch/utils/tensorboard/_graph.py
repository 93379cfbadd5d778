"""add_graph's GraphDef, read off the autograd graph of one call of the model.

torch traces the model with TorchScript; reftorch has no tracer of that kind, but every
differentiable op it runs leaves a node in the autograd graph, named for the op (AddmmBackward0 is
addmm's). So the inputs are given requires_grad, the model is called once with grad enabled, and
the graph is walked from the outputs: one NodeDef per op (its inputs are the ops, parameters and
model inputs it consumed), one per parameter (named as in named_parameters, '/' for '.'), one per
model input and output ("IO Node", as torch's). Ops autograd does not record (integer arithmetic,
anything under no_grad inside the model) are not in the picture.
"""
from __future__ import annotations

import re

from tensorboard.compat.proto.attr_value_pb2 import AttrValue
from tensorboard.compat.proto.graph_pb2 import GraphDef
from tensorboard.compat.proto.node_def_pb2 import NodeDef
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
from tensorboard.compat.proto.versions_pb2 import VersionDef

from ..._tensor import Tensor
from ...autograd import grad_mode
from ...autograd.graph import AccumulateGrad


def _shape_attr(t):
    shape = TensorShapeProto(dim=[TensorShapeProto.Dim(size=int(d)) for d in t.shape])
    return {"_output_shapes": AttrValue(list=AttrValue.ListValue(shape=[shape])),
            "attr": AttrValue(s=f"{{ dtype : {t.dtype} }}".encode())}


def _flat_tensors(obj):
    if isinstance(obj, Tensor):
        return [obj]
    if isinstance(obj, (tuple, list)):
        return [t for o in obj for t in _flat_tensors(o)]
    if isinstance(obj, dict):
        return [t for o in obj.values() for t in _flat_tensors(o)]
    return []


class _Namer:
    """Stable NodeDef names: inputs, parameters and leaves by what they are, ops by kind and count."""

    def __init__(self, model, copies):
        params = model.named_parameters() if hasattr(model, "named_parameters") else ()
        self.leaves = {id(p): name.replace(".", "/") for name, p in params}
        self.leaves.update({id(c): f"input/input.{i}" for i, c in enumerate(copies)})
        self.names, self.counts, self.nodes = {}, {}, []

    def leaf(self, t):
        name = self.leaves.get(id(t))
        if name is None:
            name = self.leaves[id(t)] = f"leaf/leaf.{len(self.leaves)}"
        op = "IO Node" if name.startswith("input/") else "prim::GetAttr"
        self.nodes.append(NodeDef(name=name, op=op, attr=_shape_attr(t)))
        return name

    def op(self, node):
        kind = re.sub(r"Backward\d*$", "", node.name())
        n = self.counts[kind] = self.counts.get(kind, -1) + 1
        return f"{kind}_{n}" if n else kind, f"aten::{kind[0].lower() + kind[1:]}"


def _walk(outputs, namer):
    """NodeDefs of every op reachable from the outputs, producers first."""
    order, seen, stack = [], set(), [(o.grad_fn, False) for o in outputs if o.grad_fn is not None]
    while stack:                         # iterative post-order: a node after all its producers
        node, done = stack.pop()
        if done:
            order.append(node)
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.append((node, True))
        stack.extend((fn, False) for fn, _ in node.next_functions if fn is not None and id(fn) not in seen)
    for node in order:
        if isinstance(node, AccumulateGrad):
            namer.names[id(node)] = namer.leaf(node.variable)
            continue
        name, op = namer.op(node)
        namer.names[id(node)] = name
        inputs = [namer.names[id(fn)] for fn, _ in node.next_functions if fn is not None]
        namer.nodes.append(NodeDef(name=name, op=op, input=inputs))


def graph(model, args=None, verbose=False):
    if args is None:
        args = ()
    args = tuple(args) if isinstance(args, (tuple, list)) else (args,)
    copies = [a.detach().requires_grad_(a.dtype.is_floating_point) if isinstance(a, Tensor) else a for a in args]
    with grad_mode.enable_grad():
        outputs = _flat_tensors(model(*copies))
    namer = _Namer(model, [c for c in copies if isinstance(c, Tensor)])
    _walk(outputs, namer)
    for i, o in enumerate(outputs):
        source = namer.names.get(id(o.grad_fn)) if o.grad_fn is not None else namer.leaves.get(id(o))
        namer.nodes.append(NodeDef(name=f"output/output.{i}", op="IO Node", input=[source] if source else [],
                                   attr=_shape_attr(o)))
    graph_def = GraphDef(node=namer.nodes, versions=VersionDef(producer=22))
    if verbose:
        print(graph_def)
    return graph_def
