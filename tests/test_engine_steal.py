"""The engine hands a leaf the gradient buffer itself when no one else can see it (no copy), and a copy whenever
anything else holds that gradient: the user, a hook, another leaf's gradient, a view."""
import numpy as np

import reftorch as torch


def _shares(a, b):
    return np.shares_memory(a.detach().numpy(), b.detach().numpy())


def test_fresh_gradient_is_not_copied_and_layout_kept():
    x = torch.randn(3, 4, requires_grad=True)
    w = torch.randn(5, 4, requires_grad=True)
    torch.nn.functional.linear(x, w).sum().backward()
    assert w.grad.is_contiguous() and w.grad.shape == (5, 4)
    np.testing.assert_allclose(w.grad.numpy(), np.tile(x.detach().numpy().sum(0), (5, 1)), rtol=1e-5)


def test_gradients_someone_else_holds_are_copied():
    x = torch.randn(3, 4, requires_grad=True)
    w = torch.randn(3, 4, requires_grad=True)
    g = torch.ones(3, 4)
    x.backward(g)                       # the user's gradient straight into a leaf
    assert not _shares(x.grad, g)
    x.grad = None
    (x + 0).backward(g)
    assert not _shares(x.grad, g)
    x.grad = None
    (x + w).backward(g)                 # one gradient for two leaves
    assert not _shares(x.grad, w.grad) and not _shares(x.grad, g) and not _shares(w.grad, g)
    x.grad = None
    kept = []
    h = x.register_hook(lambda gr: kept.append(gr))
    (x * 2).sum().backward()
    h.remove()
    assert not _shares(x.grad, kept[0])
    x.grad.add_(1)
    np.testing.assert_array_equal(kept[0].numpy(), np.full((3, 4), 2.0, np.float32))


def test_second_backward_accumulates_in_place():
    x = torch.randn(4, requires_grad=True)
    (x * 3).sum().backward()
    first = x.grad
    (x * 3).sum().backward()
    assert x.grad is first
    np.testing.assert_array_equal(x.grad.numpy(), np.full(4, 6.0, np.float32))
