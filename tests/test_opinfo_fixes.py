"""Regression tests for what PyTorch's OpInfo samples (benches/opinfo.py) and issues 16/20/21 found:
each expectation was read off torch 2.13 side by side."""
import threading

import numpy as np
import pytest

import reftorch as torch

F64 = torch.float64


# ---------------------------------------------------------------- integer ** negative integer

@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.uint8, torch.bool])
def test_integer_tensor_to_a_negative_python_int_raises(dtype):
    x = torch.tensor([1, 1, 1]).to(dtype)
    for call in (lambda: x ** -1, lambda: torch.pow(x, -2), lambda: x.pow(-1), lambda: x.clone().pow_(-1),
                 lambda: torch.tensor([], dtype=dtype) ** -1):
        with pytest.raises(RuntimeError, match=r"^Integers to negative integer powers are not allowed\.$"):
            call()


def test_integer_powers_torch_allows():
    x = torch.tensor([1, 2, 3])
    assert (x ** torch.tensor(-1)).tolist() == [1, 0, 0]        # a tensor exponent is fine
    assert (2 ** -x).tolist() == [0, 0, 0]                      # so is a Python base
    assert (x ** 0).tolist() == [1, 1, 1]
    assert (x ** -1.0).dtype == torch.float32
    assert torch.allclose(x.double() ** -1, torch.tensor([1.0, 0.5, 1 / 3], dtype=F64))


# ---------------------------------------------------------------- grad_fn names

def _names():
    x = torch.randn(3, 4, dtype=F64, requires_grad=True)
    y = torch.randn(3, 4, dtype=F64, requires_grad=True)
    i = torch.zeros(3, 1, dtype=torch.long)
    eye = torch.eye(4, dtype=F64)
    return {
        "MeanBackward0": x.mean(), "MeanBackward1": x.mean(1), "VarBackward0": x.var(1), "StdBackward0": x.std(),
        "VarMeanBackward0": torch.var_mean(x, 1)[1], "StdMeanBackward0": torch.std_mean(x)[0],
        "SplitBackward0": x.split(2)[1], "SplitWithSizesBackward0": x.split([1, 2])[0],
        "UnbindBackward0": x.unbind(1)[0], "MaxBackward1": x.max(), "MaxBackward0": x.max(1)[0],
        "MaximumBackward0": torch.max(x, y), "MinBackward0": x.min(0).values, "MinimumBackward0": torch.min(x, y),
        "LogsumexpBackward0": x.logsumexp(0), "StackBackward0": torch.stack([x, y]),
        "MedianBackward0": x.median(), "MedianBackward1": x.median(1)[0], "KthvalueBackward0": x.kthvalue(2, 0)[0],
        "ModeBackward0": x.mode(0)[0], "AddmmBackward0": torch.addmm(x[0], y, eye),
        "BaddbmmBackward0": torch.baddbmm(x[None], x[None], eye[None]), "TraceBackward0": x.trace(),
        "LinalgCrossBackward0": torch.linalg.cross(x[:, :3], y[:, :3]), "ClampBackward1": x.clamp(min=0),
        "ClampBackward0": x.clamp(min=y), "ScatterBackward0": x.scatter(1, i, y),
        "ScatterBackward1": x.scatter(1, i, 2.0), "ProdBackward0": x.prod(), "ProdBackward1": x.prod(1),
        "PermuteBackward0": x.movedim(0, 1), "MulBackward0": torch.outer(x[0], y[0]),
        "SplitBackward0 ": x.chunk(2)[0], "ClampMinBackward0": torch.clamp_min(x, 0.0),
    }


def test_grad_fn_names_follow_torch():
    for name, y in _names().items():
        assert y.grad_fn.name() == name.strip()


def test_renamed_composite_still_differentiates():
    x = torch.randn(3, 4, dtype=F64, requires_grad=True)
    (gx,) = torch.autograd.grad(x.mean(1).sum() + x.std(), x)
    assert torch.allclose(gx, torch.full((3, 4), 0.25, dtype=F64) + (x - x.mean()) / (11 * x.std()))
    y = x.split(2)[0]
    assert y.grad_fn.name() == "SplitBackward0" and x.grad_fn is None and x.mean().grad_fn is not None


# ---------------------------------------------------------------- the default device is per thread

def _in_thread(fn):
    out = []
    t = threading.Thread(target=lambda: out.append(fn()))
    t.start()
    t.join()
    return out[0]


def test_default_device_is_thread_local():
    probe = lambda: (str(torch.get_default_device()), str(torch.empty(1).device))   # noqa: E731
    try:
        torch.set_default_device("meta")
        assert _in_thread(probe) == ("cpu", "cpu") and probe() == ("meta", "meta")
    finally:
        torch.set_default_device(None)
    with torch.device("meta"):
        assert _in_thread(probe) == ("cpu", "cpu") and probe()[1] == "meta"

    def set_there():
        torch.set_default_device("meta")
        return str(torch.empty(1).device)
    assert _in_thread(set_there) == "meta" and probe() == ("cpu", "cpu")


# ---------------------------------------------------------------- take_along_dim wraps along dim

def test_take_along_dim_wraps_indices_along_dim_as_torch():
    x = torch.arange(3.0) * 10
    idx = torch.tensor([-100, -7, -4, -1, 0, 3, 4, 100, 2 ** 40 + 1])
    assert torch.take_along_dim(x, idx, 0).tolist() == [20.0, 20.0, 20.0, 20.0, 0.0, 0.0, 10.0, 10.0, 20.0]
    x2 = torch.arange(6.0).reshape(2, 3)
    assert x2.take_along_dim(torch.tensor([[7]]), dim=0).tolist() == [[3.0, 4.0, 5.0]]
    xr = x.clone().requires_grad_()
    torch.take_along_dim(xr, torch.tensor([4, 5, -1]), 0).sum().backward()
    assert xr.grad.tolist() == [0.0, 1.0, 2.0]
    with pytest.raises(RuntimeError, match="^index 6 is out of bounds for dimension 0 with size 6$"):
        torch.take_along_dim(x2, torch.tensor([6]))           # without dim: checked, as gather
    with pytest.raises(RuntimeError, match="^ZeroDivisionError$"):
        torch.take_along_dim(torch.zeros(2, 0), torch.zeros(2, 1, dtype=torch.long), 1)
    assert torch.take_along_dim(torch.zeros(2, 0), torch.zeros(2, 0, dtype=torch.long), 1).shape == (2, 0)


# ---------------------------------------------------------------- torch.mode's index among ties

def test_mode_picks_torchs_index_among_ties_past_16_elements():
    # read off torch 2.13: libstdc++'s introsort decides which of the equal values ends its run
    row = [1, 0, 4, 3, 0, 0, 2, 0, 5, 3, 6, 4, 2, 4, 4, 3, 1, 4, 6, 3, 6, 3, 4, 2, 3, 4, 2, 6, 5, 0, 4, 0]
    v, i = torch.mode(torch.tensor(row))
    assert (v.item(), i.item()) == (4, 13)      # not the last occurrence (30)
    v, i = torch.tensor([row, row[::-1]], dtype=torch.float64).mode(1)
    assert v.tolist() == [4.0, 4.0] and i.tolist() == [13, 6]
    assert torch.mode(torch.tensor([3, 1, 3, 1])).indices.item() == 3      # short rows: the last occurrence
    v, i = torch.mode(torch.tensor([2.0, float("nan"), 2.0]))               # NaN splits the run
    assert (v.item(), i.item()) == (2.0, 0)


# ---------------------------------------------------------------- torch.special: what torch cannot differentiate

@pytest.mark.parametrize("fn, what", [(torch.special.zeta, "zeta"), (torch.special.gammainc, "igamma: input"),
                                      (torch.special.gammaincc, "igammac: input"), (torch.igamma, "igamma: input")])
def test_special_gradient_for_self_raises_as_torch(fn, what):
    a = torch.tensor([2.5, 3.0], dtype=F64, requires_grad=True)
    b = torch.tensor([1.5, 2.0], dtype=F64, requires_grad=True)
    y = fn(a, b)
    msg = f"^the derivative for '{what}' is not implemented\\.$"
    for wrt in (a, (a, b)):
        with pytest.raises(NotImplementedError, match=msg):
            torch.autograd.grad(y.sum(), wrt, retain_graph=True)
    assert fn(a, b.detach()).requires_grad             # self alone still records the op, as torch
    (gb,) = torch.autograd.grad(fn(a.detach(), b).sum(), b)
    assert gb.shape == (2,)


def test_polygamma_in_place():
    x = torch.tensor([1.0, 2.0])
    assert x.polygamma_(1) is x and torch.allclose(x, torch.tensor([1.6449341, 0.6449341]))
    with pytest.raises(RuntimeError, match="^result type Float can't be cast to the desired output type Long$"):
        torch.tensor([1, 2]).polygamma_(1)


# ---------------------------------------------------------------- factories past NumPy's shape limit

def test_factories_make_empty_tensors_numpy_cannot_describe():
    for t in (torch.empty(2 ** 62, 0), torch.zeros(2 ** 62, 0), torch.full((2 ** 62, 0), 1.0)):
        assert t.shape == (2 ** 62, 0) and t.numel() == 0 and t.stride() == (1, 1) and t.dtype == torch.float32
    t = torch.ones(0, 2 ** 62, dtype=F64)
    assert t.stride() == (2 ** 62, 1) and t.dtype == F64
    assert (torch.empty(2 ** 62, 0) + 1).shape == (2 ** 62, 0)
    assert torch.empty(2 ** 62, 0).t().shape == (0, 2 ** 62)
    with pytest.raises(TypeError, match="^empty\\(\\): argument 'size' failed to unpack the object at pos 1 with "
                                        "error \"Overflow when unpacking long long\"$"):
        torch.empty(2 ** 63, 0)
    with pytest.raises(RuntimeError, match=r"^Storage size calculation overflowed with sizes=\[4611686018427387904, 2\]$"):
        torch.empty(2 ** 62, 2)


# ---------------------------------------------------------------- OpInfo samples (benches/opinfo.py)

def test_linear_cross_entropy_k_dimensional_weight():
    g = torch.Generator().manual_seed(0)
    x, w = torch.randn(4, 3, generator=g, dtype=F64), torch.randn(2, 3, 3, generator=g, dtype=F64)
    target = torch.tensor([[0, 1, 0], [1, 1, 0], [0, 0, 1], [1, 0, 1]])
    logits = (x @ w.reshape(6, 3).T).reshape(4, 2, 3)
    want = torch.nn.functional.cross_entropy(logits, target)
    got = torch.nn.functional.linear_cross_entropy(x, w, target)
    assert torch.allclose(got, want)
    with pytest.raises(RuntimeError, match="requires batched input"):
        torch.nn.functional.linear_cross_entropy(x[0], w, target[0])
    with pytest.raises(RuntimeError, match=r"^expected linear_bias shape \(2, 3\), got \(2,\)$"):
        torch.nn.functional.linear_cross_entropy(x, w, target, linear_bias=torch.zeros(2, dtype=F64))


def test_unfold_of_bool_and_diff_of_order_zero_and_gradient_spacing_none():
    x = torch.tensor([[[[True, False], [False, True]]]])
    cols = torch.nn.functional.unfold(x, 1)
    assert cols.dtype == torch.bool and cols.tolist() == [[[True, False, False, True]]]
    y = torch.arange(9.0).reshape(3, 3)
    d = torch.diff(y, 0, 0, torch.ones(1, 3), torch.ones(2, 3))     # n=0: the input, prepend/append left out
    assert d.shape == (3, 3) and torch.equal(d, y) and d.data_ptr() != y.data_ptr()
    (gr,) = torch.gradient(torch.arange(5.0) ** 2, spacing=None, dim=None, edge_order=1)
    assert gr.tolist() == [1.0, 2.0, 4.0, 6.0, 7.0]
    with pytest.raises(RuntimeError, match="^dim 1 appears multiple times in the list of dims$"):
        torch.gradient(y, spacing=0.1, dim=[1, 1])


def test_ormqr_with_more_columns_than_rows_and_lu_solve_of_empties():
    a = torch.tensor([[1.5409961082440433, -0.2934289057609464, -2.1787893820745574, 0.5684312772806678,
                       -1.084522342424021],
                      [-1.3985953953708767, 0.4033468476292993, 0.8380263329976598, -0.7192575784693592,
                       -0.40334352493217457]], dtype=F64)
    c = torch.tensor([[-0.5966353626151273, 0.18203648506130554, -0.8566745932963743],
                      [1.100604170903427, -1.0711873631091473, 0.12270123916331216]], dtype=F64)
    got = torch.ormqr(a, torch.tensor([1.2, 0.7], dtype=F64), c)
    want = torch.tensor([[0.6734750457215706, -0.575744073916874, 0.23311429837531417],
                         [-1.4461893174413016, 0.7384721915557069, -1.4873633540693612]], dtype=F64)
    assert torch.allclose(got, want, rtol=1e-12, atol=1e-12)
    x = torch.linalg.lu_solve(torch.zeros(0, 0), torch.zeros(0, dtype=torch.int32), torch.zeros(0, 4))
    assert x.shape == (0, 4)


# ---------------------------------------------------------------- linalg.lu's P, quantile's q, topk's ties

_LU_A = [[2.0, 1.0, 0.5], [4.0, -1.0, 3.0], [1.0, 2.0, -2.0], [0.5, 0.25, 1.0]]
_LU_GRADS = {   # d(L.sum() + (U * U).sum()) / dA in torch 2.13: tall, wide, square
    "tall": [[-0.04914529914529919, 1.5726495726495726, 0.9230769230769231],
             [6.613154266199139, -3.834611732047629, 6.945923734385273],
             [5.788808532398276, 3.0807765359047417, -6.358152531229455],
             [-0.2862699978084594, 2.2247424939732627, 1.4566074950690333]],
    "wide": [[-3.946180555555555, 11.923611111111112, 1.9583333333333333, -0.02083333333333326],
             [13.652777777777777, -7.055555555555555, 1.3333333333333335, 1.1666666666666665],
             [4.479166666666666, -1.5833333333333333, -2.5, 1.75]],
    "square": [[-0.37962962962962965, 2.4814814814814814, 1.6666666666666665],
               [6.709876543209876, -3.952160493827159, 6.8194444444444455],
               [5.919753086419754, 2.8456790123456783, -6.611111111111112]],
}


@pytest.mark.parametrize("case", ["tall", "wide", "square"])
def test_linalg_lu_permutation_is_not_differentiable_and_gradients_match(case):
    a = torch.tensor(_LU_A, dtype=F64)
    a = {"tall": a, "wide": a.mT.contiguous(), "square": a[:3].clone()}[case].requires_grad_()
    p, l, u = torch.linalg.lu(a)
    assert not p.requires_grad and p.grad_fn is None           # PyTorch: P is piecewise constant
    assert l.grad_fn.name() == "LinalgLuBackward0"
    (l.sum() + (u * u).sum() + p.sum()).backward()              # P's part adds nothing
    assert torch.allclose(a.grad, torch.tensor(_LU_GRADS[case], dtype=F64), rtol=1e-12, atol=1e-12)


def test_quantile_gradient_to_a_tensor_q():
    x = torch.tensor([[3.0, 1.0, 4.0, 1.0, 5.0], [9.0, 2.0, 6.0, 5.0, 3.0]], dtype=F64, requires_grad=True)
    q = torch.tensor([0.25, 0.6], dtype=F64, requires_grad=True)
    torch.quantile(x, q, dim=1).sum().backward()
    assert q.grad.tolist() == [0.0, 8.0]                        # (upper - lower) * (n - 1), linear only
    assert torch.allclose(x.grad, torch.tensor([[0.6, 0.0, 0.4, 1.0, 0.0], [0.0, 0.0, 0.4, 0.6, 1.0]], dtype=F64))
    q.grad = None
    torch.nanquantile(x, q).sum().backward()
    assert q.grad.tolist() == [9.0, 9.0]
    for interp, want in [("lower", [[2.0] * 4 + [0.0], [0.0] * 4 + [2.0]]),
                         ("higher", [[0.0] * 4 + [2.0], [2.0] * 4 + [0.0]]), ("midpoint", [[1.0] * 5] * 2)]:
        q.grad = x.grad = None
        out = torch.quantile(x, q, dim=0, interpolation=interp)
        out.sum().backward()
        assert q.grad is None and x.grad.tolist() == want       # rounding cuts q from the graph (PyTorch's)
        assert not torch.quantile(x.detach(), q, dim=0, interpolation=interp).requires_grad


def test_topk_order_among_ties_is_libstdcxx_selection():
    t = torch.tensor([[3, 1, 3, 2, 3, 1, 1, 2, 3, 3], [0] * 10])
    for args, want in [((3,), [[0, 4, 9], [8, 6, 7]]), ((4, -1, False), [[1, 6, 5, 7], [8, 6, 7, 5]]),
                       ((5, -1, True, False), [[9, 8, 0, 4, 2], [8, 6, 7, 5, 9]]),
                       ((6, -1, False, False), [[1, 6, 5, 7, 3, 8], [5, 9, 8, 7, 6, 3]]), ((1,), [[0], [8]])]:
        res = torch.topk(t, *args)
        assert res.indices.tolist() == want, args
        assert torch.equal(res.values, t.gather(1, res.indices))
    v = torch.tensor([1.0, float("nan"), 2.0, float("nan"), 2.0, 0.0])
    assert torch.topk(v, 3).indices.tolist() == [1, 3, 2]       # NaN the largest
    assert torch.topk(v, 3, largest=False).indices.tolist() == [5, 0, 4]
    big = torch.arange(200) % 7                                 # k * 64 <= n: partial_sort
    assert torch.topk(big, 3).indices.tolist() == [20, 13, 6]
    assert torch.topk(big, 3, largest=False, sorted=False).indices.tolist() == [14, 7, 0]
    assert torch.topk(t.t(), 2, dim=0).indices.tolist() == [[0, 8], [4, 6]]     # along a non-last dim
    with pytest.raises(RuntimeError, match="^topk does not support bool dtypes on CPU$"):
        torch.topk(torch.tensor([True, False]), 1)


# ---------------------------------------------------------------- cholesky_solve / cholesky_inverse

_CHOL_L = [[2.0, 0.0, 0.0], [0.5, 1.5, 0.0], [-1.0, 0.25, 1.0]]
_CHOL_B = [[1.0, 2.0], [0.0, -1.0], [3.0, 0.5]]
_CHOL_SOLVE_GRAD_L = [[-14.870424623842581, 11.824566374099792, -60.98144179607124],     # torch 2.13: full
                      [6.590205439814813, -5.503030156893002, 25.540326404963988],      # matrices, the unread
                      [-21.020399305555543, 16.267409336419746, -88.17232108410494]]    # triangle included
_CHOL_SOLVE_GRAD_B = [[6.6281406732253085, 4.126265914351851], [-2.72755111882716, -2.1387442129629624],
                      [9.696325231481481, 5.568576388888888]]
_CHOL_INV_GRAD_L = [[-1.3204149787808621, 1.2412250032150203, -5.169205025880915],
                    [0.600815007716049, -0.9771492412551437, 2.2629263921039096],
                    [-1.769241898148147, 1.534963348765432, -7.437704957561728]]


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_solve_and_inverse_gradients_are_pytorchs_full_formulas(upper):
    L = torch.tensor(_CHOL_L, dtype=F64)
    t = (lambda m: torch.tensor(m, dtype=F64).mT) if upper else (lambda m: torch.tensor(m, dtype=F64))
    f = (L.mT if upper else L).clone().requires_grad_()
    b = torch.tensor(_CHOL_B, dtype=F64, requires_grad=True)
    x = torch.cholesky_solve(b, f, upper)
    assert x.grad_fn.name() == "CholeskySolveBackward0"
    (x * x).sum().backward()
    assert torch.allclose(f.grad, t(_CHOL_SOLVE_GRAD_L), rtol=1e-12, atol=1e-12)
    assert torch.allclose(b.grad, torch.tensor(_CHOL_SOLVE_GRAD_B, dtype=F64), rtol=1e-12, atol=1e-12)
    f.grad = None
    inv = torch.cholesky_inverse(f, upper)
    assert inv.grad_fn.name() == "CholeskyInverseBackward0"
    inv.pow(2).sum().backward()
    assert torch.allclose(f.grad, t(_CHOL_INV_GRAD_L), rtol=1e-12, atol=1e-12)


def test_cholesky_solve_broadcasts_and_checks_as_torch():
    b = torch.tensor(_CHOL_B, dtype=F64, requires_grad=True)
    torch.cholesky_solve(b, torch.tensor(_CHOL_L, dtype=F64).expand(2, 3, 3)).sum().backward()
    assert torch.allclose(b.grad, torch.tensor([[1.8229166666666667] * 2, [0.20833333333333331] * 2, [2.75] * 2],
                                               dtype=F64), rtol=1e-12)
    f = torch.eye(3, dtype=F64)
    cases = [((torch.ones(3), f), RuntimeError, r"^b should have at least 2 dimensions, but has 1 dimensions instead$"),
             ((torch.ones(3, 2, dtype=F64), torch.ones(3, dtype=F64)), RuntimeError, r"^u should have at least 2"),
             ((torch.ones(3, 2), f), RuntimeError, r"^Expected b and A to have the same dtype, but found b of type "
                                                   r"Float and A of type Double instead\.$"),
             ((torch.ones(3, 2, dtype=F64), torch.ones(3, 2, dtype=F64)), RuntimeError,
              r"^A must be batches of square matrices, but they are 3 by 2 matrices$"),
             ((torch.ones(4, 2, dtype=F64), f), RuntimeError, r"^Incompatible matrix sizes for cholesky_solve: each A "
                                                              r"matrix is 3 by 3 but each b matrix is 4 by 2$"),
             ((torch.ones(3, 2, dtype=torch.int64), torch.ones(3, 3, dtype=torch.int64)), NotImplementedError,
              "^\"cholesky_solve_cpu\" not implemented for 'Long'$")]
    for args, cls, msg in cases:
        with pytest.raises(cls, match=msg):
            torch.cholesky_solve(*args)
    with pytest.raises(RuntimeError, match=r"^cholesky_inverse: A must be batches of square matrices, but they are 3 by 2"):
        torch.cholesky_inverse(torch.ones(3, 2))
    with pytest.raises(NotImplementedError, match="^\"cholesky_inverse_out_cpu\" not implemented for 'Long'$"):
        torch.cholesky_inverse(torch.ones(3, 3, dtype=torch.int64))


# ---------------------------------------------------------------- randint_like, index_reduce of 0-d tensors

def test_randint_like_takes_high_alone_and_honours_requires_grad():
    x = torch.zeros(2, 3)
    r = torch.randint_like(x, 10)
    assert r.shape == (2, 3) and r.dtype == torch.float32 and bool(((r >= 0) & (r < 10) & (r == r.floor())).all())
    r = torch.randint_like(x, 2, 5, dtype=torch.int64)
    assert r.dtype == torch.int64 and bool(((r >= 2) & (r < 5)).all())
    assert torch.randint_like(x, 2, 5, requires_grad=True).requires_grad
    assert torch.randint_like(x, torch.tensor(3)).lt(3).all()
    with pytest.raises(RuntimeError, match="^Only Tensors of floating point and complex dtype can require gradients$"):
        torch.randint_like(torch.zeros(3, dtype=torch.int64), 10, requires_grad=True)


@pytest.mark.filterwarnings("ignore:index_reduce")
def test_index_reduce_of_a_0d_tensor():
    want = {("amax", True): (3.0, 5), ("amax", False): (3.0, 2), ("amin", True): (2.0, 2), ("amin", False): (3.0, 2),
            ("prod", True): (6.0, 10), ("prod", False): (3.0, 2), ("mean", True): (2.5, 3), ("mean", False): (3.0, 2)}
    for (reduce, inc), (f, i) in want.items():      # torch 2.13's values
        got = torch.index_reduce(torch.tensor(2.0), 0, torch.tensor([0]), torch.tensor(3.0), reduce, include_self=inc)
        assert got.shape == () and got.item() == f, (reduce, inc)
        got = torch.tensor(5).index_reduce(-1, torch.tensor([0]), torch.tensor(2), reduce, include_self=inc)
        assert got.shape == () and got.dtype == torch.int64 and got.item() == i, (reduce, inc)
    x = torch.tensor(2.0, dtype=F64, requires_grad=True)
    torch.index_reduce(x, 0, torch.tensor([0]), torch.tensor(3.0, dtype=F64), "prod").backward()
    assert x.grad.item() == 3.0
    with pytest.raises(IndexError, match=r"^Dimension out of range \(expected to be in range of \[-1, 0\], but got 1\)$"):
        torch.index_reduce(torch.tensor(2.0), 1, torch.tensor([0]), torch.tensor(3.0), "amax")


def test_prelu_takes_one_slope_per_channel_with_torchs_checks():
    x = torch.tensor([[[-1.0, 2.0], [-3.0, 4.0]], [[5.0, -6.0], [-7.0, -8.0]]], dtype=F64, requires_grad=True)
    w = torch.tensor([0.5, 0.25], dtype=F64, requires_grad=True)
    y = torch.prelu(x, w)                                       # slopes along dim 1, not broadcast on the last
    assert y.grad_fn.name() == "PreluKernelBackward0"
    assert y.tolist() == [[[-0.5, 2.0], [-0.75, 4.0]], [[5.0, -3.0], [-1.75, -2.0]]]
    y.sum().backward()
    assert w.grad.tolist() == [-7.0, -18.0]
    assert torch.prelu(torch.tensor(-2.0), torch.tensor([0.5])).shape == ()
    cases = [((torch.ones(3), torch.ones(3)), "^Mismatch of parameter numbers and input channel size. Found parameter "
                                              r"numbers = 3 and channel size = 1\.$"),
             ((torch.tensor(1.0), torch.ones(2)), r"^Not allow zero-dim input tensor\.$"),
             ((torch.ones(2, 3), torch.ones(3, dtype=F64)), "^prelu: Type promoting not supported. Got Float and Double$"),
             ((torch.ones(2, 3), torch.ones(1, 3)), "^prelu: Expected `weight` to be a scalar or 1D tensor, but got: "
                                                    "ndim = 2$")]
    for args, msg in cases:
        with pytest.raises(RuntimeError, match=msg):
            torch.nn.functional.prelu(*args)


# ---------------------------------------------------------------- Python numbers where PyTorch wants a Tensor

def test_python_numbers_follow_pytorchs_overloads():
    t = torch.tensor([1.0, 4.0])
    with pytest.raises(TypeError, match=r"^atan2\(\): argument 'other' \(position 2\) must be Tensor, not int$"):
        torch.atan2(t, 2)                              # no Number overload at all
    with pytest.raises(TypeError, match=r"^maximum\(\): argument 'input' \(position 1\) must be Tensor, not float$"):
        torch.maximum(2.0, t)
    with pytest.raises(TypeError, match=r"^eq\(\) received an invalid combination of arguments - got \(int, Tensor\)"):
        torch.eq(2, t)                                 # eq(Tensor, Number) exists, eq(Number, Tensor) does not
    with pytest.raises(TypeError, match=r"^fmod\(\) received an invalid combination of arguments - got \(int, Tensor\)"):
        torch.fmod(2, t)
    with pytest.raises(TypeError, match=r"^pow\(\) received an invalid combination of arguments - got \(int, int\)"):
        torch.pow(2, 3)                                # one of the two must be a tensor
    with pytest.raises(TypeError, match=r"^xlogy\(\) received an invalid combination"):
        torch.xlogy(2.0, 3)
    with pytest.raises(TypeError, match=r"^clamp_min\(\) received an invalid combination"):
        torch.clamp_min(2, t)
    with pytest.raises(TypeError):
        t.atan2_(2)
    with pytest.raises(TypeError, match=r"^rsub\(\) received an invalid combination of arguments - got \(int, Tensor\)"):
        torch.rsub(2, t)
    assert torch.rsub(t, 2).tolist() == [1.0, -2.0]
    for fn in (torch.polar, torch.ldexp, torch.nextafter):       # composites with no Number overload
        with pytest.raises(TypeError, match=r"\(\): argument '\w+' \(position 2\) must be Tensor, not int$"):
            fn(t, 2)
    # what PyTorch does take: a number on the right, on either side, or both (add's family)
    assert torch.eq(t, 4).tolist() == [False, True]
    assert torch.fmod(t, 3).tolist() == [1.0, 1.0]
    assert torch.xlogy(2.0, t).tolist() == pytest.approx([0.0, 2 * np.log(4.0)])
    assert torch.pow(2, t).tolist() == [2.0, 16.0]
    assert torch.remainder(5, t).tolist() == [0.0, 1.0]
    assert torch.add(2, 3).item() == 5 and torch.mul(2, t).tolist() == [2.0, 8.0]
    assert torch.atan2(t, torch.tensor(1.0)).tolist() == pytest.approx(np.arctan2([1.0, 4.0], 1.0).tolist())
    assert (2 == t).tolist() == [False, False] and (4 > t).tolist() == [True, False]   # reflected operators


def test_internal_callers_pass_tensors_where_pytorch_wants_them():
    # hardsigmoid's and hardswish's gradients (once gt(3.0, self)), bce's (once maximum(x, 1e-12)), addr of bools
    x = torch.tensor([-4.0, -3.0, -1.0, 3.0, 4.0], dtype=F64, requires_grad=True)
    torch.nn.functional.hardsigmoid(x).sum().backward()
    assert x.grad.tolist() == [0.0, 0.0, float(np.float32(1 / 6)), 0.0, 0.0]
    x.grad = None
    torch.nn.functional.hardswish(x).sum().backward()
    assert x.grad.tolist() == pytest.approx([0.0, 0.0, -1 / 3 + 0.5, 1.0, 1.0])   # 3 takes the right branch
    p = torch.tensor([0.25, 0.5], dtype=F64, requires_grad=True)
    y = torch.tensor([0.0, 1.0], dtype=F64, requires_grad=True)
    torch.nn.functional.binary_cross_entropy(p, y).backward()
    assert p.grad.tolist() == pytest.approx([0.25 / 0.1875 / 2, -0.5 / 0.25 / 2])
    assert y.grad.tolist() == pytest.approx([np.log(3.0) / 2, 0.0])
    m = torch.tensor([[True, False], [False, False]])
    v1, v2 = torch.tensor([True, False]), torch.tensor([False, True])
    assert torch.addr(m, v1, v2).tolist() == [[True, True], [False, False]]
    assert torch.addr(m, v1, v2, beta=False).tolist() == [[False, True], [False, False]]


def test_fractional_max_pool3d_of_an_empty_batch():
    x = torch.zeros(0, 1, 4, 5, 4)
    out, idx = torch.nn.functional.fractional_max_pool3d(x, (2, 2, 1), output_size=(2, 3, 2), return_indices=True)
    assert out.shape == (0, 1, 2, 3, 2) and idx.shape == (0, 1, 2, 3, 2) and idx.dtype == torch.int64


def test_integer_addmv_addbmm_addmm_truncate_float_beta_and_alpha():
    m, a, v = torch.tensor([1, 2]), torch.tensor([[1, 2], [3, 4]]), torch.tensor([1, 1])
    out = torch.addmv(m, a, v, beta=0.2, alpha=0.6)          # int(0.2) == int(0.6) == 0, as ATen's kernel
    assert out.dtype == torch.int64 and out.tolist() == [0, 0]
    assert torch.addmv(m, a, v, beta=1.5, alpha=2.7).tolist() == [1 + 2 * 3, 2 + 2 * 7]
    b1, b2 = a[None].expand(2, 2, 2), a[None].expand(2, 2, 2)
    out = torch.addbmm(a, b1, b2, beta=2.9, alpha=1.2)          # beta 2, alpha 1: 2 * a + 2 * (a @ a)
    assert out.dtype == torch.int64 and out.tolist() == (2 * np.array([[1, 2], [3, 4]]) + 2 * np.array([[7, 10], [15, 22]])).tolist()
    assert torch.addmm(a, a, a, beta=0.5, alpha=-1.5).tolist() == (-np.array([[7, 10], [15, 22]])).tolist()


def test_batch_norm_of_a_1d_input():
    z = torch.zeros(0, dtype=F64, requires_grad=True)
    for training in (True, False):
        out = torch.nn.functional.batch_norm(z, torch.zeros(0), torch.ones(0), training=training)
        assert out.shape == (0,) and out.requires_grad
    with pytest.raises(RuntimeError, match=r"^running_mean should contain 0 elements not 3$"):
        torch.nn.functional.batch_norm(torch.ones(3), torch.zeros(3), torch.ones(3))


@pytest.mark.parametrize("kwargs, message", [
    ({"stride": (-1,)}, r"^non-positive stride is not supported$"),
    ({"padding": (-1,)}, r"^negative padding is not supported$"),
    ({"dilation": (-1,)}, r"^dilation should be greater than zero$"),
    ({"groups": 0, "padding": "same"}, r"^non-positive groups is not supported$"),
    ({"groups": 3}, r"^Given groups=3, expected weight to be at least 3 at dimension 0, but got weight of size "
                    r"\[1, 2, 2, 3\] instead$"),
])
def test_conv_argument_checks_come_before_the_channel_check(kwargs, message):
    x, w = torch.ones(1, 1, 4, 4, dtype=F64), torch.ones(1, 2, 2, 3, dtype=F64)     # channels disagree too
    with pytest.raises(RuntimeError, match=message):
        torch.nn.functional.conv2d(x, w, **kwargs)


def test_conv_bias_dtype_and_same_padding_checks():
    x, w = torch.ones(2, 4, 4, dtype=torch.int64), torch.ones(3, 2, 3, 3, dtype=torch.int64)
    with pytest.raises(RuntimeError, match=r"^Input type \(long int\) and bias type \(double\) should be the same$"):
        torch.nn.functional.conv2d(x, w, torch.ones(3, dtype=F64))
    with pytest.raises(RuntimeError, match=r"^Expected 3-dimensional input for 3-dimensional weight\[1, 2, 2\], but got "
                                           r"4-dimensional input of size \[1, 1, 4, 3\] instead$"):
        torch.nn.functional.conv2d(torch.ones(1, 1, 4, 3), torch.ones(1, 2, 2), padding="same")
    with pytest.raises(RuntimeError, match=r"^padding='same' is not supported for strided convolutions$"):
        torch.nn.functional.conv1d(torch.ones(1, 1, 6), torch.ones(1, 1, 3), stride=2, padding="same")
    out = torch.nn.functional.conv1d(torch.ones(1, 1, 6, dtype=F64), torch.ones(1, 1, 3, dtype=F64), padding="same")
    assert out.tolist() == [[[2.0, 3.0, 3.0, 3.0, 3.0, 2.0]]]


def test_multi_margin_loss_checks_in_pytorchs_order():
    x, t = torch.zeros(5, 4), torch.tensor([0, 1, 2, 3, 0])
    mml = torch.nn.functional.multi_margin_loss
    for args, kwargs, cls, message in [
            ((x, t.float()), {"reduction": "abc"}, ValueError, r"^abc is not a valid value for reduction$"),
            ((x, t), {"p": 3}, ValueError, r"^only p == 1 and p == 2 supported$"),
            ((x, t), {"weight": torch.ones(4, 1)}, ValueError, r"^weight must be one-dimensional$"),
            ((torch.zeros(5, 0), t), {}, RuntimeError,
             r"^Expected non-empty vector or matrix with optional 0-dim batch size, but got: \[5, 0\]$"),
            ((x, t.reshape(5, 1).expand(5, 4)), {}, RuntimeError,
             r"^multi_margin_loss: target tensor should be 1-D .* Expected target size \[5\], but got \[5, 4\]\. "
             r"Input has shape \[5, 4\]\.$"),
            ((x, t), {"weight": torch.ones(5)}, RuntimeError, r"^inconsistent weight size, expected 4 but got \[5\]$"),
            ((x, t.float()), {}, RuntimeError, r"^expected scalar type Long but found Float$")]:
        with pytest.raises(cls, match=message):
            mml(*args, **kwargs)
    assert mml(x, t).item() == pytest.approx(0.75)          # (4 - 1) margins of 1 over 4 classes, each sample


def test_avg_pool_refuses_negative_padding_and_a_zero_divisor():
    F = torch.nn.functional
    for pool, x in ((F.avg_pool1d, torch.zeros(0, 1, 49)), (F.avg_pool2d, torch.zeros(0, 1, 49))):
        with pytest.raises(RuntimeError, match=r"^pad must be non-negative, but got pad: -1$"):
            pool(x, kernel_size=2, stride=50, padding=-1)
    for pool, x in ((F.avg_pool2d, torch.zeros(3, 3, 3)), (F.avg_pool3d, torch.zeros(3, 3, 3, 3))):
        with pytest.raises(RuntimeError, match=r"^divisor must be not zero$"):
            pool(x, kernel_size=2, divisor_override=0)
    out = F.avg_pool2d(torch.ones(1, 2, 2), kernel_size=2, divisor_override=2)
    assert out.tolist() == [[[2.0]]]


def test_triplet_margin_loss_and_rms_norm_check_their_arguments():
    F = torch.nn.functional
    a = torch.ones(3, 4)
    with pytest.raises(ValueError, match=r"^margin must be greater than 0, got -1\.0$"):
        F.triplet_margin_loss(a, a, a, margin=-1.0)
    with pytest.raises(RuntimeError, match=r"^The anchor, positive, and negative tensors are expected to have the same "
                                           r"number of dimensions, but got: anchor 2D, positive 1D, and negative 2D inputs$"):
        F.triplet_margin_loss(a, torch.ones(4), a)
    assert F.triplet_margin_loss(a, a, a + 1).item() == pytest.approx(max(0.0, 1.0 - 2.0 + 4e-6), abs=1e-5)
    x = torch.ones(2, 2, 3)
    with pytest.raises(RuntimeError, match=r"^Expected normalized_shape to be at least 1-dimensional"):
        F.rms_norm(x, [])
    with pytest.raises(RuntimeError, match=r"^Expected weight to be of same shape as normalized_shape, but got weight "
                                           r"of shape \[1, 2\] and normalized_shape = \[2, 3\]$"):
        F.rms_norm(x, [2, 3], torch.ones(1, 2))
    with pytest.raises(RuntimeError, match=r"^Given normalized_shape=\[2, 2\], expected input with shape \[\*2, 2\], "
                                           r"but got input of size\[2, 2, 3\]$"):
        F.rms_norm(x, [2, 2])
    assert F.rms_norm(torch.tensor([[3.0, 4.0]], dtype=F64), [2], eps=0.0)[0].tolist() == \
        pytest.approx([3 / np.sqrt(12.5), 4 / np.sqrt(12.5)])


def test_multilabel_margin_loss_checks_in_pytorchs_order():
    def mlml(x, t, reduction="mean"):
        return torch.nn.functional.multilabel_margin_loss(x, t, reduction=reduction)
    for args, cls, message in [
            ((torch.ones(5, 4), torch.ones(5, 4).long(), "abc"), ValueError, r"^abc is not a valid value for reduction$"),
            ((torch.ones(5, 0), torch.ones(5, 4).long()), RuntimeError,
             r"^Expected non-empty vector or matrix with optional 0-dim batch size, but got: \[5, 0\]$"),
            ((torch.ones(0), torch.ones(0).long()), RuntimeError, r"but got: \[0\]$"),
            ((torch.ones(5, 4), torch.ones(4).long()), RuntimeError,
             r"^inconsistent target size: \[4\] for input of size: \[5, 4\]$"),
            ((torch.ones(5, 4), torch.tensor(1)), RuntimeError, r"^inconsistent target size: \[\] for input of size"),
            ((torch.ones(4), torch.ones(4)), RuntimeError, r"^expected scalar type Long but found Float$")]:
        with pytest.raises(cls, match=message):
            mlml(*args)
    # sample 0: target class 0 (then -1 ends the list); hinge 1 - (x0 - xi) over the 3 others, / 4 classes
    x = torch.tensor([[0.5, 0.1, 0.3, 0.0]], dtype=F64)
    want = sum(max(0.0, 1 - (0.5 - v)) for v in (0.1, 0.3, 0.0)) / 4
    assert mlml(x, torch.tensor([[0, -1, 1, 2]])).item() == pytest.approx(want)
