"""reftorch.compile: compiled == eager (forward and gradients) over random elementwise graphs drawn
from the registry, plus graph breaks, guards and re-traces, fullgraph errors, modules, decorators."""
from __future__ import annotations

import math
import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import reftorch
from reftorch.compile import GraphBreak
from reftorch.kernels.api import SPECS

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _registry_ops():
    from codegen import model
    out = []
    for op in model.load(os.path.join(ROOT, "reftorch", "ops.yaml")):
        s = SPECS.get(op.name)
        if op.kind not in ("unary", "binary") or s is None or not s["function"] or "float" not in s["dtypes"]:
            continue
        if not op.test.fuzz or s["result"] not in ("same", "float") or op.name.startswith("_"):
            continue
        if any(a.type not in ("Tensor",) and a.default is None for a in op.signature.args):
            continue            # required non-tensor args: left to the op's own tests
        if any((op.formula(a.name) or "").startswith("not_implemented(") for a in op.signature.tensor_args):
            continue            # an input whose gradient raises, as PyTorch's (igamma's self): not in a graph
        domain = {name: (lo, hi) for name, lo, hi in op.test.domain}
        targs = [a.name for a in op.signature.tensor_args]
        # a Python number may stand for the other operands unless ops.yaml's `numbers:` says torch refuses it
        numbers_ok = op.numbers is None or all(a in op.numbers for a in targs[1:] if a not in domain)
        out.append((op.name, targs, domain, numbers_ok))
    return out


OPS = _registry_ops()
SHAPES = [(6,), (3, 4), (2, 1, 5)]


def _leaf(rng, shape, dom, dtype):
    lo, hi = dom if dom else (-2.0, 2.0)
    lo, hi = max(lo, -3.0), min(hi, 3.0)
    return reftorch.tensor(rng.uniform(lo, hi, size=shape).astype(dtype))


def _build(steps):
    """A function applying the drawn ops: the running value feeds every argument without a domain."""
    def fn(*leaves):
        it = iter(leaves)
        v = next(it)
        for name, targs, domain, use_scalar in steps:
            args = []
            for a in targs:
                if a in domain:
                    args.append(next(it))
                elif a == targs[0] or not use_scalar:
                    args.append(v if a == targs[0] else next(it))
                else:
                    args.append(0.75)
            v = getattr(reftorch, name)(*args)
            if v.dtype.is_floating_point and not domain:
                v = v * 0.5      # keep values tame for the next op
        return v
    return fn


def _leaves_for(steps, rng, shape, dtype, bshape):
    leaves = [_leaf(rng, shape, None, dtype)]
    for name, targs, domain, use_scalar in steps:
        for a in targs:
            if a in domain:
                leaves.append(_leaf(rng, shape, domain[a], dtype))
            elif a != targs[0] and not use_scalar:
                leaves.append(_leaf(rng, bshape, None, dtype))
    return leaves


def _close(a, b, rtol=1e-5, atol=1e-6):
    a, b = np.asarray(a), np.asarray(b, dtype=None if isinstance(b, np.ndarray) else np.asarray(a).dtype)
    assert a.shape == b.shape and a.dtype == b.dtype
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, equal_nan=True)


@settings(max_examples=int(os.environ.get("REFTORCH_EXAMPLES", "12")))
@given(st.lists(st.tuples(st.sampled_from(OPS), st.booleans()), min_size=2, max_size=4),
       st.sampled_from(SHAPES), st.booleans(), st.sampled_from(["float32", "float64"]), st.integers(0, 2 ** 31),
       st.booleans())
def test_random_elementwise_graphs(ops, shape, broadcast, dtype, seed, tail_sum):
    steps = [(name, targs, dom, sc and ok) for (name, targs, dom, ok), sc in ops]
    rng = np.random.default_rng(seed)
    bshape = (1,) * (len(shape) - 1) + (shape[-1],) if broadcast else shape
    leaves = _leaves_for(steps, rng, shape, dtype, bshape)
    chain = _build(steps)
    # tail_sum: the graph ends with a full sum (folded into the fused loop, gradient included)
    fn = (lambda *a: chain(*a).sum()) if tail_sum else chain
    cf = reftorch.compile(fn, fullgraph=True)
    eager = fn(*leaves)
    tol = dict(rtol=1e-4, atol=1e-5) if (tail_sum and dtype == "float32") else {}   # summation order
    _close(cf(*leaves).numpy(), eager.numpy(), **tol)   # the tracing call
    _close(cf(*leaves).numpy(), eager.numpy(), **tol)   # the replay through the fused kernel
    assert cf.traces == 1
    # a non-contiguous input takes the strided kernel
    t = reftorch.tensor(np.ascontiguousarray(np.broadcast_to(leaves[0].numpy(), shape)).T.copy()).t() \
        if len(shape) == 2 else None
    if t is not None and fn(t, *leaves[1:]).shape == eager.shape:
        _close(cf(t, *leaves[1:]).numpy(), fn(t, *leaves[1:]).numpy(), **tol)
    # gradients: leaves requiring grad
    gl = [reftorch.tensor(x.numpy(), requires_grad=True) for x in leaves]
    ge = [reftorch.tensor(x.numpy(), requires_grad=True) for x in leaves]
    out_c = cf(*gl)
    out_e = fn(*ge)
    if out_e.requires_grad:
        out_c.sum().backward()          # a 0-d result: sum() is the identity
        out_e.sum().backward()
        for a, b in zip(gl, ge):
            if b.grad is not None:
                _close(a.grad.numpy(), b.grad.numpy())


def gelu_tanh(x):
    return 0.5 * x * (1 + reftorch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


def test_fuses_one_region_and_dumps_source():
    cf = reftorch.compile(gelu_tanh)
    x = reftorch.randn(1000)
    _close(cf(x).numpy(), gelu_tanh(x).numpy())
    _close(cf(x).numpy(), gelu_tanh(x).numpy())
    srcs = cf.kernels()
    assert len(srcs) == 1
    src = srcs[0]
    assert "tanh" in src and "# mul:" in src and "def fused_contig" in src and "def fused_strided" in src
    compile(src, "<fused>", "exec")


def test_mixed_graph_matmul_reduction_and_broadcast():
    w = reftorch.randn(8, 4)
    b = reftorch.randn(4)

    def f(x):
        h = x @ w
        h = reftorch.relu(h + b) * 2 - 1
        return h.sum(dim=1), h.exp()

    cf = reftorch.compile(f, fullgraph=True)
    x = reftorch.randn(5, 8)
    for _ in range(2):
        for a, e in zip(cf(x), f(x)):
            _close(a.numpy(), e.numpy())
    # the captured parameter is read at call time
    b.data = reftorch.ones(4) if False else b
    w2 = w  # same object; mutate contents under no_grad
    with reftorch.no_grad():
        w2.mul_(2)
    for a, e in zip(cf(x), f(x)):
        _close(a.numpy(), e.numpy())


def test_dtype_mixing_and_python_scalars():
    def f(x, i):
        return (x * 3 + i).sigmoid() > 0.5, x / i
    cf = reftorch.compile(f)
    x = reftorch.randn(4, 3, dtype=reftorch.float32)
    i = reftorch.arange(3)
    for _ in range(2):
        for a, e in zip(cf(x, i + 1), f(x, i + 1)):
            _close(a.numpy(), e.numpy())


def test_guard_miss_retraces():
    cf = reftorch.compile(lambda x: (x * 2).sin() + 1)
    f = lambda x: (x * 2).sin() + 1     # noqa: E731
    for shape, dtype in [((3,), reftorch.float32), ((3,), reftorch.float32), ((4, 2), reftorch.float32),
                         ((3,), reftorch.float64)]:
        x = reftorch.randn(*shape, dtype=dtype)
        _close(cf(x).numpy(), f(x).numpy())
    assert cf.traces == 3
    x = reftorch.randn(3, requires_grad=True)
    cf(x)
    assert cf.traces == 4        # requires_grad is guarded


def test_dynamic_guards_ranks():
    f = lambda x: (x * 2.0).cos() - x     # noqa: E731
    cf = reftorch.compile(f, dynamic=True)
    for n in (3, 5, 9):
        x = reftorch.randn(n, 2)
        _close(cf(x).numpy(), f(x).numpy())
        _close(cf(x).numpy(), f(x).numpy())
    assert cf.traces == 1
    g = lambda x: x.reshape(-1, 2).sum(0) * 2   # noqa: E731  (integer args: traced per shape)
    cg = reftorch.compile(g, dynamic=True)
    for n in (4, 6):
        x = reftorch.randn(n)
        _close(cg(x).numpy(), g(x).numpy())
        _close(cg(x).numpy(), g(x).numpy())


def test_non_tensor_arguments_are_guarded():
    f = lambda x, k: x * k + k      # noqa: E731
    cf = reftorch.compile(f)
    x = reftorch.randn(4)
    for k in (2.0, 3.0, 2.0):
        _close(cf(x, k).numpy(), f(x, k).numpy())
    assert cf.traces == 2


def test_graph_break_runs_eagerly():
    def f(x):
        if x.sum() > 0:
            return x * 2
        return x - 1
    cf = reftorch.compile(f)
    pos, neg = reftorch.ones(3), -reftorch.ones(3)
    _close(cf(pos).numpy(), [2, 2, 2])
    _close(cf(neg).numpy(), [-2, -2, -2])     # not baked: the branch is taken again
    _close(cf(pos).numpy(), [2, 2, 2])
    assert cf.graph_breaks()

    def g(x):
        return x * x.max().item()
    cg = reftorch.compile(g)
    _close(cg(pos).numpy(), [1, 1, 1])
    _close(cg(pos * 3).numpy(), [9, 9, 9])


def test_fullgraph_raises_with_line():
    def f(x):
        y = x.exp()
        if y.sum() > 0:
            return y
        return -y
    cf = reftorch.compile(f, fullgraph=True)
    with pytest.raises(GraphBreak, match=r"test_compile.py:\d+ \(in f\)"):
        cf(reftorch.ones(2))

    @reftorch.compile(fullgraph=True)
    def g(x):
        return x.add_(1)
    with pytest.raises(GraphBreak, match="in-place"):
        g(reftorch.ones(2))

    @reftorch.compile(fullgraph=True)
    def h(x):       # randint draws from the PCG64 stream, not the counter-based one: not captured
        return x + reftorch.randint(0, 5, (2,))
    with pytest.raises(GraphBreak, match="random"):
        h(reftorch.ones(2))


def test_random_ops_are_not_baked():
    cf = reftorch.compile(lambda x: x + reftorch.rand(3))
    x = reftorch.zeros(3)
    assert not np.allclose(cf(x).numpy(), cf(x).numpy())


def test_decorator_forms():
    @reftorch.compile
    def f(x):
        return x.tanh() * 2

    @reftorch.compile(fullgraph=True, dynamic=False)
    def g(x):
        return x.tanh() * 2

    x = reftorch.randn(5)
    for _ in range(2):
        _close(f(x).numpy(), (x.tanh() * 2).numpy())
        _close(g(x).numpy(), (x.tanh() * 2).numpy())
    assert f.__name__ == "f"


def test_module_training_matches_eager():
    nn = reftorch.nn
    reftorch.manual_seed(0)
    m = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 3))
    cm = reftorch.compile(m)
    assert list(cm.parameters())[0] is list(m.parameters())[0]
    x = reftorch.randn(4, 6)
    for step in range(3):
        m.zero_grad()
        loss_e = (m(x) ** 2).mean()
        loss_e.backward()
        ge = [p.grad.numpy().copy() for p in m.parameters()]
        m.zero_grad()
        loss_c = (cm(x) ** 2).mean()
        loss_c.backward()
        gc = [p.grad.numpy().copy() for p in m.parameters()]
        _close(loss_c.detach().numpy(), loss_e.detach().numpy())
        for a, b in zip(gc, ge):
            _close(a, b)
        with reftorch.no_grad():
            for p in m.parameters():
                p.sub_(0.1 * p.grad)
    with reftorch.no_grad():
        _close(cm(x).numpy(), m(x).numpy())
        _close(cm(x).numpy(), m(x).numpy())
    cm.eval()
    assert not m.training


def test_returns_inputs_and_constants():
    def f(x, y):
        return {"x": x, "s": (x + y).exp() * y, "n": 3}
    cf = reftorch.compile(f)
    x, y = reftorch.randn(2, 3), reftorch.randn(3)
    for _ in range(2):
        r = cf(x, y)
        assert r["x"] is x and r["n"] == 3
        _close(r["s"].numpy(), f(x, y)["s"].numpy())


def test_region_backward_is_one_fused_node():
    """A region whose outputs require grad records one node; its generated backward kernel gives eager's
    gradients, broadcast inputs and a captured parameter included."""
    w = reftorch.tensor(np.linspace(-1, 1, 4), requires_grad=True)

    def f(x, b):
        return (reftorch.tanh(x * w + b) * x - b.sigmoid()) ** 2

    cf = reftorch.compile(f, fullgraph=True)
    rng = np.random.default_rng(1)
    x0, b0 = rng.standard_normal((3, 4)), rng.standard_normal(4)
    for _ in range(2):
        xc, bc = reftorch.tensor(x0, requires_grad=True), reftorch.tensor(b0, requires_grad=True)
        xe, be = reftorch.tensor(x0, requires_grad=True), reftorch.tensor(b0, requires_grad=True)
        yc, ye = cf(xc, bc), f(xe, be)
        _close(yc.detach().numpy(), ye.detach().numpy(), rtol=1e-12, atol=1e-12)
        w.grad = None
        yc.backward(reftorch.ones_like(yc) * 0.5)
        wc = w.grad.numpy().copy()
        w.grad = None
        ye.backward(reftorch.ones_like(ye) * 0.5)
        for a, b in ((xc.grad, xe.grad), (bc.grad, be.grad), (wc, w.grad)):
            _close(np.asarray(a.numpy() if hasattr(a, "numpy") else a), b.numpy(), rtol=1e-10, atol=1e-12)
    assert yc.grad_fn.name() == "CompiledFunctionBackward"
    assert len(yc.grad_fn.next_functions) == 4      # x, w, b and sigmoid(b) (hoisted before the region)
    assert len(cf.kernels()) == 1
    src = cf.kernels()[0]
    assert "def fused_backward_contig" in src and "tanh backward for self" in src
    # an in-place change of a saved input is caught at backward, as eager does
    xc = reftorch.tensor(x0, requires_grad=True)
    bc = reftorch.tensor(b0, requires_grad=True)
    h = xc * 1.0
    y = cf(h, bc)
    with reftorch.no_grad():
        h.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()
    # double backward through a fused region is refused, as torch.compile refuses it
    y = cf(reftorch.tensor(x0, requires_grad=True), reftorch.tensor(b0, requires_grad=True))
    with pytest.raises(RuntimeError, match="double backward"):
        reftorch.autograd.grad(y.sum(), w, create_graph=True)


def test_float32_tanh_helper_accuracy():
    """The compiled float32 tanh (a vectorisable rational approximation) stays within 8 ulp of the exact
    value, keeps NaN, infinities, signed zeros and tiny inputs."""
    x = np.concatenate([np.linspace(-12, 12, 20001), np.logspace(-30, 1, 500), -np.logspace(-30, 1, 500),
                        [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45]]).astype(np.float32)
    cf = reftorch.compile(lambda t: reftorch.tanh(t) * 1)
    cf(reftorch.tensor(x))
    got = cf(reftorch.tensor(x)).numpy()
    exact = np.tanh(x.astype(np.float64))
    fin = np.isfinite(exact)
    ulp = np.spacing(np.abs(exact[fin]).astype(np.float32)).astype(np.float64)
    assert (np.abs(got[fin] - exact[fin]) / ulp).max() <= 8
    assert np.isnan(got[~fin & np.isnan(exact)]).all()
    assert got[x == np.inf][0] == 1 and got[x == -np.inf][0] == -1
    assert np.signbit(got[(x == 0) & np.signbit(x)]).all()


def test_large_inputs_take_the_threaded_loop(monkeypatch):
    import sys
    rc = sys.modules["reftorch.compile"]
    monkeypatch.setattr(rc, "_PAR_MIN_V", 256)
    monkeypatch.setattr(rc, "_n_threads", lambda: 3)
    seen = []
    real = rc._threaded
    monkeypatch.setattr(rc, "_threaded", lambda *a: (seen.append(a[-1]), real(*a)))
    f = lambda x: (x * 0.5).tanh() + x * x      # noqa: E731
    cf = reftorch.compile(f)
    x = reftorch.tensor(np.linspace(-3, 3, 5001))
    xg = reftorch.tensor(np.linspace(-3, 3, 5001), requires_grad=True)
    xe = reftorch.tensor(np.linspace(-3, 3, 5001), requires_grad=True)
    for _ in range(2):
        _close(cf(x).numpy(), f(x).numpy(), rtol=1e-12, atol=1e-12)
    cf(xg).backward(reftorch.ones(5001))
    f(xe).backward(reftorch.ones(5001))
    _close(xg.grad.numpy(), xe.grad.numpy(), rtol=1e-12, atol=1e-12)
    assert seen and all(n == 5001 for n in seen)


def test_kernels_are_cached_on_disk_for_a_second_process(tmp_path):
    """A second process tracing the same region loads the fused kernel from Numba's disk cache."""
    import subprocess
    import sys
    code = ("import sys, reftorch\n"
            "from reftorch.compile import ir\n"
            "cf = reftorch.compile(lambda x: (x * 1.2345).sin() * x + 0.5)\n"
            "x = reftorch.randn(64, dtype=reftorch.float64)\n"
            "cf(x); cf(x)\n"
            "r = [s for e in cf._cache.values() for s in e.steps if isinstance(s, ir.Region)][0]\n"
            "st = r.kernel.fused_contig.stats\n"
            "print('HITS', sum(st.cache_hits.values()), 'MISSES', sum(st.cache_misses.values()))\n")
    env = dict(os.environ, PYTHONPATH=ROOT)
    outs = []
    for _ in range(2):
        p = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                           timeout=300)
        assert p.returncode == 0, p.stderr[-3000:]
        outs.append(p.stdout.strip().splitlines()[-1])
    if os.environ.get("REFTORCH_NO_CACHE"):
        pytest.skip("caching disabled")
    assert outs[1].startswith("HITS 1 "), outs


def test_cuda_source_of_compiled_regions():
    cf = reftorch.compile(gelu_tanh)
    x = reftorch.randn(16)
    cf(x)
    srcs = cf.kernels(device="cuda")
    assert len(srcs) == 1 and "@cuda.jit" in srcs[0] and "cuda.gridsize(1)" in srcs[0]
    compile(srcs[0], "<fused-cuda>", "exec")
    w = reftorch.randn(16, requires_grad=True)
    cg = reftorch.compile(lambda x: ((x * w).sin() ** 2).sum())
    cg(x)
    src = cg.kernels(device="cuda")[0]
    assert "def fused_backward_cuda(" in src and ", gr):" in src
    compile(src, "<fused-cuda>", "exec")


def test_trailing_full_reduction_joins_the_region():
    """sum over every dim (mean's sum too) right after an elementwise chain folds into the fused loop."""
    def f(x, y):
        return ((x - y) ** 2).mean(), (x * y).sum(dim=(0, 1), keepdim=True), (x > y).sum(), (x.abs() + 1).amax()

    cf = reftorch.compile(f, fullgraph=True)
    x, y = reftorch.randn(20, 7), reftorch.randn(7)
    xt = reftorch.randn(7, 20).t()
    for args in ((x, y), (x, y), (xt, y)):
        for a, b in zip(cf(*args), f(*args)):
            assert a.shape == b.shape and a.dtype == b.dtype
            _close(a.numpy(), b.numpy(), rtol=1e-6)
    steps = [s for e in cf._cache.values() for s in e.steps]
    fused = [s.ops for s in steps if hasattr(s, "kernels")]
    # (x ** 2 with a Python exponent is ops.yaml's _pow_number_exponent: torch's pow.Tensor_Scalar)
    assert ["sub", "_pow_number_exponent", "sum"] in fused and ["mul", "sum"] in fused and ["gt", "sum"] in fused
    assert "acc = " in cf.kernels()[0] and "_r_combine" in cf.kernels()[0]
    # with autograd a trailing sum stays fused: its gradient reaches the region's backward kernel as a scalar
    w = reftorch.randn(7, dtype=reftorch.float64, requires_grad=True)

    def g(x, y):
        return ((x * w - y) ** 2).mean() + (x.tanh() * y).sum()
    cg = reftorch.compile(g, fullgraph=True)
    x0, y0 = np.random.default_rng(3).standard_normal((20, 7)), np.linspace(-1, 1, 7)
    grads = []
    for fn in (cg, cg, g):
        xg, yg = reftorch.tensor(x0, requires_grad=True), reftorch.tensor(y0, requires_grad=True)
        w.grad = None
        fn(xg, yg).backward()
        grads.append((xg.grad.numpy(), yg.grad.numpy(), w.grad.numpy()))
    for got in grads[:2]:
        for a, b in zip(got, grads[2]):
            _close(a, b, rtol=1e-10, atol=1e-12)
    fused = [s.ops for e in cg._cache.values() for s in e.steps if hasattr(s, "kernels")]
    assert ["mul", "sub", "_pow_number_exponent", "sum"] in fused and ["tanh", "mul", "sum"] in fused


def test_conversions_and_detach_are_replayed_and_dead_code_dropped():
    """.double() / .to(dtype) / detach() / .data make tensors outside the dispatcher: a replay derives them from
    the new input (not the traced tensor); gradients flow back through the conversion. Ops whose values nothing
    reads are not run."""
    def f(x):
        unused = (x * 3).exp()      # noqa: F841 -- dead code
        return x.double() * 2 + x.to(reftorch.float64).sin() * x.detach() - x.data
    cf = reftorch.compile(f, fullgraph=True)
    for v in ([1.0, 2.0], [5.0, 6.0], [-1.0, 0.5]):
        x, xe = (reftorch.tensor(v, requires_grad=True) for _ in range(2))
        got, want = cf(x), f(xe)
        assert got.dtype is reftorch.float64
        _close(got.detach().numpy(), want.detach().numpy(), rtol=1e-12)
        got.sum().backward()
        want.sum().backward()
        _close(x.grad.numpy(), xe.grad.numpy(), rtol=1e-6)
    assert cf.traces == 1
    fused = [s.ops for e in cf._cache.values() for s in e.steps if hasattr(s, "kernels")]
    assert fused == [["mul", "sin", "mul", "add", "sub"]], fused


# ------------------------------------------------------------------------------ dynamic shapes and factories

def test_dynamic_factories_follow_the_call_shape():
    def f(x):
        return x * 2 + reftorch.zeros(x.shape[0], 1) + reftorch.arange(x.shape[1]) + reftorch.ones_like(x)
    cf = reftorch.compile(f, dynamic=True)
    for n in (3, 5, 3, 7):
        x = reftorch.randn(n, 4)
        _close(cf(x).numpy(), f(x).numpy())
        _close(cf(x).numpy(), f(x).numpy())
    g = lambda x: x + reftorch.zeros_like(x)    # noqa: E731  (no size from Python: one trace serves all)
    cg = reftorch.compile(g, dynamic=True)
    for n in (2, 6):
        x = reftorch.randn(n)
        _close(cg(x).numpy(), g(x).numpy())
        _close(cg(x).numpy(), g(x).numpy())
    assert cg.traces == 1


# ------------------------------------------------------------------------------ captured training steps

def _mlp_pair(opt_cls, **opt_kw):
    nn = reftorch.nn
    out = []
    for _ in range(2):
        reftorch.manual_seed(0)
        m = nn.Sequential(nn.Linear(6, 5), nn.ReLU(), nn.Linear(5, 3))
        out.append((m, opt_cls(m.parameters(), **opt_kw)))
    return out


def _state(opt):
    sd = opt.state_dict()
    return {k: {n: (v.numpy().copy() if isinstance(v, reftorch.Tensor) else v) for n, v in s.items()}
            for k, s in sd["state"].items()}


@pytest.mark.parametrize("opt_cls,kw,zero_at_end", [
    ("Adam", dict(lr=1e-2), False),
    ("AdamW", dict(lr=1e-2, weight_decay=0.1), True),
    ("SGD", dict(lr=0.1, momentum=0.9), False),
])
def test_training_step_is_captured_and_matches_eager(opt_cls, kw, zero_at_end):
    nn = reftorch.nn
    (me, oe), (mc, oc) = _mlp_pair(getattr(reftorch.optim, opt_cls), **kw)
    lossf = nn.CrossEntropyLoss()
    rng = np.random.default_rng(0)

    def make_step(m, opt):
        def step(x, y):
            if not zero_at_end:
                opt.zero_grad()
            loss = lossf(m(x), y)
            loss.backward()
            opt.step()
            if zero_at_end:
                opt.zero_grad()
            return loss
        return step
    eager, compiled = make_step(me, oe), reftorch.compile(make_step(mc, oc), fullgraph=True)
    for i in range(5):
        x = reftorch.tensor(rng.standard_normal((8, 6)).astype(np.float32))
        y = reftorch.tensor(rng.integers(0, 3, 8))
        le, lc = eager(x, y), compiled(x, y)
        _close(lc.detach().numpy(), le.detach().numpy())
        for pe, pc in zip(me.parameters(), mc.parameters()):
            _close(pc.detach().numpy(), pe.detach().numpy())
            if zero_at_end:
                assert pc.grad is None and pe.grad is None
            else:
                _close(pc.grad.numpy(), pe.grad.numpy())
    se, sc = _state(oe), _state(oc)
    assert se.keys() == sc.keys()
    for k in se:
        for name in se[k]:
            _close(np.asarray(sc[k][name]), np.asarray(se[k][name]))
    assert not compiled.graph_breaks()
    assert compiled.traces <= 2     # the first call (no .grad yet) and the second (zero_grad has grads to drop)
    entry = [e for e in compiled._cache.values() if e.plan is not None]
    assert entry and entry[-1].plan.built is not None     # replayed from the captured step


def test_step_capture_guards_and_breaks():
    nn = reftorch.nn
    reftorch.manual_seed(0)
    m = nn.Linear(4, 2)
    x = reftorch.randn(3, 4)

    def accumulate(x):          # no zero_grad: the second call adds into .grad -> eager (a graph break)
        loss = (m(x) ** 2).sum()
        loss.backward()
        return loss
    ca = reftorch.compile(accumulate)
    ca(x)
    g1 = m.weight.grad.numpy().copy()
    ca(x)
    _close(m.weight.grad.numpy(), 2 * g1)
    assert any("accumulates" in b for b in ca.graph_breaks())
    with pytest.raises(GraphBreak, match="accumulates"):
        reftorch.compile(accumulate, fullgraph=True)(x)

    def grads_of_input(x):      # autograd.grad of an input: returned, not accumulated
        return reftorch.autograd.grad((m(x) ** 2).sum(), [x])[0]
    cg = reftorch.compile(grads_of_input)
    xr = reftorch.randn(3, 4, requires_grad=True)
    for _ in range(3):
        _close(cg(xr).numpy(), grads_of_input(xr).numpy())

    def input_grad(x):           # backward into a leaf argument: its .grad is set on the caller's tensor
        x.grad = None
        (m(x).tanh() * 3).sum().backward()
    ci = reftorch.compile(input_grad)
    for _ in range(3):
        x1 = reftorch.randn(3, 4, requires_grad=True)
        x2 = reftorch.tensor(x1.detach().numpy(), requires_grad=True)
        ci(x1)
        input_grad(x2)
        _close(x1.grad.numpy(), x2.grad.numpy())


def test_lr_scheduler_step_is_replayed():
    nn = reftorch.nn
    (me, oe), (mc, oc) = _mlp_pair(reftorch.optim.Adam, lr=0.05)
    se, sc = (reftorch.optim.lr_scheduler.ExponentialLR(o, gamma=0.5) for o in (oe, oc))
    x, y = reftorch.randn(8, 6), reftorch.randn(8, 3)

    def make(m, opt, sched):
        def step(x, y):
            opt.zero_grad()
            loss = ((m(x) - y) ** 2).mean()
            loss.backward()
            opt.step()
            sched.step()
            return loss
        return step
    eager, compiled = make(me, oe, se), reftorch.compile(make(mc, oc, sc), fullgraph=True)
    for _ in range(5):
        _close(compiled(x, y).detach().numpy(), eager(x, y).detach().numpy())
    assert sc.get_last_lr() == se.get_last_lr() and oc.param_groups[0]["lr"] == oe.param_groups[0]["lr"]
    for pe, pc in zip(me.parameters(), mc.parameters()):
        _close(pc.detach().numpy(), pe.detach().numpy())


# ------------------------------------------------------------------------------ random ops (counter-based draws)

def test_dropout_is_captured_fused_and_replayed_in_backward():
    F = reftorch.nn.functional

    def f(x):
        return F.dropout(x.tanh(), 0.3) * 2 + reftorch.randn(x.shape) * 0.1
    cf = reftorch.compile(f, fullgraph=True)
    x = reftorch.randn(4, 5, requires_grad=True)
    for seed in range(3):
        reftorch.manual_seed(seed)
        ye = f(x)
        ye.sum().backward()
        ge, x.grad = x.grad, None
        after_e = reftorch.rand(2).tolist()
        reftorch.manual_seed(seed)
        yc = cf(x)
        yc.sum().backward()
        gc, x.grad = x.grad, None
        _close(yc.detach().numpy(), ye.detach().numpy())       # the same masks and noise under the same seed
        _close(gc.numpy(), ge.numpy())                          # the backward kernel recomputed the same mask
        assert reftorch.rand(2).tolist() == after_e             # and the generator moved on as eagerly
    assert not cf.graph_breaks()
    regions = [st for e in cf._cache.values() if e.steps for st in e.steps if hasattr(st, "random") and st.random]
    # the draws run inside generated kernels, one of which also has a backward kernel that recomputes its draw
    assert regions and any(r.grad_inputs for r in regions)
    assert any("philox_uniform(" in src for src in cf.kernels())


def test_compiled_training_step_with_dropout_and_clipping_matches_eager():
    nn = reftorch.nn
    models = []
    for _ in range(2):
        reftorch.manual_seed(0)
        m = nn.Sequential(nn.Linear(6, 16), nn.GELU(), nn.Dropout(0.25), nn.Linear(16, 3))
        models.append((m, reftorch.optim.AdamW(m.parameters(), lr=1e-2)))

    def make(m, opt):
        def step(x, y):
            loss = nn.functional.cross_entropy(m(x), y)
            opt.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(m.parameters(), 0.5)
            opt.step()
            return loss
        return step
    eager, compiled = make(*models[0]), reftorch.compile(make(*models[1]), fullgraph=True)
    rng = np.random.default_rng(0)
    for i in range(4):
        x = reftorch.tensor(rng.standard_normal((8, 6)).astype(np.float32))
        y = reftorch.tensor(rng.integers(0, 3, 8))
        reftorch.manual_seed(10 + i)
        le = eager(x, y)
        reftorch.manual_seed(10 + i)
        lc = compiled(x, y)
        _close(lc.detach().numpy(), le.detach().numpy())
        for pe, pc in zip(models[0][0].parameters(), models[1][0].parameters()):
            _close(pc.detach().numpy(), pe.detach().numpy())
            _close(pc.grad.numpy(), pe.grad.numpy())            # the clipped gradients, set on the leaves
    assert not compiled.graph_breaks()
    assert [e for e in compiled._cache.values() if e.plan is not None][-1].plan.built is not None


def test_inplace_ops_on_values_the_function_made():
    def f(x):
        y = x * 2
        y.mul_(3).add_(x)           # recorded as out-of-place ops: y's value from then on
        return y
    cf = reftorch.compile(f, fullgraph=True)
    x = reftorch.randn(5)
    for _ in range(2):
        _close(cf(x).numpy(), f(x).numpy())

    def g(x):
        y = x * 2
        v = y.view(-1)
        y.mul_(3)
        return v + 1                # a view of y read after the write: eager
    cg = reftorch.compile(g)
    for _ in range(2):
        _close(cg(x).numpy(), g(x).numpy())
    assert any("in-place" in b for b in cg.graph_breaks())
    with pytest.raises(GraphBreak, match="in-place"):
        reftorch.compile(g, fullgraph=True)(x)


def test_bernoulli_is_captured_as_a_draw():
    def f(x):
        return reftorch.bernoulli(x) * x + reftorch.rand_like(x)
    cf = reftorch.compile(f, fullgraph=True)
    x = reftorch.rand(3, 4)
    for seed in range(2):
        reftorch.manual_seed(seed)
        ye = f(x)
        reftorch.manual_seed(seed)
        _close(cf(x).numpy(), ye.numpy())
    assert not cf.graph_breaks()
    reftorch.manual_seed(1)
    a = reftorch.empty(3, 4).bernoulli_(x)          # the in-place filler draws the same values
    reftorch.manual_seed(1)
    assert a.tolist() == reftorch.bernoulli(x).tolist()


def test_inplace_op_on_a_view_of_a_captured_tensor_still_breaks():
    w = reftorch.ones(4)

    def f(x):
        with reftorch.no_grad():
            v = w.view(2, 2)
            v.mul_(2)               # must reach w: not recorded out of place
        return x + w
    cf = reftorch.compile(f)
    x = reftorch.zeros(4)
    _close(cf(x).numpy(), [2, 2, 2, 2])
    _close(cf(x).numpy(), [4, 4, 4, 4])
    assert any("in-place" in b for b in cf.graph_breaks())
