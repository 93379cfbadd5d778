"""The backward engine: micrograd's idea, made iterative.

1. Walk the graph from the roots once (an explicit stack, no recursion) and count, for every node,
   how many edges lead into it.
2. Run nodes when every edge into them has delivered its gradient (dependency count zero), so each
   node runs once with the sum of its output gradients; a 100,000-node chain needs no recursion.
3. Gradients whose shape differs from their input's (broadcasting) are summed back here, once, for
   every op; formulas never un-broadcast.
"""
from __future__ import annotations

import traceback

from .graph import AccumulateGrad, Node
from . import grad_mode


def _edge_of(t):
    """(node, output_nr) that receives the gradient of tensor t."""
    if t.grad_fn is not None:
        return t.grad_fn, t._output_nr
    if t.requires_grad:
        if t._accum is None:
            t._accum = AccumulateGrad(t)
        return t._accum, 0
    return None


def _collect(roots):
    """Dependency counts of every node reachable from the roots."""
    deps = {}
    seen = set()
    stack = [n for n in roots]
    for n in roots:
        seen.add(n)
    while stack:
        node = stack.pop()
        for edge in node.next_functions:
            if edge is None:
                continue
            nxt = edge[0]
            deps[nxt] = deps.get(nxt, 0) + 1
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return deps, seen


def _needed(all_nodes, targets):
    """Nodes from which some target node is reachable (autograd.grad runs only these)."""
    parents = {}
    for node in all_nodes:
        for edge in node.next_functions:
            if edge is not None:
                parents.setdefault(edge[0], []).append(node)
    need = set(targets)
    stack = list(targets)
    while stack:
        n = stack.pop()
        for p in parents.get(n, ()):
            if p not in need:
                need.add(p)
                stack.append(p)
    return need


def _add(a, b):
    if a is None:
        return b
    if b is None:
        return a
    return a + b


def run_backward(roots, root_grads, retain_graph=False, create_graph=False, inputs=None, allow_unused=False,
                 accumulate=True):
    """Backpropagate root_grads from roots. With `inputs` and accumulate=False, return their grads
    (autograd.grad); with accumulate=True, add into the .grad of leaves (only `inputs` if given)."""
    from .. import _functional as F

    edges = []
    for r, g in zip(roots, root_grads):
        e = _edge_of(r)
        if e is None:
            raise RuntimeError("element 0 of tensors does not require grad and does not have a grad_fn")
        edges.append((e, g))
    root_nodes = list({id(e[0]): e[0] for e, _ in edges}.values())
    deps, nodes = _collect(root_nodes)

    capture = None
    if inputs is not None:
        capture = {}
        targets = []
        for i, t in enumerate(inputs):
            e = _edge_of(t)
            if e is None:
                raise RuntimeError("One of the differentiated Tensors does not require grad")
            capture.setdefault((id(e[0]), e[1]), []).append(i)
            targets.append(e[0])
        needed = _needed(nodes, targets)
    else:
        needed = None

    buffers = {}
    for (node, nr), g in edges:
        slot = buffers.setdefault(node, [None] * _n_outputs(node))
        slot[nr] = _add(slot[nr], g)
    results = [None] * len(inputs) if inputs is not None else None

    ready = [n for n in root_nodes if deps.get(n, 0) == 0]
    prev = grad_mode.state.enabled
    grad_mode.state.enabled = bool(create_graph)
    try:
        while ready:
            node = ready.pop()
            grads = buffers.pop(node, None) or [None]
            if node._pre_hooks:
                for hook in node._pre_hooks:
                    new = hook(grads)
                    if new is not None:
                        grads = list(new) if isinstance(new, (list, tuple)) else [new]
            if capture is not None:
                for nr in range(len(grads)):
                    for i in capture.get((id(node), nr), ()):
                        results[i] = grads[nr]
            if isinstance(node, AccumulateGrad):
                if capture is None or (accumulate and (id(node), 0) in capture):
                    _accumulate(node, grads[0], create_graph)
                continue
            if needed is not None and node not in needed:
                _finish(node, deps, ready, retain_graph)
                continue
            if all(g is None for g in grads):
                in_grads = [None] * len(node.next_functions)
            else:
                grads = [g if g is not None else F.zeros(shape, dtype=dtype) for g, (shape, dtype) in
                         zip(grads, node.metadata.get("out_meta", [(None, None)] * len(grads)))] \
                    if any(g is None for g in grads) else grads
                try:
                    in_grads = node.apply(grads, fused=not create_graph)
                except Exception as err:
                    if grad_mode.state.anomaly and node.trace:
                        print(f"Error detected in {node.name()}. Traceback of forward call that caused the error:\n"
                              + "".join(node.trace))
                    raise err
                if grad_mode.state.anomaly:
                    _check_nan(node, in_grads)
            if node._hooks:
                for hook in node._hooks:
                    new = hook(in_grads, grads)
                    if new is not None:
                        in_grads = list(new)
            for edge, g, meta in zip(node.next_functions, in_grads, node.input_meta):
                if edge is None:
                    continue
                nxt, nr = edge
                if g is not None:
                    g = _conform(g, meta, F, node)
                slot = buffers.setdefault(nxt, [None] * _n_outputs(nxt))
                slot[nr] = _add(slot[nr], g)
            _finish(node, deps, ready, retain_graph)
    finally:
        grad_mode.state.enabled = prev
    if results is not None:
        for i, r in enumerate(results):
            if r is None and not allow_unused:
                raise RuntimeError("One of the differentiated Tensors appears to not have been used in the graph. "
                                   "Set allow_unused=True if this is the desired behavior.")
        return tuple(results)
    return None


def _finish(node, deps, ready, retain_graph):
    if not retain_graph and isinstance(node, Node):
        node.release()
    for edge in node.next_functions:
        if edge is None:
            continue
        nxt = edge[0]
        deps[nxt] -= 1
        if deps[nxt] == 0:
            ready.append(nxt)


def _n_outputs(node):
    return getattr(node, "n_outputs", 1)


def _conform(g, meta, F, node):
    shape, dtype = meta
    if tuple(g._shape) != tuple(shape):
        g = F.sum_to(g, shape)
        if tuple(g._shape) != tuple(shape):
            raise RuntimeError(f"Function {node.name()} returned an invalid gradient - got "
                               f"[{', '.join(map(str, g._shape))}] but expected shape compatible with "
                               f"[{', '.join(map(str, shape))}]")
    if g.dtype is not dtype:
        g = g.to(dtype)
    return g


def _accumulate(acc, g, create_graph):
    if g is None:
        return
    leaf = acc.variable
    if leaf._hooks:
        for hook in leaf._hooks:
            new = hook(g)
            if new is not None:
                g = new
    if tuple(g._shape) != tuple(leaf._shape):
        from .. import _functional as F
        g = F.sum_to(g, leaf._shape)
    if g.dtype is not leaf.dtype:
        g = g.to(leaf.dtype)
    if leaf._grad is None:
        leaf._grad = g if create_graph else g.detach().clone()
    elif create_graph:
        leaf._grad = leaf._grad + g
    else:
        with_grad = grad_mode.state.enabled
        grad_mode.state.enabled = False
        try:
            leaf._grad = leaf._grad + g
        finally:
            grad_mode.state.enabled = with_grad
    if acc._hooks:
        for hook in acc._hooks:
            hook(leaf)


def _check_nan(node, grads):
    for i, g in enumerate(grads):
        if g is not None and g.dtype.is_floating_point and bool(g.isnan().any()):
            msg = f"Function '{node.name()}' returned nan values in its {i}th output."
            if node.trace:
                msg += "\nTraceback of forward call that caused the error:\n" + "".join(node.trace)
            raise RuntimeError(msg)


def record_trace(node):
    if grad_mode.state.anomaly:
        node.trace = traceback.format_stack()[:-3]
