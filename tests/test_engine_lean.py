"""The engine's lean loop (nodes without hooks, no anomaly mode, no inputs=) and the paths it must leave to the
general one: node hooks, tensor hooks, retain_grad, retain_graph, create_graph, anomaly mode, inputs=; and the
gradient buffers of array ops handed to leaves without a copy when no one else holds them."""
import numpy as np
import pytest

import reftorch as torch
import reftorch.nn.functional as F


def _mlp_leaves():
    x = torch.randn(6, 4)
    w1 = torch.randn(5, 4, requires_grad=True)
    b1 = torch.randn(5, requires_grad=True)
    w2 = torch.randn(3, 5, requires_grad=True)
    y = torch.tensor([0, 2, 1, 1, 0, 2])
    return x, y, (w1, b1, w2)


def _loss(x, y, w1, b1, w2):
    return F.cross_entropy(F.linear(F.relu(F.linear(x, w1, b1)), w2), y)


def test_lean_loop_matches_autograd_grad():
    x, y, leaves = _mlp_leaves()
    _loss(x, y, *leaves).backward()
    want = torch.autograd.grad(_loss(x, y, *leaves), leaves)      # inputs= : the general path
    for p, g in zip(leaves, want):
        np.testing.assert_allclose(p.grad.numpy(), g.numpy(), rtol=1e-6, atol=1e-7)


def test_node_hooks_run_and_replace():
    x, y, (w1, b1, w2) = _mlp_leaves()
    loss = _loss(x, y, w1, b1, w2)
    seen = []
    node = loss.grad_fn
    node.register_prehook(lambda go: seen.append("pre") or (go[0] * 2,))
    node.register_hook(lambda gi, go: seen.append("post"))
    loss.backward()
    assert seen == ["pre", "post"]
    w1.grad = b1.grad = w2.grad = None
    _loss(x, y, w1, b1, w2).backward()
    doubled = w2.grad.numpy().copy()
    w2.grad = None
    loss2 = _loss(x, y, w1, b1, w2)
    (loss2 * 2).backward()
    np.testing.assert_allclose(doubled * 2, w2.grad.numpy(), rtol=1e-6)


def test_tensor_hook_and_retain_grad_on_non_leaf():
    x, y, (w1, b1, w2) = _mlp_leaves()
    h = F.linear(x, w1, b1)
    h.retain_grad()
    h.register_hook(lambda g: g * 0)
    F.cross_entropy(F.linear(F.relu(h), w2), y).backward()
    assert h.grad is not None and not np.any(h.grad.numpy())
    assert not np.any(w1.grad.numpy()) and not np.any(b1.grad.numpy())


def test_backward_twice_without_retain_graph_raises():
    x, y, leaves = _mlp_leaves()
    loss = _loss(x, y, *leaves)
    loss.backward(retain_graph=True)
    first = leaves[0].grad.numpy().copy()
    loss.backward()
    np.testing.assert_allclose(leaves[0].grad.numpy(), 2 * first, rtol=1e-6)
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        loss.backward()


def test_create_graph_second_order():
    x = torch.randn(4, requires_grad=True)
    (g,) = torch.autograd.grad((x * x * x).sum(), x, create_graph=True)
    g.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 6 * x.detach().numpy(), rtol=1e-6)


@pytest.mark.filterwarnings("ignore:Error detected in", "ignore:Anomaly Detection has been enabled")
def test_anomaly_mode_still_checks_nan():
    x = torch.tensor([0.0], requires_grad=True)
    with torch.autograd.detect_anomaly():
        y = torch.sqrt(x) * 0.0
        with pytest.raises(RuntimeError, match="returned nan values"):
            y.sum().backward()


def test_inplace_change_of_saved_tensor_still_raises():
    x, y, (w1, b1, w2) = _mlp_leaves()
    h = F.relu(F.linear(x, w1, b1))
    loss = F.cross_entropy(F.linear(h, w2), y)
    with torch.no_grad():
        h.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()


def test_array_op_gradient_held_by_a_hook_is_copied():
    x = torch.randn(3, 4)
    w = torch.randn(5, 4, requires_grad=True)
    kept = []
    w.register_hook(lambda g: kept.append(g))
    F.linear(x, w).sum().backward()
    assert not np.shares_memory(w.grad.numpy(), kept[0].numpy())
    np.testing.assert_array_equal(w.grad.numpy(), kept[0].numpy())


def test_array_op_gradient_becomes_grad_without_a_copy(monkeypatch):
    clones = []
    clone = torch.Tensor.clone
    monkeypatch.setattr(torch.Tensor, "clone", lambda self, *a, **k: clones.append(self) or clone(self, *a, **k))
    x, y, leaves = _mlp_leaves()
    _loss(x, y, *leaves).backward()
    assert not [c for c in clones if len(c.shape) == 2]         # the weights' gradients (array ops) not copied
    for p in leaves:
        assert p.grad.shape == p.shape and p.grad.is_contiguous()


@pytest.mark.parametrize("shape,dim", [((3, 5), 1), ((3, 5), 0), ((2, 3, 4), -1), ((4,), 0), ((), 0)])
def test_log_softmax_gradient_op_first_and_second_order(shape, dim):
    x = torch.randn(shape, dtype=torch.float64, requires_grad=True)     # randn(*()) is an error in torch
    assert torch.autograd.gradcheck(lambda t: torch.log_softmax(t, dim), (x,))
    assert torch.autograd.gradgradcheck(lambda t: torch.log_softmax(t, dim), (x,))
