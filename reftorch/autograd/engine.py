"""The backward engine: micrograd's idea, made iterative.

1. Walk the graph from the roots once (an explicit stack, no recursion) and count, for every node,
   how many edges lead into it.
2. Run a node when every edge into it has delivered its gradient (its count reaches zero), so each
   node runs once, with the sum of its output gradients; a 100,000-node chain needs no recursion.
3. Gradients whose shape differs from their input's (broadcasting) are summed back here, once, for
   every op; formulas never un-broadcast.

Given `inputs`, only the nodes on a path to one of them run (autograd.grad, backward(inputs=)).
Hooks run in PyTorch's order: a tensor's hooks, then retain_grad, then the node's pre-hooks; the
node's post-hooks see its result.
"""
from __future__ import annotations

from sys import getrefcount as _getrefcount

import numpy as np

import reftorch._layout as L
from .._tensor import Tensor
import reftorch.autograd.anomaly_mode as anomaly_mode
import reftorch.autograd.grad_mode as grad_mode
from .graph import NO_R2C_GRAD, AccumulateGrad, gradient_edge
from .._sum_to import sum_to


_final_callbacks = []
_profiler = None    # while torch.profiler records: a context manager per backward node (autograd/profiler.py)


def queue_callback(callback):
    """Run callback() once, when the backward now running has finished (PyTorch's
    Variable._execution_engine.queue_callback; DistributedDataParallel waits for its buckets there)."""
    _final_callbacks.append(callback)


def run_backward(roots, root_grads, retain_graph=False, create_graph=False, inputs=None, allow_unused=False,
                 accumulate=True):
    """Backpropagate root_grads from roots.

    accumulate=True (Tensor.backward): add into the .grad of leaves -- only of `inputs` when given,
    non-leaf inputs included. accumulate=False (autograd.grad): return the gradients of `inputs`."""
    root_edges = []
    for i, r in enumerate(roots):
        edge = gradient_edge(r)
        if edge[0] is None:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")
        root_edges.append(edge)
    dependencies, parents = _count_dependencies({e[0] for e in root_edges}, want_parents=inputs is not None)
    captures, needed, wanted = _captures(inputs, parents)
    results = [None] * len(inputs) if inputs is not None else None

    buffers = {}                                    # node -> [gradient per output]
    for (node, nr), g in zip(root_edges, root_grads):
        _add_to(buffers, node, nr, g)

    ready = [node for node in buffers if dependencies.get(node, 0) == 0]
    prev = grad_mode.state.enabled
    grad_mode.state.enabled = bool(create_graph)    # the backward itself is recorded only for create_graph
    try:
        while ready:
            node = ready.pop()
            grads = buffers.pop(node)
            if node.__class__ is AccumulateGrad:
                if node._tensor_pre_hooks or node._retains_grad or node.variable._hooks:
                    grads = _tensor_pre_hooks(node, grads)
                if captures:
                    for i in captures.get((node, 0), ()):
                        results[i] = grads[0]
                if inputs is None or (accumulate and (node, 0) in captures):
                    if _profiler is None:
                        accumulate_grad(node, grads[0], create_graph, steal=True)
                    else:
                        with _profiler(node, grads):
                            accumulate_grad(node, grads[0], create_graph, steal=True)
                continue
            if node._tensor_pre_hooks or node._retains_grad:
                grads = _tensor_pre_hooks(node, grads)
            if captures:
                for nr, g in enumerate(grads):
                    for i in captures.get((node, nr), ()):
                        results[i] = g
            if needed is not None and node not in needed:
                continue                            # captured only: nothing beyond it is wanted
            edges = node.next_functions
            if wanted is None and node._pre_hooks is None and node._hooks is None and not anomaly_mode._enabled \
                    and _profiler is None:
                # _call without hooks, anomaly checks nor `inputs`: the common training graph
                for g in grads:
                    if g is not None:
                        in_grads = node.apply(grads, create_graph, None)
                        if len(in_grads) != len(edges):
                            raise RuntimeError(f"Function {node.name()} returned an incorrect number of gradients "
                                               f"(expected {len(edges)}, got {len(in_grads)})")
                        break
                else:
                    in_grads = [None] * len(edges)
            else:
                in_grads = _call(node, grads, create_graph, wanted)
            if not retain_graph:
                node.release()
            _send(node, edges, in_grads, buffers, dependencies, ready)
            in_grads = None     # the buffers alone hold the gradients now (see _can_steal)
    finally:
        grad_mode.state.enabled = prev
        callbacks, _final_callbacks[:] = _final_callbacks[:], []
    for callback in callbacks:                      # queue_callback: once the whole backward has run
        callback()
    return _results(inputs, results, accumulate, allow_unused, create_graph)


def _captures(inputs, parents):
    """For autograd.grad / backward(inputs=): which edges' gradients are captured ({edge: [input index]}), the
    nodes that lead to one (needed) and those plus the targets (wanted); ({}, None, None) without inputs."""
    captures = {}
    if inputs is None:
        return captures, None, None
    for i, t in enumerate(inputs):
        edge = gradient_edge(t)
        if edge[0] is None:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
        captures.setdefault(edge, []).append(i)
    targets = {e[0] for e in captures}
    needed = _ancestors(targets, parents)
    return captures, needed, needed | targets


def _send(node, edges, in_grads, buffers, dependencies, ready):
    """The node's input gradients, conformed to each input's shape and dtype, into their nodes' buffers (summed
    where several edges meet); a node whose every edge has arrived is ready."""
    metas = node.input_meta
    i = 0
    for child, nr in edges:
        if child is not None:
            g = in_grads[i]
            if g is not None:
                shape, dtype = metas[i]
                if g._shape != shape or (dtype is not None and g.dtype is not dtype):
                    g = _conform(g, metas[i], node, i)
            slot = buffers.get(child)
            if slot is None:
                n_out = len(child.out_meta)
                if n_out <= 1 and nr == 0:
                    buffers[child] = [g]
                else:
                    slot = buffers[child] = [None] * (n_out or 1)
                    slot[nr] = g
            elif g is not None:
                slot[nr] = g if slot[nr] is None else slot[nr] + g
            n = dependencies[child] - 1
            dependencies[child] = n
            if n == 0:
                ready.append(child)
        i += 1


def _results(inputs, results, accumulate, allow_unused, create_graph):
    """What run_backward returns: nothing for Tensor.backward (non-leaf inputs get their .grad), the captured
    gradients for autograd.grad."""
    if inputs is None:
        return None
    if accumulate:                                  # backward(inputs=[non-leaf ...]) fills their .grad
        for t, g in zip(inputs, results):
            if t.grad_fn is not None and g is not None:
                _accumulate_into(t, g, create_graph)
        return None
    for i, r in enumerate(results):
        if r is None and not allow_unused:
            raise RuntimeError(f"The differentiated Tensor at index {i} appears to not have been used in the graph. "
                               "Set allow_unused=True if this is the desired behavior.")
    return tuple(results)


def _count_dependencies(roots, want_parents):
    """For every node reachable from roots, how many edges lead into it (and, if asked, from where)."""
    dependencies, parents = {}, {}
    stack = list(roots)
    get = dependencies.get
    while stack:
        node = stack.pop()
        for child, _ in node.next_functions:
            if child is None:
                continue
            n = get(child)
            if n is None:
                dependencies[child] = 1
                if child not in roots:      # first edge into it: walk on from it once
                    stack.append(child)
            else:
                dependencies[child] = n + 1
            if want_parents:
                parents.setdefault(child, []).append(node)
    return dependencies, parents


def _ancestors(targets, parents):
    """Nodes with a path to some target: the only ones that need to run."""
    found = set()
    stack = [p for t in targets for p in parents.get(t, ())]
    while stack:
        node = stack.pop()
        if node not in found:
            found.add(node)
            stack.extend(parents.get(node, ()))
    return found


def _add_to(buffers, node, nr, g):
    slot = buffers.get(node)
    if slot is None:
        slot = buffers[node] = [None] * (len(node.out_meta) or 1)
    if g is None:
        return
    slot[nr] = g if slot[nr] is None else slot[nr] + g


def _tensor_pre_hooks(node, grads):
    """Hooks registered on the tensors this node produced (or on its leaf), then retain_grad (which
    sees their result)."""
    if isinstance(node, AccumulateGrad):
        leaf_hooks = node.variable._hooks
        if leaf_hooks and grads[0] is not None:
            grads = list(grads)
            for hook in list(leaf_hooks):
                new = hook(grads[0])
                if new is not None:
                    grads[0] = new
        return grads
    if node._tensor_pre_hooks:
        grads = list(grads)
        for nr, hooks in node._tensor_pre_hooks.items():
            for hook in list(hooks):
                if grads[nr] is not None:
                    new = hook(grads[nr])
                    if new is not None:
                        grads[nr] = new
    if node._retains_grad:
        for nr, ref in node._retains_grad.items():
            t = ref()
            if t is not None and grads[nr] is not None:
                g = grads[nr].detach()
                t._grad = g.clone() if t._grad is None else t._grad + g
    return grads


def _call(node, grads, create_graph, wanted):
    """The node's pre-hooks, its backward, its post-hooks; anomaly checks around the backward."""
    if node._pre_hooks:
        for hook in list(node._pre_hooks):
            new = hook(tuple(grads))
            if new is not None:
                grads = list(new)
    needs = None if wanted is None else [child is not None and child in wanted for child, _ in node.next_functions]
    if all(g is None for g in grads):
        in_grads = [None] * len(node.next_functions)
    else:
        try:
            if _profiler is None:
                in_grads = list(node.apply(grads, create_graph, needs))
            else:
                with _profiler(node, grads):
                    in_grads = list(node.apply(grads, create_graph, needs))
            if len(in_grads) != len(node.next_functions):
                raise RuntimeError(f"Function {node.name()} returned an incorrect number of gradients (expected "
                                   f"{len(node.next_functions)}, got {len(in_grads)})")
            if anomaly_mode.is_anomaly_enabled() and anomaly_mode.is_anomaly_check_nan_enabled():
                anomaly_mode.check_nan(node, in_grads)
        except Exception:
            if anomaly_mode.is_anomaly_enabled():
                anomaly_mode.warn_error_in(node)
            raise
    if node._hooks:
        for hook in list(node._hooks):
            new = hook(tuple(in_grads), tuple(grads))
            if new is not None:
                in_grads = list(new)
    return in_grads


def _conform(g, meta, node, index):
    """A node's gradient for one input, reduced to that input's shape and cast to its dtype."""
    shape, dtype = meta
    if g._shape != shape and tuple(g._shape) != tuple(shape):
        if not _expandable(tuple(shape), tuple(g._shape)):
            raise RuntimeError(f"Function {node.name()} returned an invalid gradient at index {index} - got "
                               f"[{', '.join(map(str, g._shape))}] but expected shape compatible with "
                               f"[{', '.join(map(str, shape))}]")
        g = sum_to(g, shape)
    if dtype is not None and g.dtype is not dtype:
        if g.dtype.is_complex and not dtype.is_complex:    # a real input of a complex op: the real part
            if getattr(node, "op", None) in NO_R2C_GRAD:
                raise RuntimeError("Expected isFloatingType(grad.scalar_type()) || (input_is_complex == "
                                   "grad_is_complex) to be true, but got false.  (Could this error message be "
                                   "improved?  If so, please report an enhancement request to PyTorch.)")
            g = g.real
        g = g.to(dtype)
    return g


def _expandable(shape, target):
    """Whether shape broadcasts to target (so a gradient of shape target sums back to shape)."""
    if len(shape) > len(target):
        return False
    for s, t in zip(reversed(shape), reversed(target)):
        if s != 1 and s != t:
            return False
    return True


def accumulate_grad(acc, g, create_graph, steal=False):
    """AccumulateGrad: add into leaf.grad (the leaf's hooks have run), then post-accumulate hooks. steal: called
    by run_backward, whose list of the node's gradients holds g (_can_steal counts on it)."""
    leaf = acc.variable
    if g is None:
        return
    g = _conform(g, (leaf._shape, leaf.dtype), acc, 0)
    _accumulate_into(leaf, g, create_graph, steal)
    for hook in leaf.__dict__.get("_post_accumulate_hooks", ()):
        hook(leaf)
    if acc._hooks:
        for hook in list(acc._hooks):
            hook((), (g,))


# references to a gradient that nothing outside the engine holds, as _can_steal sees it: run_backward's list of the
# node's gradients, the names of accumulate_grad, _accumulate_into and _can_steal, and getrefcount's argument
_STEAL_REFS = 5


def _can_steal(t, g):
    """Whether g may become t.grad without a copy: a plain dense tensor with t's layout, outside any graph, that
    nothing else references -- not the tensor, its storage, nor its NumPy buffer (no view, saved alias or user)."""
    if g.__class__ is not Tensor or g.grad_fn is not None or g.requires_grad or g._base is not None or \
            g._offset != 0 or g.dtype is not t.dtype or g._strides != t._strides or g._shape != t._shape or \
            g._hooks or g.__dict__ or g.device.type != "cpu":
        return False
    data = g._storage.data
    if _getrefcount(g) > _STEAL_REFS or _getrefcount(g._storage) > 2 or data.shape[0] != g.numel() or \
            not L.is_contiguous(g._shape, g._strides):
        return False
    base = data.base
    if base is None:
        return _getrefcount(data) <= 3     # g's storage, the name data, getrefcount's argument
    # base: data's reference to it, the name base, getrefcount's argument (an array op's fresh result, reshaped)
    return base.__class__ is np.ndarray and base.base is None and _getrefcount(data) <= 3 and \
        _getrefcount(base) <= 3


def _accumulate_into(t, g, create_graph, steal=False):
    """t.grad += g as PyTorch does it: a fresh copy the first time (or g itself when no one else can see it); in
    place afterwards, unless create_graph asks for a differentiable (out-of-place) sum."""
    if t._grad is None:
        if steal and not create_graph and _can_steal(t, g):
            t._grad = g         # the buffer no one else can see becomes .grad (PyTorch's AccumulateGrad does too)
            return
        t._grad = g.clone() if create_graph else g.detach().clone()
    elif create_graph or t._grad.requires_grad:
        t._grad = t._grad + g
    else:
        prev = grad_mode.state.enabled
        grad_mode.state.enabled = False
        try:
            t._grad.add_(g.detach())
        finally:
            grad_mode.state.enabled = prev
