"""The generated CPU kernels' fast paths (DESIGN §5), checked over inputs the registry fuzz tests rarely draw.

  * float32 exp/log/tanh/log1p/expm1/erf (codegen/templates/vmath.py: range reduction + polynomial, so that
    the loops vectorise) against float64 NumPy, in units in the last place, over a dense sweep of float32
    bit patterns plus the edge cases: signed zeros, subnormals, the overflow and underflow thresholds,
    infinities and NaN; and the ops built on them (sigmoid, silu, softplus, elu, mish...);
  * the blocked kernel for operands whose stride orders disagree (a.T + b), the result layout that
    follows the first input (PyTorch's TensorIterator), and the reassociated row sums.
"""
from __future__ import annotations

import math
import platform
import re

import numpy as np
import pytest

import reftorch
from reftorch import _cpu

F32 = np.float32
EDGES = np.array([0.0, -0.0, 1e-45, -1e-45, 1.1754942e-38, 1.17549435e-38, -1.17549435e-38, 1e-30, 1e-8, 1e-7,
                  3e-4, 0.1, 0.34657359, 0.5, -0.5, 0.499999, 0.500001, 0.625, -0.625, 0.62499994, 0.6250001,
                  0.6931472, 1.0, -1.0, -0.99999994, -0.9999, 2.0, 9.0, 10.0, 20.0, 44.0, 87.0, 88.0, 88.72283,
                  88.722839, 88.7229, 89.0, 100.0, -87.33654, -87.3366, -100.0, -103.27893, -103.97, -103.9721,
                  -104.0, -105.0, 1e10, 3.4028235e38, -3.4028235e38, np.inf, -np.inf, np.nan], dtype=F32)


def sweep(step=4099):
    """Every step-th float32 bit pattern (both signs, subnormals to NaN), and the edge cases."""
    bits = np.arange(0, 2 ** 32, step, dtype=np.uint64).astype(np.uint32)
    return np.concatenate([bits.view(F32), EDGES])


def ulps(got, want64):
    """|got - want| in units of float32 spacing at the correctly rounded result; 0 where both are the same
    infinity, both NaN, or equal (signed zeros must match too)."""
    got = np.asarray(got, F32)
    with np.errstate(all="ignore"):
        want32 = want64.astype(F32)
        spacing = np.spacing(np.abs(np.where(np.isinf(want32), F32(3.4028235e38), want32))).astype(np.float64)
        err = np.abs(got.astype(np.float64) - want64) / spacing
        # a result past float32's range rounds to inf: inf is then exact
        err = np.where(np.isinf(got) & np.isinf(want32) & (np.sign(got) == np.sign(want32)), 0.0, err)
    same = (got == want32) & (np.signbit(got) == np.signbit(want32))
    err = np.where(same | (np.isnan(got) & np.isnan(want64)), 0.0, err)
    return np.where(np.isnan(err), np.inf, err)


def worst(x, got, want64):
    e = ulps(got, want64)
    i = int(np.argmax(e))
    return e[i], f"x={x[i]!r}: got {got[i]!r}, want {want64[i]!r} ({e[i]:.2f} ulp)"


UNARY = [("exp", np.exp, 1.5), ("log", np.log, 1.5), ("tanh", np.tanh, 2.0), ("log1p", np.log1p, 3.0),
         ("expm1", np.expm1, 2.0), ("erf", np.vectorize(math.erf, otypes=[np.float64]), 2.0)]


@pytest.mark.parametrize("name,ref,max_ulp", UNARY, ids=[u[0] for u in UNARY])
def test_float32_transcendentals_in_ulps(name, ref, max_ulp):
    x = sweep()
    got = getattr(reftorch, name)(reftorch.from_numpy(x)).numpy()
    assert got.dtype == F32
    with np.errstate(all="ignore"):
        want = ref(x.astype(np.float64))
    err, where = worst(x, got, want)
    assert err <= max_ulp, f"{name} float32 is {where}"


@pytest.mark.parametrize("name,ref,max_ulp", UNARY, ids=[u[0] for u in UNARY])
def test_float32_special_values_exact(name, ref, max_ulp):
    x = EDGES
    got = getattr(reftorch, name)(reftorch.from_numpy(x)).numpy()
    with np.errstate(all="ignore"):
        want = ref(x.astype(np.float64)).astype(F32)
    special = ~np.isfinite(want) | (want == 0)
    assert np.array_equal(got[special], want[special], equal_nan=True), (x[special], got[special], want[special])
    assert np.array_equal(np.signbit(got[special & ~np.isnan(want)]), np.signbit(want[special & ~np.isnan(want)]))


@pytest.mark.parametrize("name,ref,dtype", [("exp", np.exp, np.float64), ("log", np.log, np.float64),
                                            ("tanh", np.tanh, np.float64), ("log1p", np.log1p, np.float64)])
def test_other_dtypes_keep_libm(name, ref, dtype):
    x = np.linspace(0.5, 20, 1001).astype(dtype)
    got = getattr(reftorch, name)(reftorch.from_numpy(x)).numpy()
    np.testing.assert_allclose(got, ref(x.astype(np.float64)), rtol=1e-15, atol=0)


OPS = [("sigmoid", lambda x: 1 / (1 + np.exp(-x))),
       ("silu", lambda x: x / (1 + np.exp(-x))),
       ("softplus", lambda x: np.where(x > 20, x, np.log1p(np.exp(x)))),
       ("elu", lambda x: np.where(x > 0, x, np.expm1(x))),
       ("mish", lambda x: x * np.tanh(np.log1p(np.exp(x)))),
       ("logsigmoid", lambda x: np.minimum(x, 0) - np.log1p(np.exp(-np.abs(x))))]


@pytest.mark.parametrize("name,ref", OPS, ids=[o[0] for o in OPS])
def test_float32_ops_built_on_them(name, ref):
    x = np.concatenate([np.linspace(-30, 30, 20001, dtype=F32), EDGES[np.isfinite(EDGES) & (np.abs(EDGES) < 1e3)]])
    fn = getattr(reftorch.nn.functional, name, None) or getattr(reftorch, name)
    got = fn(reftorch.from_numpy(x)).numpy()
    with np.errstate(all="ignore"):
        want = ref(x.astype(np.float64))
    np.testing.assert_allclose(got, want, rtol=4e-7, atol=1e-37)


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="checks x86 vector instructions")
def test_float32_exp_loop_vectorises():
    # a fresh (uncached) loop over the kernels' scalar exp: packed float arithmetic, no libm call per element
    from numba import njit
    from reftorch.kernels import cpu

    @njit(error_model="numpy")
    def loop(out, a):
        for i in range(out.shape[0]):
            out[i] = cpu.exp(a[i])

    x = np.linspace(-5, 5, 64, dtype=F32)
    out = np.empty_like(x)
    loop(out, x)
    np.testing.assert_allclose(out, np.exp(x), rtol=2e-7)
    asm = "\n".join(loop.inspect_asm().values())
    assert re.search(r"\bv?(mul|fmadd\d*)ps\b", asm), "the float32 exp loop did not vectorise"
    assert not re.search(r"call\w*\s+\S*expf", asm)


# ------------------------------------------------------------------------------ layouts and reductions

def _big(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(F32)


def test_blocked_kernel_for_disagreeing_stride_orders():
    S = 300      # 90000 elements: above BLOCK_MIN, and not a multiple of the 64-element tile
    assert S * S >= _cpu.BLOCK_MIN
    an, bn = _big((S, S), 1), _big((S, S), 2)
    a, b = reftorch.from_numpy(an), reftorch.from_numpy(bn)
    np.testing.assert_array_equal((a.T + b).numpy(), an.T + bn)
    np.testing.assert_array_equal((b + a.T).numpy(), bn + an.T)
    np.testing.assert_array_equal((a.T * b.T).numpy(), an.T * bn.T)
    np.testing.assert_allclose(reftorch.exp(a.T).numpy(), np.exp(an.T), rtol=2e-7)
    # three dims, a permuted input against a contiguous one, with an offset view
    xn = _big((70, 5, 301), 3)
    yn = _big((301, 70, 5), 4)
    x = reftorch.from_numpy(xn).permute(2, 0, 1)
    y = reftorch.from_numpy(yn)
    np.testing.assert_array_equal((x - y).numpy(), xn.transpose(2, 0, 1) - yn)
    np.testing.assert_array_equal((y - x).numpy(), yn - xn.transpose(2, 0, 1))
    np.testing.assert_array_equal((x[1:] + y[:-1]).numpy(), xn.transpose(2, 0, 1)[1:] + yn[:-1])
    # in place: the written tensor keeps its own layout
    c = reftorch.from_numpy(an.copy())
    c.add_(b.T)
    np.testing.assert_array_equal(c.numpy(), an + bn.T)


def test_result_layout_follows_first_input():
    # PyTorch: torch.rand(4, 3).T + torch.rand(3, 4) has strides (1, 3); the other way round (4, 1)
    a, b = reftorch.rand(4, 3), reftorch.rand(3, 4)
    assert (a.T + b).stride() == (1, 3)
    assert (b + a.T).stride() == (4, 1)
    assert (a.T + a.T).stride() == (1, 3)
    assert a.T.exp().stride() == (1, 3)
    assert (reftorch.rand(4, 1).expand(4, 3) + 1).stride() == (3, 1)
    x = reftorch.rand(2, 3, 4).permute(2, 0, 1)
    assert (x * 2).stride() == (1, 12, 4)
    assert (reftorch.rand(3) + a).stride() == (3, 1)
    r = a.T + b
    np.testing.assert_array_equal(r.numpy(), a.numpy().T + b.numpy())
    assert not r.is_contiguous() and r.contiguous().is_contiguous()


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64, np.bool_])
def test_row_sums_vectorised(dtype):
    rng = np.random.default_rng(5)
    xn = (rng.standard_normal((37, 1031)) * 100).astype(dtype)
    x = reftorch.from_numpy(xn)
    exact = xn.astype(np.float64 if np.dtype(dtype).kind == "f" else np.int64)
    for dim in (1, 0, None):
        got = x.sum(dim).numpy()
        np.testing.assert_allclose(got, exact.sum(dim), rtol=1e-6 if dtype == np.float32 else 1e-12)
    np.testing.assert_array_equal(x.count_nonzero(1).numpy(), np.count_nonzero(xn, 1))
    if np.dtype(dtype).kind == "f":
        p = reftorch.from_numpy((1 + xn / 1e4).astype(dtype))
        np.testing.assert_allclose(p.prod(1).numpy(), (1 + exact / 1e4).prod(1), rtol=1e-5)


def test_float32_full_sum_accumulates_in_float64():
    xn = np.full(3_000_001, 0.1, F32)
    got = reftorch.from_numpy(xn).sum().item()
    assert got == pytest.approx(float(xn.astype(np.float64).sum()), rel=1e-7)
