"""utils.checkpoint and reftorch.random: checkpointed gradients equal the plain ones, dropout included."""
import warnings

import pytest

import reftorch as torch
import reftorch.random
from reftorch.utils.checkpoint import CheckpointError, checkpoint, checkpoint_sequential

nn = torch.nn


def _close(a, b):
    return (a - b).abs().max().item() <= 1e-5 * (1 + b.abs().max().item())


@pytest.fixture
def model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Dropout(0.5), nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 3))


def _grads(model, x, fn):
    for p in model.parameters():
        p.grad = None
    x.grad = None
    torch.manual_seed(3)
    out = fn(x)
    out.sum().backward()
    return out, [x.grad.clone()] + [p.grad.clone() for p in model.parameters()]


@pytest.mark.parametrize("use_reentrant", [True, False])
@pytest.mark.parametrize("sequential", [False, True])
def test_gradients_match_with_dropout(model, use_reentrant, sequential):
    x = torch.randn(5, 4, requires_grad=True)
    out0, ref = _grads(model, x, model)
    if sequential:
        out, got = _grads(model, x, lambda x: checkpoint_sequential(model, 3, x, use_reentrant=use_reentrant))
    else:
        out, got = _grads(model, x, lambda x: checkpoint(model, x, use_reentrant=use_reentrant))
    assert _close(out, out0)
    assert all(_close(a, b) for a, b in zip(ref, got))


@pytest.mark.parametrize("use_reentrant", [True, False])
def test_without_rng_preservation_dropout_differs(model, use_reentrant):
    x = torch.randn(5, 4, requires_grad=True)
    _, ref = _grads(model, x, model)
    _, got = _grads(model, x, lambda x: checkpoint(model, x, use_reentrant=use_reentrant, preserve_rng_state=False))
    assert not all(_close(a, b) for a, b in zip(ref, got))


def test_non_reentrant_kwargs_structures_and_autograd_grad():
    x = torch.randn(3, requires_grad=True)
    w = torch.randn(3, requires_grad=True)        # closed over, as a module's parameter is

    def f(a, scale=1.0):
        return {"y": ((a * scale).sin() * w, a.sum()), "n": 3}

    out = checkpoint(f, x, scale=2.0, use_reentrant=False)
    assert out["n"] == 3
    gx, gw = torch.autograd.grad(out["y"][0].sum() + out["y"][1], (x, w))
    assert _close(gx, 2 * (2 * x).cos() * w + 1)
    assert _close(gw, (2 * x).sin())
    assert x.grad is None and w.grad is None


def test_non_reentrant_double_backward():
    x = torch.randn(4, requires_grad=True)
    y = checkpoint(lambda a: (a ** 3).sum(), x, use_reentrant=False)
    (g,) = torch.autograd.grad(y, x, create_graph=True)
    (gg,) = torch.autograd.grad(g.sum(), x)
    assert _close(gg, 6 * x)


def test_warnings_and_errors():
    x = torch.randn(2, requires_grad=True)
    with pytest.warns(UserWarning, match="the use_reentrant parameter should be passed explicitly"):
        checkpoint(lambda a: a * 2, x)
    with pytest.warns(UserWarning, match="checkpoint_sequential: the use_reentrant"):
        checkpoint_sequential([nn.Identity(), nn.Identity()], 2, x)
    with pytest.raises(ValueError, match="Unexpected keyword arguments: k"):
        checkpoint(lambda a, k: a, x, k=1, use_reentrant=True)
    with pytest.raises(ValueError, match="Passing `context_fn` or `debug` is only supported"):
        checkpoint(lambda a: a, x, use_reentrant=True, debug=True)
    with pytest.raises(ValueError, match=r"determinism_check should be one of \['default', 'none'\]"):
        checkpoint(lambda a: a, x, use_reentrant=False, determinism_check="x")
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        checkpoint(lambda a: a * 2, torch.randn(2), use_reentrant=True)
    assert "None of the inputs have requires_grad=True" in str(w[0].message)


def test_determinism_check_and_context_fn():
    x = torch.randn(4, requires_grad=True)
    calls = []

    def f(a):
        calls.append(1)
        return a[: len(calls) + 1] * 2       # a different shape when recomputed
    y = checkpoint(f, x, use_reentrant=False)
    with pytest.raises(CheckpointError, match="different metadata"):
        y.sum().backward()
    calls.clear()
    y = checkpoint(f, x, use_reentrant=False, determinism_check="none")
    with pytest.raises(RuntimeError, match="Mismatch in shape") as err:   # unchecked: caught later
        y.sum().backward()
    assert not isinstance(err.value, CheckpointError)

    seen = []

    class Ctx:
        def __init__(self, tag):
            self.tag = tag

        def __enter__(self):
            seen.append(self.tag)

        def __exit__(self, *exc):
            return False
    y = checkpoint(lambda a: a.exp(), x, use_reentrant=False, context_fn=lambda: (Ctx("fwd"), Ctx("re")))
    y.sum().backward()
    assert seen == ["fwd", "re"]


def test_random_module_fork_rng():
    assert torch.random.get_rng_state is torch.get_rng_state
    torch.random.manual_seed(5)
    assert torch.random.initial_seed() == 5
    a = torch.rand(3)
    torch.random.manual_seed(5)
    with torch.random.fork_rng():
        b = torch.rand(3)
    c = torch.rand(3)
    assert (a.tolist() == b.tolist()) and (b.tolist() == c.tolist())
    with torch.random.fork_rng(enabled=False):
        torch.rand(3)
    assert not (torch.rand(3).tolist() == a.tolist())
    state = torch.random.cuda_get_rng_state()
    assert state.dtype == torch.uint8 and state.shape == (16,)
    s = torch.random.seed()
    assert torch.random.initial_seed() == s
    assert torch.random.default_generator is torch.default_generator


def test_non_reentrant_tensor_kwargs_and_closed_over_non_leaf():
    torch.manual_seed(1)
    w0 = torch.randn(3, requires_grad=True)
    x = torch.randn(3, requires_grad=True)
    h = w0 * 2                        # a non-leaf the function closes over (used only inside it)
    g = w0 * 3                        # a non-leaf passed as a keyword, also used outside

    def f(a, *, b):
        return (a * b * h).sum()

    loss = checkpoint(f, x, b=g, use_reentrant=False) + g.sum()
    loss.backward()
    assert _close(x.grad, g * h)
    assert _close(w0.grad, 3 * x * h + 2 * x * g + 3)


def test_rng_stash_replays_the_cuda_generator_too():
    from reftorch import cuda
    from reftorch.utils.checkpoint import _RngStash
    cuda.manual_seed(11)
    stash = _RngStash(False, [])
    stash.preserve, stash.cuda_devices = True, [0]       # as for an argument on cuda:0
    stash.cpu_state = torch.get_rng_state()
    stash.cuda_states = [torch.random.cuda_get_rng_state(0)]
    first = cuda._counter_state(100)                      # the forward's draw
    cpu_first = torch.rand(2).tolist()
    with stash.replay():
        assert cuda._counter_state(100) == first          # the recomputation draws the same counters
        assert torch.rand(2).tolist() == cpu_first
    assert cuda._counter_state(1)[1] == first[1] + 100    # and the generators go on from where they were
