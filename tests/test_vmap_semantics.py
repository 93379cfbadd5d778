"""vmap's randomness flags, writes into batched tensors, and the values it refuses to read, as PyTorch 2.13's
torch.func.vmap has them (expected values and messages taken from torch 2.13)."""
from __future__ import annotations

import numpy as np
import pytest

import reftorch as torch
from reftorch.func import grad, vmap

RANDOM_ERROR = ("vmap: called random operation while in randomness error mode. Please either use the 'same' or "
                "'different' randomness flags on vmap or perform the randomness operation out of vmap")
SAME_BATCHED = ("Vmap does not currently support same randomness with a batched tensor input. Please file an issue "
                "with functorch")
FILL_UNBATCHED = ("vmap: Cannot ask for different inplace randomness on an unbatched tensor. This will appear like "
                  "same randomness. If this is necessary for your usage, please file an issue with functorch.")
OUT = ("vmap: We do not support calling out variants of random operations inside of vmap. Please use non-out "
       "variants as a workaround")
NO_STORAGE = "Cannot access data pointer of Tensor that doesn't have storage"


def _inplace(name):
    return (f"vmap: {name}(self, *extra_args) is not possible because there exists a Tensor `other` in extra_args "
            "that has more elements than `self`. This happened due to `other` being vmapped over but `self` not being "
            f"vmapped over in a vmap. Please try to use out-of-place operators instead of {name}. If said operator is "
            "being called inside the PyTorch framework, please file a bug report instead.")


def _raises(cls, text, fn):
    with pytest.raises(cls) as info:
        fn()
    assert str(info.value) == text


def _rows_equal(t):
    a = t.numpy()
    return bool((a == a[:1]).all())


RANDOM = {
    "rand": lambda x: x + torch.rand(3),
    "randn": lambda x: x + torch.randn(3),
    "randint": lambda x: x + torch.randint(0, 1000, (3,)),
    "randperm": lambda x: x + torch.randperm(3),
    "normal": lambda x: x + torch.normal(0., 1., (3,)),
    "rand_like": lambda x: torch.rand_like(x),
    "randint_like": lambda x: torch.randint_like(x, 1000),
    "uniform_": lambda x: x.clone().uniform_(),
    "normal_": lambda x: x.clone().normal_(),
    "bernoulli_": lambda x: x.clone().bernoulli_(0.5),
    "dropout": lambda x: torch.nn.functional.dropout(x, 0.5),
}
SAMPLERS = {
    "normal(tensor)": lambda x: torch.normal(x, 1.),
    "bernoulli(p)": lambda x: torch.bernoulli(x * 0.5),
    "multinomial": lambda x: torch.multinomial(x, 2),
    "poisson": lambda x: torch.poisson(x),
}


def test_randomness_flags():
    x = torch.ones(8, 3)
    for name, f in {**RANDOM, **SAMPLERS}.items():
        _raises(RuntimeError, RANDOM_ERROR, lambda: vmap(f)(x))
        out = vmap(f, randomness="different")(x)
        assert tuple(out.shape[:1]) == (8,) and not _rows_equal(out), name
        if name in SAMPLERS:        # a batched input cannot share one draw
            _raises(RuntimeError, SAME_BATCHED, lambda: vmap(f, randomness="same")(x))
        else:
            assert _rows_equal(vmap(f, randomness="same")(x)), name
    # an unbatched input to a sampler is drawn per sample ('different') or once ('same')
    unb = lambda x: x + torch.bernoulli(torch.full((3,), 0.5))      # noqa: E731
    assert not _rows_equal(vmap(unb, randomness="different")(x)) and _rows_equal(vmap(unb, randomness="same")(x))
    _raises(RuntimeError, FILL_UNBATCHED, lambda: vmap(lambda x: x + torch.empty(3).uniform_(),
                                                       randomness="different")(x))
    assert _rows_equal(vmap(lambda x: x + torch.empty(3).uniform_(), randomness="same")(x))
    _raises(RuntimeError, OUT, lambda: vmap(lambda x: torch.rand(3, out=x), randomness="different")(x))
    _raises(RuntimeError, OUT, lambda: vmap(lambda x: torch.rand(3, out=x))(x))
    # the values drawn are the distribution's: uniform in [0, 1), permutations are permutations
    perms = vmap(lambda x: torch.randperm(3), randomness="different")(x).numpy()
    assert (np.sort(perms, 1) == np.arange(3)).all()
    u = vmap(lambda x: torch.rand(()), randomness="different")(torch.ones(500)).numpy()
    assert 0 <= u.min() and u.max() < 1 and len(np.unique(u)) == 500


def test_randomness_nested_and_chunked():
    x = torch.ones(4, 3)
    inner = lambda flag: vmap(lambda x: torch.rand(()), randomness=flag)    # noqa: E731
    _raises(RuntimeError, RANDOM_ERROR, lambda: vmap(inner("error"), randomness="different")(x))
    _raises(RuntimeError, RANDOM_ERROR, lambda: vmap(inner("different"), randomness="error")(x))
    both = vmap(inner("different"), randomness="different")(x).numpy()
    assert len(np.unique(both)) == 12
    outer_same = vmap(inner("different"), randomness="same")(x)
    assert _rows_equal(outer_same) and len(np.unique(outer_same.numpy()[0])) == 3
    inner_same = vmap(inner("same"), randomness="different")(x).numpy()
    assert (inner_same == inner_same[:, :1]).all() and len(np.unique(inner_same[:, 0])) == 4
    # 'same' is the same across chunks (PyTorch replays the generator's state for each chunk)
    chunked = vmap(lambda x: x + torch.rand(3), randomness="same", chunk_size=2)(torch.zeros(6, 3))
    assert _rows_equal(chunked)
    differ = vmap(lambda x: x + torch.rand(3), randomness="different", chunk_size=2)(torch.zeros(6, 3)).numpy()
    assert len(np.unique(differ)) == 18


def _clone_then(op):
    def f(x, y):
        x = x.clone()
        op(x, y)
        return x
    return f


def test_writes_into_batched_tensors():
    x = torch.arange(6.).reshape(2, 3)
    y = torch.tensor([10., 20.])
    cases = {       # torch 2.13's results
        "x[0] = y": (lambda x, y: x.__setitem__(0, y), [[10., 1., 2.], [20., 4., 5.]]),
        "x[..., 0] = y": (lambda x, y: x.__setitem__((Ellipsis, 0), y), [[10., 1., 2.], [20., 4., 5.]]),
        "x[idx] += 1": (lambda x, y: x.__setitem__(torch.tensor([0, 2]), x[torch.tensor([0, 2])] + 1),
                        [[1., 1., 3.], [4., 4., 6.]]),
        "x[1:] *= 2": (lambda x, y: x[1:].mul_(2), [[0., 2., 4.], [3., 8., 10.]]),
        "index_put_": (lambda x, y: x.index_put_((torch.tensor([1]),), y), [[0., 10., 2.], [3., 20., 5.]]),
        "slice masked_fill_": (lambda x, y: x[1:].masked_fill_(x[1:] > 3, -1.), [[0., 1., 2.], [3., -1., -1.]]),
        "slice copy_": (lambda x, y: x[:1].copy_(y.reshape(1)), [[10., 1., 2.], [20., 4., 5.]]),
        "bool mask = y": (lambda x, y: x.__setitem__(torch.tensor([True, False, True]), y),
                          [[10., 1., 10.], [20., 4., 20.]]),
        "masked_fill_ batched value": (lambda x, y: x.masked_fill_(x > 2, y), [[0., 1., 2.], [20., 20., 20.]]),
        "index_fill_": (lambda x, y: x.index_fill_(0, torch.tensor([1]), -1.), [[0., -1., 2.], [3., -1., 5.]]),
        "index_add_": (lambda x, y: x.index_add_(0, torch.tensor([1]), y.reshape(1)), [[0., 11., 2.], [3., 24., 5.]]),
        "scatter_": (lambda x, y: x.scatter_(0, torch.tensor([1]), y.reshape(1)), [[0., 10., 2.], [3., 20., 5.]]),
        "swap": (lambda x, y: x.__setitem__(slice(0, 2), torch.stack([x[1], x[0]])), [[1., 0., 2.], [4., 3., 5.]]),
    }
    for name, (op, want) in cases.items():
        assert vmap(_clone_then(op))(x, y).tolist() == want, name
    # unbatched self, batched value: PyTorch's error, and nothing written
    z = torch.zeros(3)
    for name, op in {"inplace arithmetic": lambda z, x, y: z.__setitem__(0, y),
                     "copy_": lambda z, x, y: z[:2].copy_(x[:2]),
                     "masked_fill_": lambda z, x, y: z.masked_fill_(x > 2, 1.)}.items():
        _raises(RuntimeError, _inplace("inplace arithmetic"), lambda: vmap(lambda x, y: op(z, x, y))(x, y))
    for name, op in {"index_put_": lambda z, x, y: z.index_put_((torch.tensor([0]),), y),
                     "index_put_ ": lambda z, x, y: z.__setitem__(torch.tensor([True, False, True]), y),
                     "fill_": lambda z, x, y: z.__setitem__(slice(0, 2), y)}.items():
        _raises(RuntimeError, _inplace(name.strip()), lambda: vmap(lambda x, y: op(z, x, y))(x, y))
    _raises(RuntimeError, "output with shape [3] doesn't match the broadcast shape [2, 3]",
            lambda: vmap(lambda x: z.add_(x))(x))
    _raises(RuntimeError, _inplace("inplace arithmetic"), lambda: vmap(lambda x: z.mul_(x))(x))
    _raises(RuntimeError, _inplace("aten::pow_").replace("in a vmap.", "at level 1."),
            lambda: vmap(lambda x: z.pow_(x))(x))
    assert z.tolist() == [0., 0., 0.]
    # a write under grad inside vmap: per-sample gradients through it
    g = vmap(grad(lambda x: _clone_then(lambda x, y: x.__setitem__(0, x[1] * 3))(x, None).pow(2).sum()))(x)
    assert g.tolist() == [[0., 20., 4.], [0., 80., 10.]]
    assert vmap(lambda x: x.detach() * 2)(x).tolist() == [[0., 2., 4.], [6., 8., 10.]]


def test_batched_values_not_read():
    x = torch.arange(6.).reshape(2, 3)
    for f in (lambda x: x.tolist(), lambda x: x[0].tolist(), lambda x: x.numpy(), lambda x: np.asarray(x),
              lambda x: x.data_ptr(), grad(lambda x: x.sum() * x.sum().tolist())):
        _raises(RuntimeError, NO_STORAGE, lambda: vmap(f)(x))
    _raises(NotImplementedError, "Cannot access storage of BatchedTensorImpl",
            lambda: vmap(lambda x: x.untyped_storage())(x))
    _raises(RuntimeError, "vmap: It looks like you're attempting to use a Tensor in some data-dependent control "
            "flow. We don't support that yet, please file an issue at https://github.com/pytorch/pytorch/issues .",
            lambda: vmap(lambda x: x[0].is_nonzero())(x))
    both = ("vmap: It looks like you're either (1) calling .item() on a Tensor or (2) attempting to use a Tensor in "
            "some data-dependent control flow or (3) encountering this error in PyTorch internals. For (1): we don't "
            "support vmap over calling .item() on a Tensor, please try to rewrite what you're doing with other "
            "operations. For (2): we don't support data-dependent control flow in vmap yet, please file an issue at "
            "https://github.com/pytorch/pytorch/issues . For (3): please file an issue.")
    for f in (grad(lambda x: x.sum() * x.sum().item()), grad(lambda x: x.sum() if x.sum() > 0 else -x.sum()),
              lambda x: torch.func.jvp(lambda x: x.sum() * float(x.sum()), (x,), (x,))):
        _raises(RuntimeError, both, lambda: vmap(f)(x))
    # unbatched tensors inside vmap still give their values
    assert vmap(lambda x: x + torch.tensor([1.]).tolist()[0] + torch.tensor(1.).item())(x).tolist() == \
        [[2., 3., 4.], [5., 6., 7.]]


def test_forward_ad_view_tangents():
    """A view's tangent is the view of its base's tangent, and in-place ops write tangents in place (torch 2.13)."""
    fwAD = torch.autograd.forward_ad
    p = torch.arange(6.).reshape(2, 3)
    with fwAD.dual_level():
        t = torch.ones(2, 3)
        x = fwAD.make_dual(p.clone(), t)
        assert fwAD.unpack_dual(x).tangent is t
        v = x[0]
        tv = fwAD.unpack_dual(v).tangent
        assert tv.data_ptr() == t.data_ptr() and tuple(tv.shape) == (3,)
        v.mul_(3)
        assert t.tolist() == [[3., 3., 3.], [1., 1., 1.]] and tv.tolist() == [3., 3., 3.]
        x.mul_(2)
        assert fwAD.unpack_dual(v).tangent.tolist() == [6., 6., 6.] and tv.tolist() == [6., 6., 6.]
        # a plain tensor written through a view with a dual: the base gets a tangent, zero elsewhere
        y = p.clone()
        w = y[1]
        w.copy_(fwAD.make_dual(torch.zeros(3), torch.full((3,), 5.)))
        assert fwAD.unpack_dual(y).tangent.tolist() == [[0., 0., 0.], [5., 5., 5.]]
        assert fwAD.unpack_dual(w).tangent.tolist() == [5., 5., 5.]
        # a view taken before its base got a tangent sees it
        z = p.clone()
        zv = z[:, 1]
        z.copy_(x)
        assert fwAD.unpack_dual(zv).tangent.tolist() == [6., 2.]
        # through a view of a view
        a = fwAD.make_dual(p.clone(), torch.ones(2, 3))
        a.t()[0, 0].add_(fwAD.make_dual(torch.tensor(0.), torch.tensor(100.)))
        assert fwAD.unpack_dual(a).tangent.tolist() == [[101., 1., 1.], [1., 1., 1.]]
        q = torch.zeros(2, 3)
        q2 = q[1]
        q[0].add_(fwAD.make_dual(torch.ones(3), torch.full((3,), 7.)))
        assert fwAD.unpack_dual(q2).tangent.tolist() == [0., 0., 0.]
        assert fwAD.unpack_dual(q).tangent.tolist() == [[7., 7., 7.], [0., 0., 0.]]
        # values without a tangent written into a dual: its tangent there is zero
        c = fwAD.make_dual(torch.ones(2, 3), torch.full((2, 3), 4.))
        c[0] = torch.zeros(3)
        assert fwAD.unpack_dual(c).tangent.tolist() == [[0., 0., 0.], [4., 4., 4.]]
        # a tangent laid out otherwise than its primal is copied into the primal's layout
        tt = torch.ones(3, 2).t()
        c3 = fwAD.make_dual(torch.ones(2, 3), tt)
        assert fwAD.unpack_dual(c3).tangent is not tt and fwAD.unpack_dual(c3).tangent.stride() == (3, 1)
        # an op's result and an in-place op on its view
        f = fwAD.make_dual(torch.ones(2, 3), torch.full((2, 3), 2.))
        g = f.sin()
        g[0].mul_(f[0])
        np.testing.assert_allclose(fwAD.unpack_dual(g).tangent.numpy(),
                                   [[2.7635, 2.7635, 2.7635], [1.0806, 1.0806, 1.0806]], atol=1e-4)
    assert fwAD.unpack_dual(x).tangent is None


def test_inplace_under_jvp_inside_vmap():
    """In-place ops and writes under jvp inside vmap carry the tangents (values from torch 2.13)."""
    jvp = torch.func.jvp
    x = torch.arange(1., 4.)
    xs, ts = torch.stack([x, x + 1]), torch.ones(2, 3)

    def mul_(x):
        y = x.clone()
        y.mul_(x)
        return y

    def write_then_mul_(x):
        y = x.clone()
        y[0] = y[1] * 2
        y.mul_(x)
        return y
    assert vmap(lambda x, t: jvp(mul_, (x,), (t,))[1])(xs, ts).tolist() == [[2., 4., 6.], [4., 6., 8.]]
    assert vmap(lambda x, t: jvp(write_then_mul_, (x,), (t,))[1])(xs, ts).tolist() == [[6., 4., 6.], [10., 6., 8.]]


def test_batched_index_tensors():
    """Reads and writes by index tensors batched inside vmap: each sample's indices on its sample (torch 2.13)."""
    x = torch.arange(6.).reshape(2, 3)
    i = torch.tensor([0, 2])
    assert vmap(lambda x, i: x[i])(x, i).tolist() == [0., 5.]
    assert vmap(lambda x, i: x[i])(x, torch.tensor([[0, 1], [2, 2]])).tolist() == [[0., 1.], [5., 5.]]
    assert vmap(lambda i: torch.arange(3.)[i])(i).tolist() == [0., 2.]
    assert vmap(lambda x, i: x.clone().index_put_((i,), torch.tensor(7.)))(x, i).tolist() == \
        [[7., 1., 2.], [3., 4., 7.]]
    assert vmap(lambda x, i: x.clone().index_put_((i,), torch.tensor(7.), accumulate=True))(
        x, torch.tensor([[0, 0], [1, 2]])).tolist() == [[14., 1., 2.], [3., 11., 12.]]
    assert vmap(_clone_then(lambda x, i: x.__setitem__(i, 5.)))(x, i).tolist() == [[5., 1., 2.], [3., 4., 5.]]

    def add_at(x, i, y):
        x = x.clone()
        x[i] += y
        return x
    assert vmap(add_at)(x, i, torch.tensor([10., 20.])).tolist() == [[10., 1., 2.], [3., 4., 25.]]
    mask = ("vmap: We do not support batching operators that can support dynamic shape. Attempting to batch over "
            "indexing with a boolean mask.")
    _raises(RuntimeError, mask, lambda: vmap(lambda x: x[x > 2])(x))
    _raises(RuntimeError, mask, lambda: vmap(_clone_then(lambda x, y: x.__setitem__(x > 2, 0.)))(x, x))
    _raises(RuntimeError, _inplace("index_put_"), lambda: vmap(lambda i: torch.zeros(3).__setitem__(i, 1.))(i))


def test_inplace_views_of_batched_tensors():
    """unsqueeze_ / transpose_ / squeeze_ on a batched tensor reshape every sample (torch 2.13)."""
    x = torch.arange(6.).reshape(2, 3)
    assert vmap(lambda x: x.clone().unsqueeze_(0))(x).tolist() == [[[0., 1., 2.]], [[3., 4., 5.]]]
    assert vmap(lambda x: x.clone().reshape(3, 1).transpose_(0, 1).mul_(2))(x).tolist() == \
        [[[0., 2., 4.]], [[6., 8., 10.]]]
    assert vmap(lambda x: x.clone().reshape(1, 3).squeeze_(0).add_(1))(x).tolist() == [[1., 2., 3.], [4., 5., 6.]]
    m = torch.arange(12.).reshape(2, 2, 3)      # t() of batched matrices and vectors (ops.yaml `vmap:`)
    assert vmap(lambda m: m.t())(m).tolist() == [[[0., 3.], [1., 4.], [2., 5.]], [[6., 9.], [7., 10.], [8., 11.]]]
    assert vmap(lambda m: m[0].t())(m).tolist() == [[0., 1., 2.], [6., 7., 8.]]
    assert vmap(lambda m: m.clone().t_().mul_(2))(m).tolist() == \
        [[[0., 6.], [2., 8.], [4., 10.]], [[12., 18.], [14., 20.], [16., 22.]]]

    def write_after(x):
        y = x.clone()
        y.unsqueeze_(1)
        y[0, 0] = 9.
        return y
    assert vmap(write_after)(x).tolist() == [[[9.], [1.], [2.]], [[9.], [4.], [5.]]]
