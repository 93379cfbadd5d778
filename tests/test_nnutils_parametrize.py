"""nn.utils.parametrize, parametrizations (weight_norm, spectral_norm, orthogonal) and the legacy
weight_norm / spectral_norm hooks, against values checked with torch 2.13."""
import warnings

import numpy as np
import pytest

import reftorch as torch
from reftorch import nn
from reftorch.nn.utils import parametrize as P
from reftorch.nn.utils import parametrizations

W = np.array([[0.3, -1.2, 0.5], [0.8, 0.1, -0.4], [-0.6, 0.9, 1.1]], dtype=np.float32)
X = np.arange(6, dtype=np.float32).reshape(2, 3)


def lin(w=W):
    m = nn.Linear(w.shape[1], w.shape[0])
    with torch.no_grad():
        m.weight.copy_(torch.tensor(w))
        m.bias.zero_()
    return m


def close(t, expected, atol=1e-4):
    np.testing.assert_allclose(t.detach().numpy(), np.array(expected, dtype=np.float32), atol=atol)


class Sym(nn.Module):
    def forward(self, X):
        return X.triu() + X.triu(1).transpose(0, 1)

    def right_inverse(self, A):
        return A.triu()


def test_register_parametrization_class_state_dict_repr():
    m = lin()
    weight = m.weight
    P.register_parametrization(m, "weight", Sym())
    assert type(m).__name__ == "ParametrizedLinear" and isinstance(m, nn.Linear)
    assert P.type_before_parametrizations(m) is nn.Linear
    assert sorted(m.state_dict()) == ["bias", "parametrizations.weight.original"]
    assert P.is_parametrized(m) and P.is_parametrized(m, "weight") and not P.is_parametrized(m, "bias")
    assert m.parametrizations.weight.original is weight          # the same Parameter, now holding triu(W)
    close(m.weight, [[0.3, -1.2, 0.5], [-1.2, 0.1, -0.4], [0.5, -0.4, 1.1]])
    assert repr(m) == ("ParametrizedLinear(\n  in_features=3, out_features=3, bias=True\n  (parametrizations): "
                       "ModuleDict(\n    (weight): ParametrizationList(\n      (0): Sym()\n    )\n  )\n)")


def test_assignment_runs_right_inverse_and_cached_and_remove():
    m = lin()
    P.register_parametrization(m, "weight", Sym())
    m.weight = torch.tensor(W * 2)
    close(m.parametrizations.weight.original, [[0.6, -2.4, 1.0], [0.0, 0.2, -0.8], [0.0, 0.0, 2.2]])
    assert m.weight is not m.weight
    with P.cached():
        assert m.weight is m.weight
    P.remove_parametrizations(m, "weight", leave_parametrized=False)
    assert type(m) is nn.Linear and isinstance(m.weight, nn.Parameter)
    close(m.weight[0], [0.6, -2.4, 1.0])
    with pytest.raises(ValueError, match="^Module Linear\\(in_features=3, out_features=3, bias=True\\) does not "
                                         "have a parametrization on weight$"):
        P.remove_parametrizations(m, "weight")


def test_registration_errors():
    m = lin()
    with pytest.raises(ValueError, match="^Module 'Linear\\(in_features=3, out_features=3, bias=True\\)' does not "
                                         "have a parameter, a buffer, or a parametrized element with name 'foo'$"):
        P.register_parametrization(m, "foo", Sym())

    class Bad(nn.Module):
        def forward(self, X):
            return X[:2]

    with pytest.raises(ValueError) as e:
        P.register_parametrization(m, "weight", Bad())
    assert str(e.value) == ("Registering a parametrization may not change the shape of the tensor, unless `unsafe` "
                            "flag is enabled.\nunparametrized shape: torch.Size([3, 3])\n"
                            "parametrized shape: torch.Size([2, 3])")
    assert type(m) is nn.Linear                     # nothing half-registered


def test_weight_norm_parametrization():
    m = lin()
    parametrizations.weight_norm(m)
    assert sorted(m.state_dict()) == ["bias", "parametrizations.weight.original0", "parametrizations.weight.original1"]
    g = m.parametrizations.weight.original0
    assert tuple(g.shape) == (3, 1)
    close(g.reshape(-1), [1.3342, 0.9, 1.5427])
    m2 = lin()
    parametrizations.weight_norm(m2, dim=1)
    close(m2.parametrizations.weight.original0.reshape(-1), [1.044, 1.5033, 1.2728])
    m3 = lin()
    parametrizations.weight_norm(m3, dim=None)
    close(m3.parametrizations.weight.original0.reshape(-1), [2.2293])
    m.parametrizations.weight.original0.data.mul_(2.0)
    y = m(torch.tensor(X))
    y.sum().backward()
    close(y, [[-0.4, -1.4, 6.2], [-2.8, 1.6, 14.6]])
    close(m.parametrizations.weight.original1.grad, [[6.5393, 7.8427, 14.8989], [5.8025, 9.9753, 14.0988],
                                                     [11.2437, 2.1345, 4.3866]])


def test_spectral_norm_parametrization():
    m = lin()
    parametrizations.spectral_norm(m)
    sn = m.parametrizations.weight[0]
    assert sorted(m.state_dict()) == ["bias", "parametrizations.weight.0._u", "parametrizations.weight.0._v",
                                      "parametrizations.weight.original"]
    assert (sn.n_power_iterations, sn.eps, sn.dim) == (1, 1e-12, 0)
    with torch.no_grad():
        sn._u.copy_(torch.tensor([1.0, 0.0, 0.0]))
        sn._v.copy_(torch.tensor([0.0, 1.0, 0.0]))
    close(m.weight, [[0.1856, -0.7425, 0.3094], [0.495, 0.0619, -0.2475], [-0.3713, 0.5569, 0.6807]])
    close(sn._u, [-0.7982, 0.0665, 0.5987])
    close(sn._v, [-0.3375, 0.9302, 0.1441])
    m.eval()
    close(m.weight[0], [0.1856, -0.7425, 0.3094])               # no iteration in eval
    m2 = lin(W[:2])
    parametrizations.spectral_norm(m2, n_power_iterations=3, dim=1)
    assert m2.parametrizations.weight[0].dim == 1 and tuple(m2.parametrizations.weight[0]._u.shape) == (3,)
    with pytest.raises(IndexError,
                       match=r"^Dimension out of range \(expected to be in range of \[-2, 1\] but got 2\)$"):
        parametrizations.spectral_norm(lin(), dim=2)
    with pytest.raises(ValueError, match="^Expected n_power_iterations to be positive, but got n_power_iterations=0$"):
        parametrizations.spectral_norm(lin(), n_power_iterations=0)


_Q = [[0.2873, -0.7601, 0.5828], [0.7663, 0.5475, 0.3363], [-0.5747, 0.35, 0.7398]]
_AFTER = {"matrix_exp": [[0.1905, -0.723, 0.664], [0.7887, 0.5155, 0.3351], [-0.5846, 0.4599, 0.6684]],
          "cayley": [[0.1906, -0.7231, 0.6639], [0.7886, 0.5155, 0.3351], [-0.5846, 0.4597, 0.6685]],
          "householder": [[0.0, 0.0, 0.0]] * 3}


@pytest.mark.parametrize("orthogonal_map", ["matrix_exp", "cayley", "householder"])
def test_orthogonal_maps(orthogonal_map):
    m = lin()
    parametrizations.orthogonal(m, orthogonal_map=orthogonal_map)
    assert sorted(m.state_dict()) == ["bias", "parametrizations.weight.0.base", "parametrizations.weight.original"]
    close(m.weight, _Q)
    close(m.parametrizations.weight.original, -np.eye(3))
    with torch.no_grad():
        m.parametrizations.weight.original.copy_(torch.tensor(W * 0.1))
    close(m.weight, _AFTER[orthogonal_map])


def test_orthogonal_householder_without_trivialization_and_errors():
    m = lin()
    parametrizations.orthogonal(m, orthogonal_map="householder", use_trivialization=False)
    close(m.weight, _Q)
    close(m.parametrizations.weight.original, [[-1.0, 0.7854, 0.795], [0.5952, -1.0, 0.2141], [-0.4464, 0.0053, -1.0]])
    m = lin(W[:2])
    parametrizations.orthogonal(m)
    q = m.weight.detach().numpy()
    np.testing.assert_allclose(q @ q.T, np.eye(2), atol=1e-5)
    assert m.parametrizations.weight[0].orthogonal_map.name == "householder"
    with pytest.raises(ValueError, match="^Expected a matrix or batch of matrices. Got a tensor of 1 dimensions.$"):
        parametrizations.orthogonal(m, "bias")
    with pytest.raises(ValueError, match='^orthogonal_map has to be one of "matrix_exp", "cayley", "householder". '
                                         'Got: foo$'):
        parametrizations.orthogonal(lin(), orthogonal_map="foo")
    m = lin()
    parametrizations.orthogonal(m, orthogonal_map="cayley", use_trivialization=False)
    with pytest.raises(NotImplementedError, match="^It is not possible to assign to the matrix exponential or the "
                                                  "Cayley parametrizations when use_trivialization=False.$"):
        m.weight = torch.tensor(W)


W2 = W[:2]


def lin2():
    return lin(W2)


def test_legacy_weight_norm():
    m = lin2()
    with pytest.warns(FutureWarning, match="torch.nn.utils.weight_norm` is deprecated"):
        nn.utils.weight_norm(m)
    assert sorted(m.state_dict()) == ["bias", "weight_g", "weight_v"]
    assert [n for n, _ in m.named_parameters()] == ["bias", "weight_g", "weight_v"]
    close(m.weight_g.reshape(-1), [1.3342, 0.9])
    with torch.no_grad():
        m.weight_g.mul_(3.0)
    y = m(torch.tensor(X))
    y.sum().backward()
    close(y, [[-0.6, -2.1], [-4.2, 2.4]])
    close(m.weight_v.grad, [[9.809, 11.764, 22.3483], [8.7037, 14.963, 21.1481]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(RuntimeError, match="^Cannot register two weight_norm hooks on the same parameter weight$"):
            nn.utils.weight_norm(m)
    nn.utils.remove_weight_norm(m)
    assert sorted(m.state_dict()) == ["bias", "weight"]
    close(m.weight, [[0.9, -3.6, 1.5], [2.4, 0.3, -1.2]])
    with pytest.raises(ValueError, match=r"^weight_norm of 'weight' not found in Linear\(in_features=3, "
                                         r"out_features=2, bias=True\)$"):
        nn.utils.remove_weight_norm(m)


def test_legacy_weight_norm_state_dict_loads_into_parametrization():
    m = lin2()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        nn.utils.weight_norm(m)
    m2 = lin2()
    parametrizations.weight_norm(m2)
    m2.load_state_dict(m.state_dict())
    close(m2.weight, W2)


def test_legacy_spectral_norm():
    m = lin2()
    nn.utils.spectral_norm(m, n_power_iterations=2)
    assert sorted(m.state_dict()) == ["bias", "weight_orig", "weight_u", "weight_v"]
    assert [n for n, _ in m.named_parameters()] == ["bias", "weight_orig"]
    with torch.no_grad():
        m.weight_u.copy_(torch.tensor([1.0, 0.0]))
        m.weight_v.copy_(torch.tensor([0.0, 1.0, 0.0]))
    x = torch.tensor(X)
    close(m(x), [[-0.1497, -0.5238], [-1.0476, 0.5986]])
    close(m.weight_u, [0.9979, -0.0651])
    close(m.weight_v, [0.1974, -0.9006, 0.3873])
    m.eval()
    close(m(x), [[-0.1497, -0.5238], [-1.0476, 0.5986]])
    with pytest.raises(RuntimeError, match="^Cannot register two spectral_norm hooks on the same parameter weight$"):
        nn.utils.spectral_norm(m)
    nn.utils.remove_spectral_norm(m)
    assert sorted(m.state_dict()) == ["bias", "weight"]
    close(m.weight, [[0.2245, -0.8979, 0.3741], [0.5986, 0.0748, -0.2993]])
    c = nn.ConvTranspose1d(2, 3, 2)
    nn.utils.spectral_norm(c)
    assert tuple(c.weight_u.shape) == (3,) and tuple(c.weight_v.shape) == (4,)


_C = np.array([[1.0, -2.0, 0.5], [0.3, 0.7, -1.1]])
_GRADS = {"matrix_exp": [[0.0, 0.0, 0.0], [-4.64627, 0.0, 0.0], [-3.53052, 4.59366, 0.0]],
          "cayley": [[0.0, 0.0, 0.0], [-4.6084, 0.0, 0.0], [-3.47542, 4.48408, 0.0]],
          "householder": [[0.0, 0.0, 0.0], [-0.89237, 0.0, 0.0], [-1.23523, 6.36164, 0.0]]}


def _lin64():
    m = nn.Linear(3, 3).double()
    with torch.no_grad():
        m.weight.copy_(torch.tensor(W.astype(np.float64)))
        m.bias.zero_()
    return m


def _loss(m):
    x = torch.tensor(np.arange(6, dtype=np.float64).reshape(2, 3))
    (m(x) * torch.tensor(_C)).sum().backward()


@pytest.mark.parametrize("orthogonal_map", ["matrix_exp", "cayley", "householder"])
def test_orthogonal_gradients_match_torch(orthogonal_map):
    m = _lin64()
    parametrizations.orthogonal(m, orthogonal_map=orthogonal_map)
    A = W.astype(np.float64) * 0.3
    if orthogonal_map == "householder":
        np.fill_diagonal(A, [-1.0, 1.0, -1.0])                   # the signs the householder map reads
    with torch.no_grad():
        m.parametrizations.weight.original.copy_(torch.tensor(A))
    _loss(m)
    np.testing.assert_allclose(m.parametrizations.weight.original.grad.numpy(), _GRADS[orthogonal_map], atol=1e-5)


def test_spectral_norm_gradients_match_torch():
    u, v = torch.tensor([1.0, 0.0, 0.0], dtype=torch.float64), torch.tensor([0.0, 1.0, 0.0], dtype=torch.float64)
    m = _lin64()
    parametrizations.spectral_norm(m)
    with torch.no_grad():
        m.parametrizations.weight[0]._u.copy_(u)
        m.parametrizations.weight[0]._v.copy_(v)
    _loss(m)
    np.testing.assert_allclose(m.parametrizations.weight.original.grad.numpy(),
                               [[1.08712, -0.10003, 1.93942], [1.25525, 0.6168, -0.29053],
                                [-2.43964, -1.31723, -2.61477]], atol=1e-5)
    m = _lin64()
    nn.utils.spectral_norm(m)
    with torch.no_grad():
        m.weight_u.copy_(u)
        m.weight_v.copy_(v)
    _loss(m)
    np.testing.assert_allclose(m.weight_orig.grad.numpy(), [[1.14499, -0.54557, 3.29949], [1.43741, 0.64977, -0.38667],
                                                            [-2.50244, -1.88478, -3.47514]], atol=1e-5)


def test_transfer_parametrizations_and_params():
    class Double(nn.Module):
        def forward(self, X):
            return X * 2

        def right_inverse(self, X):
            return X / 2

    a = nn.Linear(2, 2)
    with torch.no_grad():
        a.weight.copy_(torch.tensor([[1.0, 2.0], [3.0, 4.0]]))
    P.register_parametrization(a, "weight", Double())
    b = P.transfer_parametrizations_and_params(a, nn.Linear(2, 2))
    assert type(b).__name__ == "ParametrizedLinear" and P.type_before_parametrizations(b) is nn.Linear
    assert b.weight.tolist() == [[1, 2], [3, 4]]
    assert sorted(b.state_dict()) == ["bias", "parametrizations.weight.original"]
    c = P.transfer_parametrizations_and_params(a, nn.Module(), "weight")
    assert type(c).__name__ == "ParametrizedModule" and c.weight.tolist() == [[1, 2], [3, 4]]
    assert sorted(c.state_dict()) == ["parametrizations.weight.original"]
