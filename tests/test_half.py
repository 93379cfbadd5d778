"""float16 and bfloat16 (issue 8, DESIGN §5): conversions, promotion, creation, and the registry in 16 bits.

Kernels keep 16-bit storage, compute in float32 and round to nearest even on store. Conversions are
checked bit for bit against NumPy float16 and ml_dtypes bfloat16 over every 16-bit pattern (both float16
paths: F16C and integer). The registry sweep runs every floating op of ops.yaml in both types against
its NumPy reference computed in float32 and rounded, on small contiguous inputs (one kernel compile per
op and type), plus strided/broadcast layouts for a few ops.
"""
from __future__ import annotations

import math
import random

import ml_dtypes
import numpy as np
import pytest

import reftorch as torch
from reftorch._tensor import Tensor
from registry_samples import OPS, RandomDraw, Sample, make_sample, tensor_args

BF16 = ml_dtypes.bfloat16
HALVES = {"float16": np.float16, "bfloat16": BF16}
# one rounding of the result is half an ulp; a float32 libm difference can move it by one ulp
TOL = {"float16": 2 * 2.0 ** -10, "bfloat16": 2 * 2.0 ** -7}


def _kernels():
    from reftorch.kernels import cpu_half
    return cpu_half


# ----------------------------------------------------------------------------------------- conversions

ALL16 = np.arange(65536, dtype=np.uint16)


def _f32_probe_bits():
    """float32 bit patterns that exercise rounding: every half's image, its neighbours and the halfway
    points around it (ties), plus random patterns (NaN payloads, subnormals, overflow)."""
    ref = ALL16.view(np.float16).astype(np.float32).view(np.uint32).astype(np.int64)
    bref = ALL16.view(BF16).astype(np.float32).view(np.uint32).astype(np.int64)
    rng = np.random.default_rng(8)
    parts = [rng.integers(0, 2 ** 32, 400_000, dtype=np.int64)]
    for base, half_ulp in ((ref, 1 << 12), (bref, 1 << 15)):
        for d in (0, 1, -1, half_ulp, -half_ulp, half_ulp - 1, half_ulp + 1):
            parts.append(base + d)
    edges = [0x477FEFFF, 0x477FF000, 0x477FF001, 0x33000000, 0x33000001, 0x387FE000, 0x387FF000, 0x7F800001,
             0x7FA00000, 0x7FC00001, 0xFF800001, 0x7F7FFFFF, 0x00000001, 0x80000001, 0x7F7F8000]
    parts.append(np.array(edges, np.int64))
    bits = np.concatenate(parts) & 0xFFFFFFFF
    return bits.astype(np.uint32)


PROBE = _f32_probe_bits()


@pytest.mark.parametrize("path", ["f16_int", "f16_hw", "f16", "bf16"])
def test_conversions_bit_exact(path):
    K = _kernels()
    if path == "f16_hw" and not K.HAVE_F16C:
        pytest.skip("this CPU has no F16C: only the integer path exists")
    npdt = BF16 if path == "bf16" else np.float16
    out = np.empty(65536, np.float32)
    getattr(K, f"{path}_load_array")(ALL16, out)
    want = ALL16.view(npdt).astype(np.float32)
    bad = np.nonzero(out.view(np.uint32) != want.view(np.uint32))[0]
    assert bad.size == 0, f"{path}: loading {[hex(b) for b in bad[:8]]} differs from {npdt.__name__}"
    f = PROBE.view(np.float32)
    got = np.empty(f.size, np.uint16)
    getattr(K, f"{path}_store_array")(f, got)
    with np.errstate(all="ignore"):
        want = f.astype(npdt).view(np.uint16)
    bad = np.nonzero(got != want)[0]
    assert bad.size == 0, (f"{path}: storing float32 {[hex(PROBE[b]) for b in bad[:5]]} gives "
                           f"{[hex(got[b]) for b in bad[:5]]}, {npdt.__name__} gives {[hex(want[b]) for b in bad[:5]]}")


def test_f16c_and_integer_paths_agree_in_kernels():
    """The path the kernels use is the one tested above; both give the same bits over every pattern."""
    K = _kernels()
    a, b = np.empty(65536, np.float32), np.empty(65536, np.float32)
    K.f16_int_load_array(ALL16, a)
    K.f16_load_array(ALL16, b)
    assert np.array_equal(a.view(np.uint32), b.view(np.uint32))


def test_row_sums_with_one_nan_keep_its_payload():
    """The float16 contiguous-row reductions load without the signalling-NaN fix-up and rerun a NaN row with the
    exact load: one NaN per row (every NaN pattern, signalling ones included) comes out quieted, payload kept."""
    nans = np.array([s | 0x7C00 | m for s in (0, 0x8000) for m in range(1, 0x400)], np.uint16)
    x = np.random.default_rng(3).uniform(-1, 1, (len(nans), 40)).astype(np.float16)
    x.view(np.uint16)[np.arange(len(nans)), np.arange(len(nans)) % 40] = nans
    got = torch.from_numpy(x).sum(1).numpy().view(np.uint16)
    with np.errstate(all="ignore"):
        want = x.astype(np.float32).sum(1, dtype=np.float32).astype(np.float16).view(np.uint16)
        assert np.array_equal(got, want)
        y = np.full(64, np.inf, np.float16)
        y[7] = -np.inf                  # inf - inf: a NaN result with no NaN read, through the rerun too
        assert np.isnan(float(torch.from_numpy(y).sum()))


@pytest.mark.parametrize("name", ["float16", "bfloat16"])
def test_kernel_arithmetic_bit_exact(name):
    """a * b and a + b of 16-bit tensors: float32 math rounded once, as NumPy (and PyTorch) do it."""
    npdt = HALVES[name]
    rng = np.random.default_rng(1)
    a = rng.integers(0, 65536, 20000, dtype=np.uint16).view(npdt)
    b = rng.integers(0, 65536, 20000, dtype=np.uint16).view(npdt)
    ta, tb = torch.from_numpy(a), torch.from_numpy(b)
    with np.errstate(all="ignore"):
        for got, want in (((ta * tb).numpy(), (a.astype(np.float32) * b.astype(np.float32)).astype(npdt)),
                          ((ta + tb).numpy(), (a.astype(np.float32) + b.astype(np.float32)).astype(npdt))):
            g, w = got.view(np.uint16), want.view(np.uint16)
            nan = np.isnan(want.astype(np.float32))
            assert np.array_equal(np.isnan(got.astype(np.float32)), nan)
            assert np.array_equal(g[~nan], w[~nan])


_NO_F16C_CHECK = """
import ml_dtypes, numpy as np
import reftorch as torch
from reftorch.kernels import cpu_half as K
assert not K.HAVE_F16C and K.f16_to_f32 is K.f16_to_f32_int and K.f32_to_f16 is K.f32_to_f16_int
rng = np.random.default_rng(3)
for npdt, dt in ((np.float16, torch.float16), (ml_dtypes.bfloat16, torch.bfloat16)):
    a = np.arange(65536, dtype=np.uint16).view(npdt)
    b = rng.integers(0, 65536, 65536, dtype=np.uint16).view(npdt)
    ta, tb = torch.from_numpy(a), torch.from_numpy(b)
    a32, b32 = a.astype(np.float32), b.astype(np.float32)
    with np.errstate(all="ignore"):
        cases = [(ta * tb, a32 * b32), (ta + tb, a32 + b32), (torch.relu(ta), np.where(a32 <= 0, np.float32(0), a32)),
                 (ta.reshape(256, 256).t() - tb.reshape(256, 256), (a32.reshape(256, 256).T - b32.reshape(256, 256)).ravel()),
                 (torch.from_numpy(b32).to(dt), b32), (torch.exp(ta.clamp(-10, 10)), np.exp(np.clip(a32, -10, 10)))]
    for i, (got, want) in enumerate(cases):
        g, w = got.numpy().ravel(), want.astype(npdt)
        nan = np.isnan(w.astype(np.float32))
        assert np.array_equal(np.isnan(g.astype(np.float32)), nan), (npdt, i)
        if i < 5:
            assert np.array_equal(g.view(np.uint16)[~nan], w.view(np.uint16)[~nan]), (npdt, i)
        else:
            assert np.allclose(g.astype(np.float32), w.astype(np.float32), rtol=2 ** -7, equal_nan=True), (npdt, i)
    assert np.array_equal(ta.float().numpy().view(np.uint32), a32.view(np.uint32))
    s = torch.sum(torch.from_numpy(np.ones(40960, npdt)))       # a float32 accumulator: exact
    assert s.dtype is dt and s.item() == 40960.0, s.item()
print("ok")
"""


def test_kernels_on_a_cpu_without_f16c():
    """The integer float16 path end to end (loads, stores, kernels, casts, reductions): a process whose Numba
    compiles for a generic CPU, so the kernels take f16_to_f32_int/f32_to_f16_int even on an F16C host."""
    import os
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, NUMBA_CPU_NAME="generic", NUMBA_CPU_FEATURES="", REFTORCH_NO_CACHE="1",
               PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-c", _NO_F16C_CHECK], cwd=root, env=env, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stdout + r.stderr


@pytest.mark.filterwarnings("ignore:overflow encountered")
def test_to_and_from_16_bits_round_to_nearest_even():
    x = np.array([1 + 2 ** -11, 1 + 3 * 2 ** -11, 65519.0, 65520.0, 1e-8, 2 ** -25, 3e-8, -0.0, np.inf, np.nan],
                 np.float32)
    t = torch.from_numpy(x)
    assert np.array_equal(t.half().numpy().view(np.uint16), x.astype(np.float16).view(np.uint16))
    assert np.array_equal(t.bfloat16().numpy().view(np.uint16), x.astype(BF16).view(np.uint16))
    assert np.array_equal(t.half().float().numpy(), x.astype(np.float16).astype(np.float32), equal_nan=True)
    assert t.half().to(torch.bfloat16).dtype is torch.bfloat16
    assert torch.tensor([70000.0]).half().item() == math.inf


@pytest.mark.filterwarnings("ignore:overflow encountered", "ignore:invalid value encountered")
def test_casts_bit_exact():
    """float32 <-> 16 bits casts of contiguous tensors run the conversion kernels (reftorch/_half.cast_into),
    strided ones NumPy's cast: both give NumPy's / ml_dtypes' bits for every probe pattern and every half."""
    f = torch.from_numpy(PROBE.view(np.float32))
    with np.errstate(all="ignore"):
        for dt, npdt in ((torch.float16, np.float16), (torch.bfloat16, BF16)):
            want = PROBE.view(np.float32).astype(npdt).view(np.uint16)
            assert np.array_equal(f.to(dt).numpy().view(np.uint16), want)
            assert np.array_equal(f[::2].to(dt).numpy().view(np.uint16), want[::2])
            h = torch.from_numpy(ALL16.view(npdt))
            back = ALL16.view(npdt).astype(np.float32).view(np.uint32)
            assert np.array_equal(h.float().numpy().view(np.uint32), back)
            assert np.array_equal(h[::3].float().numpy().view(np.uint32), back[::3])
            m = (h * torch.ones(65536)).numpy()        # mixed dtypes: h promoted to float32 first (_cast)
            ok = ~np.isnan(m)
            assert np.array_equal(m.view(np.uint32)[ok], back[ok]) and np.isnan(back[~ok].view(np.float32)).all()


# ----------------------------------------------------------------------------------------- promotion

# torch.promote_types and torch.result_type of PyTorch 2.13 (pairs with a 16-bit float; three tiers)
PAIRS = [('bool', 'float16', 'float16'), ('bool', 'bfloat16', 'bfloat16'), ('uint8', 'float16', 'float16'), ('uint8', 'bfloat16', 'bfloat16'), ('int8', 'float16', 'float16'), ('int8', 'bfloat16', 'bfloat16'), ('int16', 'float16', 'float16'), ('int16', 'bfloat16', 'bfloat16'), ('int32', 'float16', 'float16'), ('int32', 'bfloat16', 'bfloat16'), ('int64', 'float16', 'float16'), ('int64', 'bfloat16', 'bfloat16'), ('float16', 'bool', 'float16'), ('float16', 'uint8', 'float16'), ('float16', 'int8', 'float16'), ('float16', 'int16', 'float16'), ('float16', 'int32', 'float16'), ('float16', 'int64', 'float16'), ('float16', 'float16', 'float16'), ('float16', 'bfloat16', 'float32'), ('float16', 'float32', 'float32'), ('float16', 'float64', 'float64'), ('bfloat16', 'bool', 'bfloat16'), ('bfloat16', 'uint8', 'bfloat16'), ('bfloat16', 'int8', 'bfloat16'), ('bfloat16', 'int16', 'bfloat16'), ('bfloat16', 'int32', 'bfloat16'), ('bfloat16', 'int64', 'bfloat16'), ('bfloat16', 'float16', 'float32'), ('bfloat16', 'bfloat16', 'bfloat16'), ('bfloat16', 'float32', 'float32'), ('bfloat16', 'float64', 'float64'), ('float32', 'float16', 'float32'), ('float32', 'bfloat16', 'float32'), ('float64', 'float16', 'float64'), ('float64', 'bfloat16', 'float64')]
TIERS = [('dim', 'float16', 'dim', 'float16', 'float16'), ('dim', 'float16', 'dim', 'bfloat16', 'float32'), ('dim', 'float16', 'dim', 'int64', 'float16'), ('dim', 'float16', 'dim', 'float32', 'float32'), ('dim', 'float16', 'dim', 'float64', 'float64'), ('dim', 'float16', 'dim', 'uint8', 'float16'), ('dim', 'bfloat16', 'dim', 'float16', 'float32'), ('dim', 'bfloat16', 'dim', 'bfloat16', 'bfloat16'), ('dim', 'bfloat16', 'dim', 'int64', 'bfloat16'), ('dim', 'bfloat16', 'dim', 'float32', 'float32'), ('dim', 'bfloat16', 'dim', 'float64', 'float64'), ('dim', 'bfloat16', 'dim', 'uint8', 'bfloat16'), ('dim', 'int32', 'dim', 'float16', 'float16'), ('dim', 'int32', 'dim', 'bfloat16', 'bfloat16'), ('dim', 'float32', 'dim', 'float16', 'float32'), ('dim', 'float32', 'dim', 'bfloat16', 'float32'), ('dim', 'float64', 'dim', 'float16', 'float64'), ('dim', 'float64', 'dim', 'bfloat16', 'float64'), ('dim', 'bool', 'dim', 'float16', 'float16'), ('dim', 'bool', 'dim', 'bfloat16', 'bfloat16'), ('dim', 'float16', 'zero', 'float16', 'float16'), ('dim', 'float16', 'zero', 'bfloat16', 'float16'), ('dim', 'float16', 'zero', 'int64', 'float16'), ('dim', 'float16', 'zero', 'float32', 'float16'), ('dim', 'float16', 'zero', 'float64', 'float16'), ('dim', 'float16', 'zero', 'uint8', 'float16'), ('dim', 'bfloat16', 'zero', 'float16', 'bfloat16'), ('dim', 'bfloat16', 'zero', 'bfloat16', 'bfloat16'), ('dim', 'bfloat16', 'zero', 'int64', 'bfloat16'), ('dim', 'bfloat16', 'zero', 'float32', 'bfloat16'), ('dim', 'bfloat16', 'zero', 'float64', 'bfloat16'), ('dim', 'bfloat16', 'zero', 'uint8', 'bfloat16'), ('dim', 'int32', 'zero', 'float16', 'float16'), ('dim', 'int32', 'zero', 'bfloat16', 'bfloat16'), ('dim', 'float32', 'zero', 'float16', 'float32'), ('dim', 'float32', 'zero', 'bfloat16', 'float32'), ('dim', 'float64', 'zero', 'float16', 'float64'), ('dim', 'float64', 'zero', 'bfloat16', 'float64'), ('dim', 'bool', 'zero', 'float16', 'float16'), ('dim', 'bool', 'zero', 'bfloat16', 'bfloat16'), ('zero', 'float16', 'dim', 'float16', 'float16'), ('zero', 'float16', 'dim', 'bfloat16', 'bfloat16'), ('zero', 'float16', 'dim', 'int64', 'float16'), ('zero', 'float16', 'dim', 'float32', 'float32'), ('zero', 'float16', 'dim', 'float64', 'float64'), ('zero', 'float16', 'dim', 'uint8', 'float16'), ('zero', 'bfloat16', 'dim', 'float16', 'float16'), ('zero', 'bfloat16', 'dim', 'bfloat16', 'bfloat16'), ('zero', 'bfloat16', 'dim', 'int64', 'bfloat16'), ('zero', 'bfloat16', 'dim', 'float32', 'float32'), ('zero', 'bfloat16', 'dim', 'float64', 'float64'), ('zero', 'bfloat16', 'dim', 'uint8', 'bfloat16'), ('zero', 'int32', 'dim', 'float16', 'float16'), ('zero', 'int32', 'dim', 'bfloat16', 'bfloat16'), ('zero', 'float32', 'dim', 'float16', 'float16'), ('zero', 'float32', 'dim', 'bfloat16', 'bfloat16'), ('zero', 'float64', 'dim', 'float16', 'float16'), ('zero', 'float64', 'dim', 'bfloat16', 'bfloat16'), ('zero', 'bool', 'dim', 'float16', 'float16'), ('zero', 'bool', 'dim', 'bfloat16', 'bfloat16'), ('zero', 'float16', 'zero', 'float16', 'float16'), ('zero', 'float16', 'zero', 'bfloat16', 'float32'), ('zero', 'float16', 'zero', 'int64', 'float16'), ('zero', 'float16', 'zero', 'float32', 'float32'), ('zero', 'float16', 'zero', 'float64', 'float64'), ('zero', 'float16', 'zero', 'uint8', 'float16'), ('zero', 'bfloat16', 'zero', 'float16', 'float32'), ('zero', 'bfloat16', 'zero', 'bfloat16', 'bfloat16'), ('zero', 'bfloat16', 'zero', 'int64', 'bfloat16'), ('zero', 'bfloat16', 'zero', 'float32', 'float32'), ('zero', 'bfloat16', 'zero', 'float64', 'float64'), ('zero', 'bfloat16', 'zero', 'uint8', 'bfloat16'), ('zero', 'int32', 'zero', 'float16', 'float16'), ('zero', 'int32', 'zero', 'bfloat16', 'bfloat16'), ('zero', 'float32', 'zero', 'float16', 'float32'), ('zero', 'float32', 'zero', 'bfloat16', 'float32'), ('zero', 'float64', 'zero', 'float16', 'float64'), ('zero', 'float64', 'zero', 'bfloat16', 'float64'), ('zero', 'bool', 'zero', 'float16', 'float16'), ('zero', 'bool', 'zero', 'bfloat16', 'bfloat16'), ('dim', 'float16', 'scalar', '1', 'float16'), ('dim', 'float16', 'scalar', '1.5', 'float16'), ('dim', 'float16', 'scalar', 'True', 'float16'), ('zero', 'float16', 'scalar', '1', 'float16'), ('zero', 'float16', 'scalar', '1.5', 'float16'), ('zero', 'float16', 'scalar', 'True', 'float16'), ('dim', 'bfloat16', 'scalar', '1', 'bfloat16'), ('dim', 'bfloat16', 'scalar', '1.5', 'bfloat16'), ('dim', 'bfloat16', 'scalar', 'True', 'bfloat16'), ('zero', 'bfloat16', 'scalar', '1', 'bfloat16'), ('zero', 'bfloat16', 'scalar', '1.5', 'bfloat16'), ('zero', 'bfloat16', 'scalar', 'True', 'bfloat16')]


def _dt(name):
    return torch.bool if name == "bool" else getattr(torch, name)


def test_promote_types_matches_pytorch():
    for a, b, want in PAIRS:
        assert torch.promote_types(_dt(a), _dt(b)) is _dt(want), (a, b)


def test_result_type_tiers_match_pytorch():
    def make(kind, name):
        if kind == "scalar":
            return eval(name)
        return torch.ones(2, dtype=_dt(name)) if kind == "dim" else torch.tensor(1, dtype=_dt(name))

    for ka, a, kb, b, want in TIERS:
        x, y = make(ka, a), make(kb, b)
        assert torch.result_type(x, y) is _dt(want), (ka, a, kb, b)
        assert (x + y).dtype is _dt(want), (ka, a, kb, b)


# ----------------------------------------------------------------------------------------- creation

@pytest.mark.parametrize("name", ["float16", "bfloat16"])
def test_creation_numpy_and_repr(name):
    dt, npdt = getattr(torch, name), np.dtype(HALVES[name])
    for t in (torch.zeros(2, 3, dtype=dt), torch.ones(4, dtype=dt), torch.full((2,), 1.5, dtype=dt),
              torch.arange(5, dtype=dt), torch.linspace(0, 1, 5, dtype=dt), torch.eye(3, dtype=dt),
              torch.rand(3, dtype=dt), torch.randn(3, dtype=dt), torch.empty(2, dtype=dt),
              torch.tensor([1.0, 2.5], dtype=dt), torch.zeros_like(torch.ones(2), dtype=dt),
              torch.ones(3).to(dt), torch.ones(3).to(dtype=dt), torch.ones(3).type(dt), torch.tensor([1, 2]).to(dt)):
        assert t.dtype is dt and t.numpy().dtype == npdt and t.element_size() == 2 and t.is_floating_point()
    x = torch.tensor([1.5, -2.0, 0.25], dtype=dt)
    arr = x.numpy()
    arr[0] = 3.0                                  # .numpy() shares memory
    assert x[0].item() == 3.0 and isinstance(x[0].item(), float)
    y = torch.from_numpy(np.array([1, 2, 3], npdt))
    assert y.dtype is dt and y.tolist() == [1.0, 2.0, 3.0]
    assert repr(torch.tensor([1.5, 2.0], dtype=dt)) == f"tensor([1.5000, 2.0000], dtype=torch.{name})"
    assert repr(dt) == f"torch.{name}" and str(torch.tensor(2.5, dtype=dt)) == f"tensor(2.5000, dtype=torch.{name})"
    assert x.new_zeros(2).dtype is dt and torch.ones(2, dtype=dt).sum().dtype is dt
    assert (x.half().dtype, x.bfloat16().dtype, x.float().dtype) == (torch.float16, torch.bfloat16, torch.float32)
    assert torch.half is torch.float16 and x.type() == ("torch.HalfTensor" if name == "float16" else
                                                      "torch.BFloat16Tensor")


def test_pickle_and_save_round_trip(tmp_path):
    import pickle
    for dt in (torch.float16, torch.bfloat16):
        x = torch.randn(3, 2).to(dt)
        y = pickle.loads(pickle.dumps(x))
        assert y.dtype is dt and np.array_equal(y.numpy().view(np.uint16), x.numpy().view(np.uint16))
        torch.save({"x": x}, tmp_path / "h.pt")
        z = torch.load(tmp_path / "h.pt")["x"]
        assert z.dtype is dt and np.array_equal(z.numpy().view(np.uint16), x.numpy().view(np.uint16))


# ----------------------------------------------------------------------------------------- the registry

SWEEP_KINDS = ("unary", "binary", "ternary", "reduction", "argreduction", "scan", "array", "composite")


# ops whose result is not a 16-bit float for 16-bit inputs, by PyTorch's definition
NOT_16_BIT = {"float_power": "computes and returns float64",
              "quantile": "refuses 16-bit inputs (float and double only), as PyTorch",
              "nanquantile": "refuses 16-bit inputs (float and double only), as PyTorch"}


# torch's words refusing a 16-bit input that do not name its dtype
TORCH_16_BIT_REFUSALS = ("This function doesn't handle types other than float and double",)   # matrix_rank


def _sweep_ops():
    for op in OPS:
        if op.kind in SWEEP_KINDS and op.test.fuzz and op.test.ref and "float" in op.test.dtypes and \
                op.name not in NOT_16_BIT:
            yield op


def _to_half(sample, npdt):
    """The sample with its floating tensors rounded to the 16-bit type: tensors in that type, the
    reference's arrays the same values in float32."""
    dt = torch._dtype.from_numpy(npdt)
    kwargs, arrays = dict(sample.kwargs), dict(sample.arrays)

    def conv(t):
        if not isinstance(t, Tensor) or t.dtype is not torch.float32:
            return t, None
        a16 = np.ascontiguousarray(t._array()).astype(npdt)
        return Tensor._from_array(a16), a16.astype(np.float32)

    for a in tensor_args(sample.op):
        v = kwargs.get(a.name)
        if isinstance(v, list):
            pairs = [conv(t) for t in v]
            kwargs[a.name] = [p[0] for p in pairs]
            arrays[a.name] = [p[1] if p[1] is not None else arrays[a.name][i] for i, p in enumerate(pairs)]
        elif isinstance(v, Tensor):
            t, arr = conv(v)
            kwargs[a.name] = t
            if arr is not None:
                arrays[a.name] = arr
    return Sample(sample.op, sample.dtype, kwargs, arrays, sample.named, sample.layouts), dt


def _check_half(op, s, npdt, name, what):
    from reftorch._reference import compare
    try:
        with np.errstate(all="ignore"):
            expected = s.ref()
    except Exception:
        return False                                # NumPy rejects this input: nothing to compare
    out = s.call()
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    exps = list(expected) if isinstance(out, (tuple, list)) else [expected]
    tol = TOL[name] * (4 if op.kind == "composite" else 1)
    for o, e in zip(outs, exps):
        e = np.asarray(e)
        got = o._array()
        if e.dtype.kind == "f":
            assert o.dtype.is_floating_point and o.dtype.itemsize == 2, \
                f"{op.name} in {name} returned {o.dtype} {what}"
            with np.errstate(all="ignore"):
                e = e.astype(npdt).astype(np.float64)     # the reference in float32, rounded once
            got = got.astype(np.float64)
            atol = max(op.test.atol, tol)
        else:
            atol = 0
        problem = compare(got, e, atol, tol)
        assert problem is None, f"{op.name} in {name} {what}: {problem}\n  on {s.describe()}"
    return True


@pytest.mark.parametrize("name", ["float16", "bfloat16"])
@pytest.mark.parametrize("op", list(_sweep_ops()), ids=lambda op: op.name)
def test_registry_op_in_16_bits(op, name):
    npdt = HALVES[name]
    checked = 0
    for seed in range(6):
        try:
            s32 = make_sample(op, RandomDraw(seed * 7919 + len(op.name)), "float32", contiguous=True,
                              max_numel=24)
        except Exception:
            continue
        s, _ = _to_half(s32, npdt)
        try:
            checked += _check_half(op, s, npdt, name, "(contiguous)")
        except (NotImplementedError, RuntimeError) as err:   # torch's refusals of 16-bit inputs (the linalg
            short = 'Half' if name == 'float16' else 'BFloat16'  # functions', the cpu fft's): each names the dtype
            if short not in str(err) and str(err) not in TORCH_16_BIT_REFUSALS:   # (checked against torch 2.13)
                raise
            pytest.skip(f"{op.name} refuses {name} inputs, as PyTorch: {err}")
        if checked >= 2:
            break
    assert checked, f"no sample of {op.name} could be checked in {name}"


@pytest.mark.parametrize("name", ["float16", "bfloat16"])
def test_strided_and_broadcast_kernels(name):
    dt, npdt = getattr(torch, name), HALVES[name]
    rng = np.random.default_rng(3)
    a = rng.uniform(-4, 4, (5, 6)).astype(npdt)
    b = rng.uniform(-4, 4, (6,)).astype(npdt)
    ta, tb = torch.from_numpy(a), torch.from_numpy(b)
    f = lambda x: x.astype(np.float32)
    cases = [(ta.t() * 2 + 1, (f(a).T * 2 + 1)), (ta[:, ::2].exp(), np.exp(f(a)[:, ::2])),
             (ta + tb, f(a) + f(b)), (torch.where(ta > 0, ta, tb), np.where(f(a) > 0, f(a), f(b))),
             (ta.t().sum(0), f(a).T.sum(0)), (ta.sum(0), f(a).sum(0)), (ta.amax(1), f(a).max(1)),
             (ta.t().cumsum(1), np.cumsum(f(a).T, 1)), (ta.t().argmax(0), f(a).T.argmax(0)),
             (ta.t() @ ta, f(a).T @ f(a)), (ta.t().contiguous(), f(a).T), (ta.mean(), f(a).mean())]
    for got, want in cases:
        want = np.asarray(want)
        if want.dtype.kind == "f":
            assert got.dtype is dt
            want = want.astype(npdt).astype(np.float64)
        np.testing.assert_allclose(got.numpy().astype(np.float64), want, rtol=TOL[name], atol=TOL[name])
    x = ta.clone()
    x[1:3] += 1.0                          # in place through a view
    np.testing.assert_array_equal(x.numpy()[1:3].astype(np.float32), (f(a)[1:3] + 1).astype(npdt).astype(np.float32))


# ----------------------------------------------------------------------------------------- autograd

@pytest.mark.parametrize("name", ["float16", "bfloat16"])
def test_autograd_in_16_bits(name):
    dt = getattr(torch, name)
    torch.manual_seed(0)
    w32 = torch.randn(4, 3)
    x32 = torch.randn(5, 4)
    w = w32.to(dt).requires_grad_()
    x = x32.to(dt)
    loss = torch.softmax(x @ w, dim=1).log().mean() + (w * w).sum().sqrt()
    loss.backward()
    assert loss.dtype is dt and w.grad.dtype is dt and w.grad.shape == w.shape
    wr = w.detach().float().requires_grad_()
    ref = torch.softmax(x.float() @ wr, dim=1).log().mean() + (wr * wr).sum().sqrt()
    ref.backward()
    np.testing.assert_allclose(w.grad.float().numpy(), wr.grad.numpy(), rtol=8 * TOL[name], atol=8 * TOL[name])
    # a float32 leaf used through a 16-bit cast gets a float32 gradient
    p = torch.ones(3, requires_grad=True)
    (p.to(dt) * 2).sum().backward()
    assert p.grad.dtype is torch.float32 and p.grad.tolist() == [2.0, 2.0, 2.0]


def test_add_sub_round_alpha_to_the_dtype_as_pytorch():
    """PyTorch converts add/sub's alpha to the tensors' dtype (ops.yaml `scalars_in_dtype`): in 16 bits it is
    rounded (0.1 -> 0.0999755859375 in float16) before the float32 math. Numbers from PyTorch 2.13 (CPU) on
    inputs where an unrounded alpha gives another result."""
    cases = {
        "float16": ([-10.015625, 24.4375, 187.875], [226.25, -182.25, 45.625], [12.6015625, 6.21875, 192.375],
                    [30.375, 19.90625, 110.1875], [275.25, 88.625, -93.75], [-52.21875, -6.6875, 138.375]),
        "bfloat16": ([324.0, -4.25, -32.0], [170.0, 134.0, 30.625], [342.0, 9.1875, -28.875],
                     [62.25, -119.5, 42.75], [-90.0, 190.0, -195.0], [89.5, -177.0, 101.5]),
    }
    for name, (a, b, add, c, d, sub) in cases.items():
        dt = getattr(torch, name)
        assert torch.add(torch.tensor(a, dtype=dt), torch.tensor(b, dtype=dt), alpha=0.1).tolist() == add
        assert torch.sub(torch.tensor(c, dtype=dt), torch.tensor(d, dtype=dt), alpha=0.3).tolist() == sub
        x = torch.tensor(a, dtype=dt)
        x.add_(torch.tensor(b, dtype=dt), alpha=0.1)
        assert x.tolist() == add
    # float32 keeps alpha as it is
    assert torch.add(torch.tensor([1.0]), torch.tensor([1.0]), alpha=0.1).item() == np.float32(1 + np.float32(0.1))
    from codegen.model import RegistryError, load
    entry = "- name: foo\n  kind: binary\n  signature: (Tensor self, Tensor other, *, Scalar alpha=1)\n" \
            "  scalar: self + alpha * other\n  dtypes: [float]\n  differentiable: false\n" \
            "  test: {ref: 'lambda a, b, alpha: a + alpha * b'}\n  scalars_in_dtype: [{names}]\n"
    assert load("x.yaml", entry.replace("{names}", "alpha"))[0].scalars_in_dtype == ("alpha",)
    with pytest.raises(RegistryError, match="op 'foo'.*scalars_in_dtype.*'beta' is not a Scalar"):
        load("x.yaml", entry.replace("{names}", "beta"))
