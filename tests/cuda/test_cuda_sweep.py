"""Every composite op and every differentiable op of ops.yaml, on cuda in numba's simulator, against the cpu:
one tiny sample per op (tests/registry_samples.py, drawn from a seed of the op's name), forward, backward with
create_graph=True (the derivative formulas as recorded ops, and the `is_grad_enabled()` branches of composite
backwards) and a double backward -- results on cuda and equal to the cpu's. What it catches: a composite body
or formula that makes a helper tensor on the cpu (the device-mixing error), an array op whose host round trip
loses the device, a backward that lands on the wrong device.

Plus the paths a random sample rarely takes (a zero in cumprod, pad's non-constant modes, einsum's
diagonals) and the nn modules that make their own state tensors (RNN hidden states, causal masks).

Runs only with NUMBA_ENABLE_CUDASIM=1 (tests/test_cuda_simulator.py starts it); ~30 s with warm kernel caches.
"""
import copy
import os
import sys
import zlib

import numpy as np
import pytest

if not os.environ.get("NUMBA_ENABLE_CUDASIM"):
    pytest.skip("needs NUMBA_ENABLE_CUDASIM=1 (run by tests/test_cuda_simulator.py)", allow_module_level=True)

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import reftorch as torch  # noqa: E402
from reftorch._tensor import Tensor  # noqa: E402
from registry_samples import OPS, RandomDraw, Sample, SampleError, make_sample  # noqa: E402

np.seterr(all="ignore")


def swept(op):
    return op.test.fuzz and op.test.cuda and (op.kind == "composite" or op.differentiable)


def _leaves(value, dev, grad):
    if isinstance(value, Tensor):
        x = value.detach().to(dev)
        if grad and x.dtype.is_floating_point:
            x.requires_grad_(True)
        return x
    if isinstance(value, list):
        return [_leaves(v, dev, grad) for v in value]
    return value


def _grad_ok(op, name):
    """Whether arg name gets a gradient: not one whose formula is not_implemented(...) (raises, as PyTorch's)."""
    return not (op.formula(name) or "").startswith("not_implemented(")


def _tensors(value):
    if isinstance(value, (list, tuple)):
        return [x for v in value for x in _tensors(v)]
    return [value] if isinstance(value, Tensor) else []


def _same(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        if w is None:
            assert g is None
            continue
        assert g.device.type == "cuda", g.device
        assert g.dtype is w.dtype and tuple(g.shape) == tuple(w.shape), (g.dtype, g.shape, w.dtype, w.shape)
        # the values compared: a result may be a lazy conjugate or negative view (reftorch/_conj.py)
        np.testing.assert_allclose(g.detach().cpu().resolve_conj().resolve_neg().numpy(),
                                   w.detach().resolve_conj().resolve_neg().numpy(), rtol=1e-7, atol=1e-9, equal_nan=True)


def _total(outs):
    """A scalar of the outputs that carry gradients (weighted, so each output's gradient differs)."""
    tot = None
    for i, o in enumerate(x for x in outs if x.requires_grad):
        part = (o * (i + 1.5)).sum()
        tot = part if tot is None else tot + part
    return tot


def _run(op, sample, dev, grad):
    kw = {k: _leaves(v, dev, grad and _grad_ok(op, k)) for k, v in sample.kwargs.items()}
    ins = [t for t in _tensors(list(kw.values())) if t.requires_grad]
    try:
        res = Sample(op, sample.dtype, kw, sample.arrays, sample.named).call()
    except Exception as err:  # noqa: BLE001 -- the sample may be invalid: then both devices must say so
        return type(err), None
    outs = _tensors(res)
    steps = [outs]
    tot = _total(outs) if grad and ins else None
    if tot is not None:
        g1 = torch.autograd.grad(tot, ins, allow_unused=True, create_graph=True)
        steps.append(list(g1))
        t2 = _total([g for g in g1 if g is not None])
        if t2 is not None:
            steps.append(list(torch.autograd.grad(t2, ins, allow_unused=True)))
    return None, steps


@pytest.mark.parametrize("name", [op.name for op in OPS if swept(op)])
def test_op_on_cuda_equals_cpu(name):
    op = next(o for o in OPS if o.name == name)
    fam = next(f for f in ("float", "int", "bool", "complex") if f in op.test.dtypes)     # (complex: only that)
    dtype = {"float": "float64", "int": "int64", "bool": "bool", "complex": "complex128"}[fam]
    grad = op.differentiable and fam == "float" and op.test.gradcheck
    try:
        sample = make_sample(op, RandomDraw(zlib.crc32(name.encode())), dtype, grad=grad, max_side=2, max_numel=6,
                             contiguous=True)
    except SampleError as err:
        pytest.skip(str(err))
    err_cpu, want = _run(op, sample, "cpu", grad)
    err_cuda, got = _run(op, sample, "cuda", grad)
    assert err_cuda is err_cpu, f"cpu raised {err_cpu}, cuda {err_cuda}"
    if want is not None:
        assert len(got) == len(want)
        for g, w in zip(got, want):
            _same(g, w)


# ---------------------------------------------------------------------------- paths a sample rarely takes

def _grads_both(fn, *arrays, double=False):
    """fn's gradient (and its double backward) w.r.t. float64 leaves of `arrays`, on cuda and on the cpu."""
    out = []
    for dev in ("cpu", "cuda"):
        xs = [torch.tensor(a, dtype=torch.float64, device=dev, requires_grad=True) for a in arrays]
        gs = torch.autograd.grad(fn(*xs).sum(), xs, create_graph=double)
        if double:
            gs = gs + torch.autograd.grad(sum(g.pow(2).sum() for g in gs), xs, allow_unused=True)
        out.append(gs)
    _same(out[1], out[0])


def test_composite_backwards_make_their_helpers_on_the_device():
    _grads_both(lambda x: x.cumprod(0), [1.5, 0.0, 2.0, -1.0], double=True)        # eye(k), ones(k, k)
    for mode in ("reflect", "replicate", "circular"):                              # arange, zeros
        _grads_both(lambda x: torch.nn.functional.pad(x, (1, 2), mode=mode), [[[1.0, 2.0, 3.0]]])
    _grads_both(lambda x: torch.einsum("ii->i", x), [[1.0, 2.0], [3.0, 4.0]])       # eye
    _grads_both(lambda x, y: torch.einsum("ij,k->i", x, y), [[1.0, 2.0]], [3.0, 4.0])  # ones


def test_nn_state_tensors_follow_the_input():
    torch.manual_seed(0)
    x = torch.randn(2, 1, 3, dtype=torch.float64)
    for cls in (torch.nn.RNN, torch.nn.LSTM, torch.nn.GRU):
        m = cls(3, 2, dtype=torch.float64)
        want = m(x)[0]
        got = copy.deepcopy(m).to("cuda")(x.to("cuda"))[0]          # hx defaults to zeros on the input's device
        _same([got], [want])
    cell = torch.nn.GRUCell(3, 2, dtype=torch.float64)
    _same([copy.deepcopy(cell).cuda()(x[0].cuda())], [cell(x[0])])
    mask = torch.nn.Transformer.generate_square_subsequent_mask(3, device="cuda")
    _same([mask], [torch.nn.Transformer.generate_square_subsequent_mask(3)])
    seqs = [torch.tensor([1.0, 2.0]), torch.tensor([3.0])]
    _same([torch.nn.utils.rnn.pad_sequence([s.cuda() for s in seqs])], [torch.nn.utils.rnn.pad_sequence(seqs)])
