"""Hand-written tests of the autograd contract: the engine, the Tensor API, grad modes, custom
Functions, in-place rules, errors as PyTorch words them, anomaly mode and second derivatives.

(Per-op gradients are checked by the tests generated from ops.yaml; memory and the 100,000-node
chain are in test_autograd_memory.py.)"""
import gc
import re
import threading
import warnings
import weakref

import numpy as np
import pytest

import reftorch as torch
from reftorch.autograd import Function

F64 = torch.float64


def leaf(values, dtype=torch.float32):
    return torch.tensor(values, dtype=dtype, requires_grad=True)


def close(t, expected, tol=1e-6):
    np.testing.assert_allclose(np.asarray(t.detach()._array(), dtype=np.float64), np.asarray(expected, np.float64),
                               rtol=tol, atol=tol)


# ------------------------------------------------------------------------------------ engine basics

def test_seed_example():
    x = torch.tensor(2.0, requires_grad=True)
    y = x ** 3 + 2 * x
    y.backward()
    assert x.grad.item() == 14.0


def test_grad_accumulates_across_backward_calls():
    x = leaf([1.0, 2.0])
    (x * 3).sum().backward()
    first = x.grad
    (x * x).sum().backward()
    close(x.grad, [3 + 2, 3 + 4])
    assert x.grad is first                  # accumulated in place, as PyTorch does
    x.grad = None
    (x * 3).sum().backward()
    close(x.grad, [3, 3])


def test_grad_fn_and_next_functions():
    x = leaf([1.0, 2.0])
    y = x * 2
    assert x.grad_fn is None and x.is_leaf and not y.is_leaf
    assert y.grad_fn.name() == "MulBackward0"
    assert repr(y.grad_fn).startswith("<MulBackward0 object at 0x")
    (acc, nr), (none, nr2) = y.grad_fn.next_functions
    assert type(acc).__name__ == "AccumulateGrad" and acc.variable is x and nr == 0
    assert none is None and nr2 == 0
    z = (y + x).sum()
    assert z.grad_fn.name() == "SumBackward0"
    add = z.grad_fn.next_functions[0][0]
    assert add.name() == "AddBackward0"
    assert add.next_functions[0][0] is y.grad_fn
    assert add.next_functions[1][0] is acc              # one AccumulateGrad per leaf while the graph lives
    assert isinstance(y.grad_fn, torch.autograd.graph.Node)


def test_is_leaf_and_requires_grad():
    a = torch.ones(2)
    assert a.is_leaf and not a.requires_grad
    b = a.requires_grad_()
    assert b is a and a.requires_grad and a.is_leaf
    c = a * 2
    assert c.requires_grad and not c.is_leaf
    with torch.no_grad():
        d = a * 2
    assert d.is_leaf and not d.requires_grad
    c.requires_grad_(True)                              # no-op on a non-leaf, as in PyTorch
    a.requires_grad = False
    assert not a.requires_grad


def test_requires_grad_rejected_on_integers():
    msg = "only Tensors of floating point and complex dtype can require gradients"
    with pytest.raises(RuntimeError, match="only Tensors of floating point dtype can require gradients"):
        torch.tensor([1, 2]).requires_grad_()       # torch 2.13's three messages differ in these words
    with pytest.raises(RuntimeError, match="Only Tensors of floating point and complex dtype can require gradients"):
        torch.tensor([1, 2], requires_grad=True)
    t = torch.tensor([1, 2])
    with pytest.raises(RuntimeError, match=msg):
        t.requires_grad = True
    assert not (leaf([1.0]) * 2).long().requires_grad   # integer results never require grad


def test_requires_grad_false_on_non_leaf_raises():
    y = leaf([1.0]) * 2
    msg = re.escape("you can only change requires_grad flags of leaf variables. If you want to use a computed "
                    "variable in a subgraph that doesn't require differentiation use var_no_grad = var.detach().")
    with pytest.raises(RuntimeError, match=msg):
        y.requires_grad_(False)
    with pytest.raises(RuntimeError, match=msg):
        y.requires_grad = False


def test_diamond_and_reused_tensors_sum_their_gradients():
    x = leaf([1.0, 2.0])
    a = x * 2
    b = a * 3
    c = a * 4
    (b + c).sum().backward()
    close(x.grad, [14, 14])
    x.grad = None
    (x + x + x * x).sum().backward()
    close(x.grad, [2 + 2 * 1, 2 + 2 * 2])
    x.grad = None
    y = x * x                                           # the same tensor as both operands
    y.sum().backward()
    close(x.grad, [2, 4])


def test_broadcast_gradients_are_reduced_to_input_shape():
    x = leaf([[1.0], [2.0]])                            # (2, 1)
    b = leaf([1.0, 2.0, 3.0])                           # (3,)
    (x * b).sum().backward()
    assert x.grad.shape == (2, 1) and b.grad.shape == (3,)
    close(x.grad, [[6], [6]])
    close(b.grad, [3, 3, 3])


def test_backward_with_gradient_argument():
    x = leaf([1.0, 2.0, 3.0])
    y = x * x
    y.backward(torch.tensor([1.0, 0.5, 0.0]))
    close(x.grad, [2, 2, 0])


def test_multiple_roots_with_autograd_backward():
    x = leaf([1.0, 2.0])
    a = (x * 2).sum()
    b = (x * x).sum()
    torch.autograd.backward([a, b])
    close(x.grad, [4, 6])
    x.grad = None
    torch.autograd.backward([x * 2, x * 3], [torch.ones(2), torch.full((2,), 2.0)])
    close(x.grad, [8, 8])


def test_retain_graph_allows_a_second_backward():
    x = leaf([1.0, 2.0])
    y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    close(x.grad, [4, 8])


def test_graph_without_saved_tensors_can_backward_twice():
    # PyTorch raises only when a freed saved tensor is needed: add and sum save none
    x = leaf([1.0, 2.0])
    y = (x + 1).sum()
    y.backward()
    y.backward()
    close(x.grad, [2, 2])


def test_create_graph_second_and_third_derivative():
    x = torch.tensor(1.5, dtype=F64, requires_grad=True)
    y = x ** 4
    (g,) = torch.autograd.grad(y, x, create_graph=True)
    (gg,) = torch.autograd.grad(g, x, create_graph=True)
    (ggg,) = torch.autograd.grad(gg, x)
    close(g, 4 * 1.5 ** 3)
    close(gg, 12 * 1.5 ** 2)
    close(ggg, 24 * 1.5)
    assert g.requires_grad and not ggg.requires_grad


def test_backward_create_graph_makes_grad_differentiable():
    x = torch.tensor([1.0, 2.0], dtype=F64, requires_grad=True)
    with pytest.warns(UserWarning, match="create_graph=True will create a reference cycle"):
        (x ** 3).sum().backward(create_graph=True)
    g = x.grad
    assert g.requires_grad
    x.grad = None
    g.sum().backward()
    close(x.grad, [6, 12])


# ------------------------------------------------------------------------------------ autograd.grad

def test_autograd_grad_returns_and_does_not_accumulate():
    x = leaf([1.0, 2.0])
    w = leaf([3.0, 4.0])
    gx, gw = torch.autograd.grad((x * w).sum(), [x, w])
    close(gx, [3, 4])
    close(gw, [1, 2])
    assert x.grad is None and w.grad is None
    (g,) = torch.autograd.grad((x * w).sum(), x)
    close(g, [3, 4])


def test_autograd_grad_outputs_and_multiple_outputs():
    x = leaf([1.0, 2.0])
    (g,) = torch.autograd.grad([(x * 2).sum(), (x * 3).sum()], [x])
    close(g, [5, 5])
    (g,) = torch.autograd.grad(x * x, x, grad_outputs=torch.tensor([1.0, 10.0]))
    close(g, [2, 40])


def test_autograd_grad_non_leaf_input_stops_there():
    x = leaf([1.0, 2.0])
    h = x * 3
    y = (h * h).sum()
    (gh,) = torch.autograd.grad(y, h)
    close(gh, [6, 12])
    assert x.grad is None


def test_autograd_grad_allow_unused_and_materialize():
    x = leaf([1.0])
    unused = leaf([5.0])
    msg = re.escape("The differentiated Tensor at index 1 appears to not have been used in the graph. Set "
                    "allow_unused=True if this is the desired behavior.")
    with pytest.raises(RuntimeError, match=msg):
        torch.autograd.grad((x * 2).sum(), [x, unused])
    gx, gu = torch.autograd.grad((x * 2).sum(), [x, unused], allow_unused=True)
    close(gx, [2])
    assert gu is None
    gx, gu = torch.autograd.grad((x * 2).sum(), [x, unused], materialize_grads=True)
    close(gu, [0])


def test_autograd_grad_input_that_does_not_require_grad():
    x = leaf([1.0])
    with pytest.raises(RuntimeError, match="One of the differentiated Tensors does not require grad"):
        torch.autograd.grad((x * 2).sum(), torch.ones(1))


def test_backward_inputs_restricts_accumulation():
    x = leaf([1.0, 2.0])
    w = leaf([3.0, 4.0])
    h = x * w
    (h * 2).sum().backward(inputs=[w])
    assert x.grad is None
    close(w.grad, [2, 4])
    h2 = x * w
    h2.backward(torch.ones(2), inputs=[h2])             # a non-leaf input gets its .grad
    close(h2.grad, [1, 1])
    assert x.grad is None
    with pytest.raises(RuntimeError, match=re.escape("`inputs` argument to `backward()` cannot be empty.")):
        (x * 2).sum().backward(inputs=[])


# ------------------------------------------------------------------------------------ hooks

def test_leaf_hook_replaces_gradient():
    x = leaf([1.0, 2.0])
    seen = []
    h = x.register_hook(lambda g: seen.append(g.tolist()) or g * 10)
    (x * 2).sum().backward()
    assert seen == [[2.0, 2.0]]
    close(x.grad, [20, 20])
    (g,) = torch.autograd.grad((x * 2).sum(), x)        # autograd.grad sees leaf hooks too
    close(g, [20, 20])
    h.remove()
    x.grad = None
    (x * 2).sum().backward()
    close(x.grad, [2, 2])


def test_non_leaf_hook_replaces_gradient_upstream():
    x = leaf([1.0, 2.0])
    y = x * 3
    y.register_hook(lambda g: g + 1)
    (y * 2).sum().backward()
    close(x.grad, [(2 + 1) * 3, (2 + 1) * 3])


def test_hook_that_returns_none_observes_only():
    x = leaf([1.0])
    y = x * 2
    seen = []
    y.register_hook(lambda g: seen.append(g.item()))
    (y * 5).sum().backward()
    assert seen == [5.0]
    close(x.grad, [10])


def test_retain_grad_sees_hooked_gradient_and_accumulates():
    x = leaf([1.0, 2.0])
    a = x * 2
    a.retain_grad()
    assert a.retains_grad
    a.register_hook(lambda g: g * 10)                   # retain_grad runs after tensor hooks
    a.sum().backward(retain_graph=True)
    close(a.grad, [10, 10])
    close(x.grad, [20, 20])
    a.sum().backward()
    close(a.grad, [20, 20])


def test_retain_grad_follows_in_place_ops():
    x = leaf([1.0, 2.0])
    a = x * 2
    a.retain_grad()
    a.mul_(3)
    (a * 5).sum().backward()
    close(a.grad, [5, 5])
    close(x.grad, [30, 30])


def test_grad_of_non_leaf_warns_without_retain_grad():
    y = leaf([1.0]) * 2
    with pytest.warns(UserWarning, match="The .grad attribute of a Tensor that is not a leaf Tensor is being accessed"):
        assert y.grad is None


def test_hook_errors():
    with pytest.raises(RuntimeError, match="cannot register a hook on a tensor that doesn't require gradient"):
        torch.ones(2).register_hook(lambda g: g)
    with pytest.raises(RuntimeError, match="can't retain_grad on Tensor that has requires_grad=False"):
        torch.ones(2).retain_grad()


def test_post_accumulate_grad_hook():
    x = leaf([1.0])
    seen = []
    x.register_post_accumulate_grad_hook(lambda t: seen.append(t.grad.item()))
    (x * 4).sum().backward()
    assert seen == [4.0]


def test_node_hooks():
    x = leaf([1.0, 2.0])
    y = x * 2
    pre, post = [], []
    y.grad_fn.register_prehook(lambda grad_outputs: pre.append(grad_outputs[0].tolist()))
    handle = y.grad_fn.register_hook(lambda grad_inputs, grad_outputs: (grad_inputs[0] * 0, grad_inputs[1]))
    y.sum().backward(retain_graph=True)
    assert pre == [[1.0, 1.0]]
    close(x.grad, [0, 0])
    handle.remove()
    x.grad = None
    y.sum().backward()
    close(x.grad, [2, 2])


# ------------------------------------------------------------------------------------ detach and .data

def test_detach_shares_storage_and_version():
    x = leaf([1.0, 2.0])
    d = x.detach()
    assert not d.requires_grad and d.grad_fn is None and d.is_leaf
    assert d.data_ptr() == x.data_ptr() and d._base is None
    a = x * 2
    b = a * a
    a.detach().add_(1)                                  # shares the version counter: backward notices
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        b.sum().backward()


def test_data_is_invisible_to_autograd():
    x = leaf([1.0, 2.0])
    d = x.data
    assert not d.requires_grad and d.data_ptr() == x.data_ptr()
    d.mul_(2)                                           # no version bump on x: no error (classic .data)
    assert x._version == 0
    close(x, [2, 4])
    (x * x).sum().backward()
    close(x.grad, [4, 8])


def test_detach_in_place():
    x = leaf([1.0])
    y = x * 2
    assert y.detach_() is y
    assert y.grad_fn is None and not y.requires_grad and y.is_leaf
    v = (x * 2)[0:1]
    with pytest.raises(RuntimeError, match=re.escape("Can't detach views in-place. Use detach() instead.")):
        v.detach_()


# ------------------------------------------------------------------------------------ grad modes

def test_no_grad_forms():
    x = leaf([1.0])
    with torch.no_grad():
        assert not torch.is_grad_enabled()
        y = x * 2
    assert torch.is_grad_enabled() and not y.requires_grad

    @torch.no_grad()
    def f():
        return x * 2

    @torch.no_grad
    def g():
        return x * 2

    assert not f().requires_grad and not g().requires_grad and torch.is_grad_enabled()


def test_enable_grad_inside_no_grad():
    x = leaf([1.0])
    with torch.no_grad():
        with torch.enable_grad():
            y = x * 2
        z = x * 2
    assert y.requires_grad and not z.requires_grad

    @torch.enable_grad()
    def f():
        return x * 2

    with torch.no_grad():
        assert f().requires_grad


def test_set_grad_enabled_forms():
    x = leaf([1.0])
    with torch.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    assert torch.is_grad_enabled()
    torch.set_grad_enabled(False)                        # a plain call takes effect
    try:
        assert not torch.is_grad_enabled()
    finally:
        torch.set_grad_enabled(True)

    @torch.set_grad_enabled(False)
    def f():
        return torch.is_grad_enabled()

    assert torch.is_grad_enabled()                      # decorating does not change the mode
    assert f() is False and torch.is_grad_enabled()


def test_inference_mode():
    x = leaf([1.0])
    with torch.inference_mode():
        assert torch.is_inference_mode_enabled() and not torch.is_grad_enabled()
        y = x * 2
    assert not y.requires_grad and not torch.is_inference_mode_enabled()

    @torch.inference_mode()
    def f():
        return (x * 2).requires_grad

    @torch.inference_mode
    def g():
        return torch.is_inference_mode_enabled()

    assert f() is False and g() is True
    with torch.inference_mode(False):
        assert torch.is_grad_enabled()


def test_grad_mode_decorates_generators():
    x = leaf([1.0])

    @torch.no_grad()
    def gen():
        for _ in range(2):
            yield (x * 2).requires_grad, torch.is_grad_enabled()

    for requires, enabled in gen():
        assert requires is False and enabled is False
        assert torch.is_grad_enabled()


def test_grad_mode_is_thread_local():
    seen = {}
    started, release = threading.Event(), threading.Event()

    def worker():
        seen["enabled"] = torch.is_grad_enabled()
        seen["requires"] = (leaf([1.0]) * 2).requires_grad
        started.set()
        release.wait(5)

    with torch.no_grad():
        t = threading.Thread(target=worker)
        t.start()
        started.wait(5)
        release.set()
        t.join()
        assert not torch.is_grad_enabled()
    assert seen == {"enabled": True, "requires": True}


# ------------------------------------------------------------------------------------ autograd.Function

class Cube(Function):
    @staticmethod
    def forward(ctx, x, scale):
        ctx.save_for_backward(x)
        ctx.scale = scale
        return x * x * x * scale

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * 3 * x * x * ctx.scale, None


def test_function_forward_backward_and_node():
    x = leaf([1.0, 2.0])
    y = Cube.apply(x, 2.0)
    close(y, [2, 16])
    assert y.grad_fn.name() == "CubeBackward"
    assert repr(y.grad_fn).startswith("<torch.autograd.function.CubeBackward object at")
    assert y.grad_fn.next_functions[0][0].variable is x
    y.sum().backward()
    close(x.grad, [6, 24])


def test_function_backward_is_differentiable_with_create_graph():
    x = torch.tensor([1.0, 2.0], dtype=F64, requires_grad=True)
    (g,) = torch.autograd.grad(Cube.apply(x, 1.0).sum(), x, create_graph=True)
    close(g, [3, 12])
    (gg,) = torch.autograd.grad(g.sum(), x)
    close(gg, [6, 12])


def test_function_needs_input_grad_and_no_recording_without_grad():
    seen = []

    class Probe(Function):
        @staticmethod
        def forward(ctx, a, b, k):
            seen.append(ctx.needs_input_grad)
            assert not torch.is_grad_enabled()          # forward runs without recording
            return a * b * k

        @staticmethod
        def backward(ctx, g):
            return g, g, None

    out = Probe.apply(leaf([1.0]), torch.ones(1), 3)
    assert seen[-1] == (True, False, False) and out.requires_grad
    out = Probe.apply(torch.ones(1), torch.ones(1), 3)
    assert seen[-1] == (False, False, False) and not out.requires_grad and out.grad_fn is None
    with torch.no_grad():
        out = Probe.apply(leaf([1.0]), torch.ones(1), 3)
    assert seen[-1] == (False, False, False) and not out.requires_grad


def test_function_mark_non_differentiable_and_materialize_grads():
    class SortedWithIndex(Function):
        @staticmethod
        def forward(ctx, x):
            idx = x.argmax()
            scaled = x * 2
            ctx.mark_non_differentiable(idx)
            return scaled, idx

        @staticmethod
        def backward(ctx, g, g_idx):
            assert g_idx is None or float(g_idx.sum()) == 0.0
            return g * 2

    x = leaf([1.0, 3.0])
    y, i = SortedWithIndex.apply(x)
    assert y.requires_grad and not i.requires_grad
    y.sum().backward()
    close(x.grad, [2, 2])

    received = []

    class Two(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, g1, g2):
            received.append(g2)
            return g1 * 2

    a, _ = Two.apply(leaf([1.0]))
    a.sum().backward()
    assert received == [None]

    class TwoMaterialized(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, g1, g2):
            received.append(g2.tolist())
            return g1 * 2 + g2 * 3

    a, _ = TwoMaterialized.apply(leaf([1.0]))
    a.sum().backward()
    assert received[-1] == [0.0]


def test_function_mark_dirty():
    class MulTwoInPlace(Function):
        @staticmethod
        def forward(ctx, x):
            x.mul_(2)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 2

    x = leaf([1.0, 2.0])
    a = x * 1
    b = MulTwoInPlace.apply(a)
    assert b is a and a.grad_fn.name() == "MulTwoInPlaceBackward" and a._version == 2
    (b * 3).sum().backward()
    close(x.grad, [6, 6])
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad has been used in an in-place "
                                           "operation."):
        MulTwoInPlace.apply(leaf([1.0]))


def test_function_returning_an_input_returns_a_view():
    class Identity(Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 5

    x = leaf([1.0])
    y = Identity.apply(x)
    assert y is not x and y._base is x and y.grad_fn.name() == "IdentityBackward"
    y.sum().backward()
    close(x.grad, [5])


def test_function_setup_context_style_and_once_differentiable():
    class Square(Function):
        @staticmethod
        def forward(x):
            return x * x

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(inputs[0])

        @staticmethod
        @torch.autograd.function.once_differentiable
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g

    x = leaf([3.0])
    (g,) = torch.autograd.grad(Square.apply(x).sum(), x, create_graph=True)
    close(g, [6])
    assert not g.requires_grad                          # once_differentiable: not recorded


def test_function_errors():
    class WrongCount(Function):
        @staticmethod
        def forward(ctx, x, k):
            return x * k

        @staticmethod
        def backward(ctx, g):
            return g

    with pytest.raises(RuntimeError, match=re.escape(
            "function WrongCountBackward returned an incorrect number of gradients (expected 2, got 1)")):
        WrongCount.apply(leaf([1.0]), 2).sum().backward()

    class GradForNumber(Function):
        @staticmethod
        def forward(ctx, x, k):
            return x * k

        @staticmethod
        def backward(ctx, g):
            return g, g

    with pytest.raises(RuntimeError, match="returned a gradient different than None at position 2, but the "
                                           "corresponding forward input was not a Variable"):
        GradForNumber.apply(leaf([1.0]), 2).sum().backward()

    class BadShape(Function):
        @staticmethod
        def forward(ctx, x):
            return x.sum()

        @staticmethod
        def backward(ctx, g):
            return torch.ones(2)

    with pytest.raises(RuntimeError, match=re.escape(
            "Function BadShapeBackward returned an invalid gradient at index 0 - got [2] but expected shape "
            "compatible with [3]")):
        BadShape.apply(leaf([1.0, 2.0, 3.0])).backward()

    class SaveNumber(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x, 3)
            return x

    with pytest.raises(TypeError, match="save_for_backward can only save variables, but argument 1 is of type int"):
        SaveNumber.apply(leaf([1.0]))


def test_function_saved_tensors_are_freed_after_backward():
    x = leaf([2.0])
    y = Cube.apply(x, 1.0)
    s = y.sum()
    s.backward(retain_graph=True)
    s.backward()
    close(x.grad, [24])
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        s.backward()


def test_function_saving_its_output():
    class Exp(Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            return g * y

    x = torch.tensor([0.5], dtype=F64, requires_grad=True)
    y = Exp.apply(x)
    (g,) = torch.autograd.grad(y.sum(), x, create_graph=True)
    close(g, np.exp([0.5]))
    (gg,) = torch.autograd.grad(g.sum(), x)             # through the saved output back into the node
    close(gg, np.exp([0.5]))
    y = Exp.apply(torch.tensor([0.5], requires_grad=True))
    y.add_(1)
    with pytest.raises(RuntimeError, match="which is output 0 of Exp, is at version 1; expected version 0"):
        y.sum().backward()


# ------------------------------------------------------------------------------------ in-place

VERSION_HINT = ("Hint: enable anomaly detection to find the operation that failed to compute its gradient, with "
                "torch.autograd.set_detect_anomaly(True, check_nan=False).")


def test_in_place_bumps_version():
    a = torch.zeros(3)
    v = a[1:]
    assert a._version == 0
    a.add_(1)
    assert a._version == 1 and v._version == 1          # views share the counter
    v.mul_(2)
    assert a._version == 2


def test_version_error_names_the_op_and_versions():
    x = leaf([1.0, 2.0, 3.0])
    a = x.exp()
    a.add_(1)
    msg = ("one of the variables needed for gradient computation has been modified by an inplace operation: "
           "[torch.FloatTensor [3]], which is output 0 of Exp, is at version 1; expected version 0 instead. "
           + VERSION_HINT)
    with pytest.raises(RuntimeError, match=re.escape(msg)):
        a.sum().backward()
    a = x * 2
    b = a.log()                                         # log saves its input
    a.mul_(2)
    with pytest.raises(RuntimeError, match=re.escape("[torch.FloatTensor [3]], which is output 0 of Mul, is at "
                                                     "version 1; expected version 0 instead.")):
        b.sum().backward()


def test_version_error_for_a_saved_leaf_without_grad():
    x = leaf([1.0, 2.0, 3.0])
    w = torch.ones(3)
    c = x * w
    w.add_(1)
    msg = ("one of the variables needed for gradient computation has been modified by an inplace operation: "
           "[torch.FloatTensor [3]] is at version 1; expected version 0 instead. " + VERSION_HINT)
    with pytest.raises(RuntimeError, match=re.escape(msg)):
        c.sum().backward()


LEAF_IN_PLACE = "a leaf Variable that requires grad is being used in an in-place operation."


def test_in_place_on_leaf_requiring_grad_raises():
    x = leaf([1.0, 2.0])
    with pytest.raises(RuntimeError, match=LEAF_IN_PLACE):
        x.add_(1)
    with pytest.raises(RuntimeError, match=LEAF_IN_PLACE):
        x.copy_(torch.ones(2))
    with pytest.raises(RuntimeError, match="a view of " + LEAF_IN_PLACE):
        x[:1].mul_(2)
    with torch.no_grad():                               # allowed without grad (optimizer steps)
        x.sub_(1)
    close(x, [0, 1])


def test_in_place_on_non_leaf_records():
    x = leaf([1.0, 2.0])
    a = x * 2
    a.add_(1)
    assert a.grad_fn.name() == "AddBackward0"
    a.sum().backward()
    close(x.grad, [2, 2])


def test_in_place_mul_uses_the_old_value():
    x = leaf([1.0, 2.0])
    y = leaf([3.0, 5.0])
    a = x * 1
    a.mul_(y)
    a.sum().backward()
    close(y.grad, [1, 2])                               # the old a, not a * y
    close(x.grad, [3, 5])
    a = x * 1
    a.exp_()
    (a * 1).sum().backward()
    close(x.grad, [3 + np.exp(1), 5 + np.exp(2)], 1e-5)


def test_in_place_with_itself_raises_like_pytorch():
    a = leaf([1.0, 2.0]) * 1
    a.mul_(a)
    with pytest.raises(RuntimeError, match="which is output 0 of Mul, is at version 1; expected version 0"):
        a.sum().backward()


def test_in_place_on_leaf_without_grad_takes_history():
    w = leaf([2.0, 3.0])
    a = torch.ones(2)
    a.mul_(w)
    assert a.requires_grad and not a.is_leaf
    a.sum().backward()
    close(w.grad, [1, 1])


def test_in_place_on_view_rewrites_base_history():
    x = leaf([1.0, 2.0, 3.0])
    a = x * 2
    v = a[:2]
    v.mul_(3)
    close(a, [6, 12, 6])
    assert a.grad_fn.name() == "CopySlices" and v.grad_fn.name() == "AsStridedBackward0"
    a.sum().backward()
    close(x.grad, [6, 6, 2])
    x.grad = None
    a = x * 2
    v = a.view(3, 1)
    v.add_(v.detach())                                  # a view covering the whole base
    (a * a).sum().backward()
    close(x.grad, [2 * (4 * 1) * 2, 2 * (4 * 2) * 2, 2 * (4 * 3) * 2])


def test_in_place_on_view_refreshes_sibling_views():
    x = leaf([1.0, 2.0, 3.0])
    a = x * 2
    v1 = a[:2]
    v2 = a[1:]
    v1.mul_(3)
    v2.sum().backward()
    close(x.grad, [0, 6, 2])
    x.grad = None
    a = x * 2
    v = a[:2]
    a.mul_(3)                                           # in place on the base: the view reads the new base
    v.sum().backward()
    close(x.grad, [6, 6, 0])


def test_in_place_on_view_grad_of_other_operand():
    x = leaf([1.0, 2.0, 3.0])
    w = leaf([10.0, 20.0])
    a = x * 1
    a[1:].mul_(w)
    (a * torch.tensor([1.0, 2.0, 3.0])).sum().backward()
    close(w.grad, [2 * 2, 3 * 3])
    close(x.grad, [1, 2 * 10, 3 * 20])


def test_in_place_on_base_without_grad_gets_copy_slices():
    w = leaf([2.0, 3.0])
    a = torch.zeros(3)
    a[:2].add_(w)
    assert a.grad_fn.name() == "CopySlices" and not a.is_leaf
    (a * torch.tensor([1.0, 2.0, 3.0])).sum().backward()
    close(w.grad, [1, 2])


def test_setitem_and_copy_into_view_of_non_leaf():
    x = leaf([1.0, 2.0, 3.0])
    y = leaf([7.0])
    a = x * 1
    a[1] = y * 2
    (a * torch.tensor([1.0, 2.0, 3.0])).sum().backward()
    close(x.grad, [1, 0, 3])
    close(y.grad, [4])
    x.grad = None
    b = (x * 1).view(3, 1)
    b[0].copy_(y)
    b.sum().backward()
    close(x.grad, [0, 1, 1])
    assert b._base.grad_fn.name() == "CopySlices" and b.grad_fn.name() == "AsStridedBackward0"


def test_in_place_on_view_second_derivative():
    x = torch.tensor([1.0, 2.0], dtype=F64, requires_grad=True)
    a = x * x
    a[:1].mul_(x[:1])                                   # a = [x0^3, x1^2]
    (g,) = torch.autograd.grad(a.sum(), x, create_graph=True)
    close(g, [3, 4])
    (gg,) = torch.autograd.grad(g.sum(), x)
    close(gg, [6, 2])


def test_view_made_in_no_grad_modified_with_grad_raises():
    a = leaf([1.0, 2.0]) * 2
    with torch.no_grad():
        v = a[:1]
    with pytest.raises(RuntimeError, match="A view was created in no_grad mode and is being modified inplace with "
                                           "grad mode enabled."):
        v.mul_(2)


def test_in_place_on_expanded_tensor_raises():
    msg = ("unsupported operation: more than one element of the written-to tensor refers to a single memory location. "
           "Please clone() the tensor before performing the operation.")
    with pytest.raises(RuntimeError, match=re.escape(msg)):
        torch.zeros(1).expand(3).add_(1)
    with pytest.raises(RuntimeError, match=re.escape(msg)):
        torch.zeros(1).expand(3).copy_(torch.ones(3))


def test_copy_into_non_leaf_gives_old_value_no_gradient():
    x = leaf([1.0, 2.0])
    y = leaf([5.0, 6.0])
    a = x * 3
    a.copy_(y)
    assert a.grad_fn.name() == "CopyBackwards"
    (a * 2).sum().backward()
    assert x.grad is None or float(x.grad.abs().sum()) == 0.0
    close(y.grad, [2, 2])


# ------------------------------------------------------------------------------------ errors

def test_backward_twice_without_retain_graph():
    x = leaf([1.0, 2.0])
    y = (x * x).sum()
    y.backward()
    msg = ("Trying to backward through the graph a second time (or directly access saved tensors after they have "
           "already been freed). Saved intermediate values of the graph are freed when you call .backward() or "
           "autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or "
           "if you need to access saved tensors after calling backward.")
    with pytest.raises(RuntimeError, match=re.escape(msg)):
        y.backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        y.grad_fn.next_functions[0][0]._saved_self


def test_backward_on_non_scalar_without_gradient():
    x = leaf([1.0, 2.0])
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
        (x * 2).backward()
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
        torch.autograd.grad(x * 2, x)


def test_backward_of_tensor_without_grad():
    msg = "element 0 of tensors does not require grad and does not have a grad_fn"
    with pytest.raises(RuntimeError, match=msg):
        torch.tensor(1.0).backward()
    with pytest.raises(RuntimeError, match=msg):
        torch.tensor([1.0, 2.0]).backward()
    with pytest.raises(RuntimeError, match=msg):
        torch.autograd.grad(torch.tensor(1.0), leaf([1.0]))
    with pytest.raises(RuntimeError, match="element 1 of tensors does not require grad"):
        torch.autograd.backward([leaf([1.0]).sum(), torch.tensor(1.0)])


def test_mismatched_gradient_shape():
    x = leaf([1.0, 2.0, 3.0])
    msg = re.escape("Mismatch in shape: grad_output[0] has a shape of torch.Size([2]) and output[0] has a shape of "
                    "torch.Size([3]).")
    with pytest.raises(RuntimeError, match=msg):
        (x * 2).backward(torch.ones(2))
    with pytest.raises(RuntimeError, match=msg):
        torch.autograd.grad(x * 2, x, torch.ones(2))
    with pytest.raises(RuntimeError, match=re.escape("grad_output[0] has a shape of torch.Size([1]) and output[0] "
                                                     "has a shape of torch.Size([])")):
        (x * 2).sum().backward(torch.ones(1))


# ------------------------------------------------------------------------------------ saved tensors are freed

def test_saved_intermediate_storage_is_freed_after_backward():
    gc.disable()
    try:
        x = leaf([1.0, 2.0, 3.0])
        h = x.exp()                                     # saved by the mul below, then dropped by us
        y = (h * h).sum()
        ref = weakref.ref(h._storage)
        del h
        assert ref() is not None                        # the graph keeps it for backward
        y.backward()
        assert ref() is None                            # released without waiting for the garbage collector
        close(x.grad, 2 * np.exp(2 * np.array([1.0, 2.0, 3.0])), 1e-5)
    finally:
        gc.enable()


def test_retained_graph_keeps_saved_tensors_until_dropped():
    gc.disable()
    try:
        x = leaf([1.0, 2.0])
        h = x * 3
        y = (h * h).sum()
        ref = weakref.ref(h._storage)
        del h
        y.backward(retain_graph=True)
        assert ref() is not None
        del y
        assert ref() is None                            # no reference cycle holds the graph
    finally:
        gc.enable()


def test_leaf_and_graph_form_no_reference_cycle():
    gc.disable()
    try:
        x = leaf([1.0, 2.0])
        y = (x * x).sum()
        node_ref = weakref.ref(y.grad_fn.next_functions[0][0])
        x_ref = weakref.ref(x)
        y.backward()
        del y
        assert node_ref() is None
        del x
        assert x_ref() is None
    finally:
        gc.enable()


# ------------------------------------------------------------------------------------ anomaly mode

def _divide_zero_by_zero(a):
    return a / a


def test_anomaly_mode_names_the_op_and_forward_trace():
    a = torch.tensor([0.0], requires_grad=True)
    with pytest.warns(UserWarning) as record:
        with torch.autograd.detect_anomaly():
            y = _divide_zero_by_zero(a)
            with pytest.raises(RuntimeError, match=re.escape("Function 'DivBackward0' returned nan values in its "
                                                             "1th output.")):
                y.sum().backward()
    messages = [str(w.message) for w in record]
    assert any("Anomaly Detection has been enabled" in m for m in messages)
    trace = next(m for m in messages if m.startswith("Error detected in DivBackward0"))
    assert "Traceback of forward call that caused the error" in trace and "_divide_zero_by_zero" in trace
    assert not torch.autograd.is_anomaly_enabled()
    y = _divide_zero_by_zero(torch.tensor([0.0], requires_grad=True))
    y.sum().backward()                                  # anomaly mode off: NaN passes silently


def test_set_detect_anomaly_and_version_hint():
    torch.autograd.set_detect_anomaly(True)
    try:
        assert torch.autograd.is_anomaly_enabled()
        x = leaf([1.0, 2.0])
        a = x * 2
        b = a.log()
        a.add_(1)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(RuntimeError, match="The variable in question was changed in there or anywhere later"):
                b.sum().backward()
    finally:
        torch.autograd.set_detect_anomaly(False)
    with torch.autograd.set_detect_anomaly(True):
        assert torch.autograd.is_anomaly_enabled()
    assert not torch.autograd.is_anomaly_enabled()


# ------------------------------------------------------------------------------------ second derivatives

def _x64(values):
    return torch.tensor(values, dtype=F64, requires_grad=True)


POINTS = [-2.0, -0.5, 0.0, 0.3, 1.7]


def _first_and_second(fn, values):
    x = _x64(values)
    (g,) = torch.autograd.grad(fn(x).sum(), x, create_graph=True)
    (gg,) = torch.autograd.grad(g.sum(), x)
    return g, gg


def test_second_derivative_tanh():
    g, gg = _first_and_second(torch.tanh, POINTS)
    t = np.tanh(POINTS)
    close(g, 1 - t * t, 1e-10)
    close(gg, -2 * t * (1 - t * t), 1e-10)


def test_second_derivative_sigmoid():
    g, gg = _first_and_second(torch.sigmoid, POINTS)
    s = 1 / (1 + np.exp(-np.array(POINTS)))
    close(g, s * (1 - s), 1e-10)
    close(gg, s * (1 - s) * (1 - 2 * s), 1e-10)


def _functional(name):
    """torch.nn.functional.<name> (or torch.<name>); skips while no helper has added the op yet."""
    nn = getattr(torch, "nn", None)
    fn = getattr(getattr(nn, "functional", None), name, None) or getattr(torch, name, None)
    if fn is None:
        pytest.skip(f"{name} is not in ops.yaml yet")
    return fn


def test_second_derivative_softplus():
    g, gg = _first_and_second(_functional("softplus"), POINTS)
    s = 1 / (1 + np.exp(-np.array(POINTS)))
    close(g, s, 1e-10)
    close(gg, s * (1 - s), 1e-10)


def test_second_derivative_log_softmax():
    log_softmax = _functional("log_softmax")
    rng = np.random.default_rng(0)
    xv, w, v = rng.normal(size=(3, 2, 4))
    x = _x64(xv.tolist())
    wt, vt = torch.tensor(w), torch.tensor(v)
    (g,) = torch.autograd.grad((log_softmax(x, 1) * wt).sum(), x, create_graph=True)
    p = np.exp(xv) / np.exp(xv).sum(1, keepdims=True)
    S = w.sum(1, keepdims=True)
    close(g, w - p * S, 1e-10)
    (gg,) = torch.autograd.grad((g * vt).sum(), x)
    close(gg, -S * (p * v - p * (p * v).sum(1, keepdims=True)), 1e-10)


def test_second_derivatives_of_matmul_chain():
    rng = np.random.default_rng(1)
    A, B, C, V = rng.normal(size=(3, 3)), rng.normal(size=(3, 4)), rng.normal(size=(4, 2)), rng.normal(size=(3, 4))
    a, b, c = _x64(A.tolist()), _x64(B.tolist()), _x64(C.tolist())
    loss = ((a @ b @ c) ** 2).sum() / 2
    gb, ga = torch.autograd.grad(loss, [b, a], create_graph=True)
    close(gb, A.T @ (A @ B @ C) @ C.T, 1e-10)
    close(ga, (A @ B @ C) @ (B @ C).T, 1e-10)
    hb, ha = torch.autograd.grad((gb * torch.tensor(V)).sum(), [b, a])
    close(hb, A.T @ A @ V @ C @ C.T, 1e-10)             # d/dB of <V, A^T A B C C^T>
    # d/dA of <V, A^T A B C C^T> = A (V M^T + M V^T) with M = B C C^T
    M = B @ C @ C.T
    close(ha, A @ (V @ M.T + M @ V.T), 1e-10)


def test_fused_and_formula_backward_agree():
    x = _x64(POINTS)
    y = (x.tanh() * x.sigmoid()).sum()
    (fused,) = torch.autograd.grad(y, x, retain_graph=True)
    (formula,) = torch.autograd.grad(y, x, create_graph=True)
    close(fused, formula.detach(), 1e-12)


def test_grad_is_grads_batched_stacks_one_vjp_per_entry():
    a = torch.tensor([1.0, -2.0, 3.0], requires_grad=True)
    y = a * a                                       # dy/da = diag(2a)
    v = torch.tensor([[1.0, 0.0, 0.0], [0.0, 2.0, 1.0]])
    (g,) = torch.autograd.grad(y, a, v, is_grads_batched=True)
    np.testing.assert_allclose(g.numpy(), [[2.0, 0.0, 0.0], [0.0, -8.0, 6.0]])
    with pytest.raises(RuntimeError, match="first dimension of each grad_output"):
        torch.autograd.grad(a * a, a, torch.ones(2, 4), is_grads_batched=True)
    with pytest.raises(IndexError, match="invalid index of a 0-dim tensor"):
        torch.autograd.grad(a * a, a, torch.ones(()), is_grads_batched=True)


@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_inplace_ops_are_recorded_above_their_handler(device):
    """The dispatcher records an in-place op after its handler wrote: self as it was (mul_ saves it for the
    other operand's gradient), a 0-d cpu operand and a chain of writes through one tensor, on each back end."""
    xv, wv = np.array([1., 2., 3.], np.float32), np.array([4., 5., 6.], np.float32)
    x = torch.tensor(xv, device=device, requires_grad=True)
    w = torch.tensor(wv, device=device, requires_grad=True)
    s = torch.tensor(0.5, requires_grad=True)
    y = x * 1
    y.mul_(w)
    y.sin_()
    y.add_(torch.tensor(2.0))
    y.mul_(s)
    assert y.grad_fn.name() == "MulBackward0" and y._version == 4
    y.sum().backward()
    if device == "meta":
        assert x.grad.shape == (3,) and x.grad.device.type == "meta" and w.grad.shape == (3,)
        return
    c = np.cos(xv * wv) * 0.5
    np.testing.assert_allclose(x.grad.numpy(), c * wv, rtol=1e-6)
    np.testing.assert_allclose(w.grad.numpy(), c * xv, rtol=1e-6)
    np.testing.assert_allclose(s.grad.numpy(), (np.sin(xv * wv) + 2).sum(), rtol=1e-6)
