"""Complex elementwise math and reductions (issue 25): values and gradients against torch 2.13's, checked side by side.

The registry fuzz tests (tests/test_registry_fuzz.py) compare every complex kernel with NumPy; here the values at
fixed points are PyTorch's own, and the gradients follow its convention (grad * conj(f'(z)) for holomorphic f), which
NumPy cannot check. The expected numbers were printed by torch 2.13 (CPU, complex128) and rounded to 12 digits."""
import numpy as np
import pytest

import reftorch as torch

X = np.array([0.4 + 0.3j, 0.7 - 0.2j])
G = np.array([1 - 0.5j, 0.3 + 0.8j])

# op: (torch's values at X, torch's gradient at X for the output gradient G)
EXPECTED = {
    'exp': ([(1.425194569035+0.440864342949j), (1.973611724629-0.40007090278j)], [(1.204762397561-1.153461627467j), (0.272026795165+1.698910650537j)]),
    'log': ([(-0.69314718056+0.643501108793j), (-0.317439136218-0.278299659005j)], [(2.2+0.4j), (0.698113207547+0.943396226415j)]),
    'sqrt': ([(0.67082039325+0.22360679775j), (0.844988458184-0.118344811733j)], [(0.782623792125-0.111803398875j), (0.239125777039+0.439888499465j)]),
    'rsqrt': ([(1.3416407865-0.4472135955j), (1.160680911463+0.1625591008j)], [(-1.38636214605-0.76026311235j), (-0.481822158152-0.490748668335j)]),
    'sin': ([(0.407073991323+0.280481764176j), (0.657145046133-0.153990268563j)], [(1.02211342483-0.362824477573j), (0.337820397695+0.585240806661j)]),
    'cos': ([(0.962820530893-0.118585787874j), (0.780190088544+0.129704213915j)], [(-0.266833109235+0.484018759838j), (-0.07395129899-0.571913117475j)]),
    'tan': ([(0.381132074272+0.338254743265j), (0.787704719458-0.328328818525j)], [(0.901925654764-0.773262157215j), (0.040001817776+1.365318825518j)]),
    'sinh': ([(0.392406684833+0.319478730742j), (0.743462532668-0.249363586383j)], [(0.972095078099-0.637779554309j), (0.248478904471+1.029331548488j)]),
    'cosh': ([(1.032787884203+0.121385612208j), (1.230149191961-0.150707316397j)], [(0.232667319462-0.515682073158j), (0.023547890694+0.669579102049j)]),
    'tanh': ([(0.410633470843+0.261073681842j), (0.619897992347-0.126765456203j)], [(1.006745212094-0.235358625747j), (0.31526943087+0.458287776897j)]),
    'asin': ([(0.390316204522+0.318962433305j), (0.741757291909-0.268045131645j)], [(0.94799340058-0.634631017359j), (0.133783937021+1.079313836233j)]),
    'acos': ([(1.180480122273-0.318962433305j), (0.829039034886+0.268045131645j)], [(-0.94799340058+0.634631017359j), (-0.133783937021-1.079313836233j)]),
    'atan': ([(0.408822522916+0.261492138796j), (0.623452224024-0.133825592548j)], [(0.989604989605-0.245322245322j), (0.302168829382+0.493374295016j)]),
    'asinh': ([(0.405112337178+0.280629562292j), (0.66043378437-0.163847027505j)], [(1.001709975096-0.369430652846j), (0.308437653692+0.631808969082j)]),
    'acosh': ([(0.318962433305+1.180480122273j), (0.268045131645-0.829039034886j)], [(0.634631017359+0.94799340058j), (1.079313836233-0.133783937021j)]),
    'atanh': ([(0.379086872342+0.337370471112j), (0.778805812889-0.352555674057j)], [(0.878048780488-0.764227642276j), (-0.154896298241+1.375689157259j)]),
    'reciprocal': ([(1.6-1.2j), (1.320754716981+0.377358490566j)], [(-3.04-3.28j), (-1.27803488786-0.982556069776j)]),
    'sigmoid': ([(0.600852125935+0.072559153598j), (0.669687639963-0.044440356145j)], [(0.252411424362-0.10791134994j), (0.079019881675+0.174020252587j)]),
    'log1p': ([(0.358919896575+0.211093333223j), (0.537501211514-0.117108744567j)], [(0.756097560976-0.19512195122j), (0.22866894198+0.443686006826j)]),
    'expm1': ([(0.425194569035+0.440864342949j), (0.973611724629-0.40007090278j)], [(1.204762397561-1.153461627467j), (0.272026795165+1.698910650537j)]),
    'log2': ([(-1+0.928375858463j), (-0.457967867606-0.401501537928j)], [(3.173929089956+0.577078016356j), (1.007164462507+1.361033057442j)]),
    'log10': ([(-0.301029995664+0.279468980648j), (-0.1378620652-0.120864006221j)], [(0.955447860187+0.173717792761j), (0.303186713782+0.40971177538j)]),
    'exp2': ([(1.291082291549+0.27241079832j), (1.608919811742-0.224483542667j)], [(0.800499661853-0.636275801938j), (0.210085361631+0.93885462541j)]),
    'prod': ([(0.34+0.13j)], [(0.8-0.15j), (0.25-0.5j)]),
    'cumprod': ([(0.4+0.3j), (0.34+0.13j)], [(1.05+0.12j), (0.36+0.23j)]),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_values_and_conjugate_wirtinger_gradients(name):
    want_y, want_g = EXPECTED[name]
    x = torch.tensor(X, requires_grad=True)
    y = torch.cumprod(x, 0) if name == "cumprod" else getattr(torch, name)(x)
    assert y.dtype is torch.complex128
    g = torch.tensor(G if y.dim() else G[0])
    (gx,) = torch.autograd.grad(y, x, g)
    np.testing.assert_allclose(np.atleast_1d(y.detach().numpy()), want_y, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(gx.numpy(), want_g, rtol=1e-10, atol=1e-12)


def test_complex64_keeps_its_dtype_and_matches_torch():
    z = torch.tensor([0.3 + 0.4j, -1.2 + 0.7j], dtype=torch.complex64)
    for name in ("exp", "log1p", "expm1", "log2", "asinh", "sigmoid", "rsqrt"):
        assert getattr(torch, name)(z).dtype is torch.complex64, name
    np.testing.assert_allclose(torch.log1p(z).numpy(), [0.30759286880493164 + 0.2984989285469055j,
                                                       -0.31743913888931274 + 1.8490960597991943j], rtol=1e-6)
    np.testing.assert_allclose(torch.expm1(z).numpy(), [0.24330230057239532 + 0.5256597995758057j,
                                                       -0.7696340084075928 + 0.1940346211194992j], rtol=1e-6)
    np.testing.assert_allclose(torch.prod(z).numpy(), -0.64 - 0.27j, rtol=1e-6)
    assert torch.cumprod(z, 0).dtype is torch.complex64 and torch.sum(z).dtype is torch.complex64


def test_log1p_expm1_keep_the_digits_of_small_arguments():
    # exp(z) - 1 and log(1 + z) computed directly lose every digit here; c10's formulas (and torch) keep them
    z = torch.tensor([1e-9 + 2e-9j, -3e-12 + 1e-12j], dtype=torch.complex128)
    np.testing.assert_allclose(torch.log1p(z).numpy(), [1.0000000015e-09 + 1.999999998e-09j,
                                                        -3.0000000000040003e-12 + 1.0000000000030001e-12j], rtol=1e-12)
    np.testing.assert_allclose(torch.expm1(z).numpy(), [9.999999985e-10 + 2.0000000020000004e-09j,
                                                        -2.9999999999960004e-12 + 9.999999999969998e-13j], rtol=1e-12)


def test_pow_complex_tensor_and_scalar_exponents():
    a = torch.tensor(X, requires_grad=True)
    b = torch.tensor([1.5 - 0.5j, 2 + 1j], requires_grad=True)
    y = a ** b
    ga, gb = torch.autograd.grad(y, (a, b), torch.tensor(G))
    np.testing.assert_allclose(y.detach().numpy(), [0.124903743486 + 0.471477032974j,
                                                    0.449257488072 - 0.536900477186j], rtol=1e-10)
    np.testing.assert_allclose(ga.numpy(), [1.188712560862 - 1.249242438294j, 0.412890536948 + 1.790167564522j],
                               rtol=1e-10)
    np.testing.assert_allclose(gb.numpy(), [-0.2667590379714966 + 0.44141361117362976j,
                                            -0.05128532275557518 - 0.2472463995218277j], rtol=1e-6)
    # a real tensor to a complex Python number: complex result, and the real input's gradient is real
    r = torch.tensor([0.5, 2.0], dtype=torch.float64, requires_grad=True)
    y = r ** (1 + 1j)
    assert y.dtype is torch.complex128
    (gr,) = torch.autograd.grad(y, r, torch.tensor(G))
    assert gr.dtype is torch.float64
    np.testing.assert_allclose(y.detach().numpy(), [0.384619450682 - 0.319480638157j,
                                                    1.538477802728 + 1.277922552627j], rtol=1e-10)
    np.testing.assert_allclose(gr.numpy(), [1.343061365152, 1.165643429657], rtol=1e-10)
    q = torch.tensor([1, 4]) ** 0.5j
    assert q.dtype is torch.complex64
    np.testing.assert_allclose(q.numpy(), [1, 0.7692389 + 0.6389612j], rtol=1e-5)
    assert torch.pow(torch.tensor([2 + 1j]), 2).dtype is torch.complex64
    np.testing.assert_allclose(torch.pow(torch.tensor([2 + 1j]), 2).numpy(), [3 + 4j])


def test_prod_and_cumprod_gradients_through_zeros():
    x = torch.tensor([0.4 + 0.3j, 0, 0.7 - 0.2j], requires_grad=True)
    (gp,) = torch.autograd.grad(torch.prod(x), x, torch.tensor(1 - 0.5j, dtype=torch.complex128))
    np.testing.assert_allclose(gp.numpy(), [0, (1 - 0.5j) * np.conj((0.4 + 0.3j) * (0.7 - 0.2j)), 0], atol=1e-15)
    (gc,) = torch.autograd.grad(torch.cumprod(x, 0), x, torch.tensor([1, 1j, 2], dtype=torch.complex128))
    # d out_j / d x_i = prod_{k <= j, k != i} x_k, conjugated and weighted by the output gradients
    want = [1, 1j * np.conj(0.4 + 0.3j) + 2 * np.conj((0.4 + 0.3j) * (0.7 - 0.2j)), 0]
    np.testing.assert_allclose(gc.numpy(), want, atol=1e-15)


def test_complex_equality():
    assert torch.equal(torch.tensor([1 + 1j]) == torch.tensor([1 + 1j, 1 - 1j]), torch.tensor([True, False]))
    assert torch.tensor([1 + 1j]).ne(1 + 1j).tolist() == [False]
