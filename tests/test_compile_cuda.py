"""reftorch.compile's CUDA emission: the fused regions of a traced function as numba.cuda kernels.

CUDA tensors are not needed: the regions are traced on CPU, their CUDA source (codegen.cuda_source)
is run on NumPy arrays in numba's simulator (forward, broadcast/strided forward, fused backward) and
compared with the eager values of the trace (no CPU fused kernel needs compiling), and compiled to PTX with numba.cuda.compile_ptx, which
catches the typing errors the simulator lets through. Each runs in a process of its own:
NUMBA_ENABLE_CUDASIM=1 replaces numba.cuda process-wide.
"""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

COMMON = r'''
import math, sys
import numpy as np
import reftorch
from reftorch.compile import codegen, ir

def regions(fn, *args):
    cf = reftorch.compile(fn, fullgraph=True)
    cf(*args)
    out = []
    for e in cf._cache.values():
        for s in e.steps:
            if isinstance(s, ir.Region):
                s.graph_values = e.graph.values
                out.append(s)
    return out

def gelu(x, b):
    return 0.5 * x * (1 + reftorch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3))) * b

def mixed(x, y):
    return ((x * 2 - y).sigmoid() + (y / 3).exp()).clamp(-1, 2) * x, (x > y)

rng = np.random.default_rng(0)
cases = []
for dt in ("float32", "float64"):
    x = reftorch.tensor(rng.standard_normal((7, 9)).astype(dt), requires_grad=True)
    b = reftorch.tensor(rng.standard_normal(9).astype(dt), requires_grad=True)
    cases.append((regions(gelu, x, b), (x, b)))
x = reftorch.tensor(rng.standard_normal((5, 6)).astype("float32"), requires_grad=True)
y = reftorch.tensor(rng.standard_normal((5, 6)).astype("float32"))
cases.append((regions(mixed, x, y), (x, y)))
'''

SIM = COMMON + r'''
from numba import cuda
sys.setswitchinterval(1e-4)

checked = 0
for regs, args in cases:
    for r in regs:
        gpu = codegen.load(codegen.cuda_source(r))
        # the region's inputs as tensors, and the eager values the trace computed (the reference: no CPU
        # fused kernel is compiled here)
        ins = [args[[id(a) for a in args].index(id(r.graph_values[ref[1]]))] if ref[0] == "v" else ref[1]
               for ref, _ in r.inputs]
        shape = r.shape
        n = int(np.prod(shape))
        want = [r.graph_values[v].detach().numpy().ravel() for v in r.outputs]
        full = [np.array(np.broadcast_to(t.detach().numpy(), shape)).ravel() for t in ins]
        got = [np.empty(n, dt.np) for dt in r.out_dtypes]
        gpu.fused_cuda[2, 32](*got, *full)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=2e-5, atol=1e-6)
        # broadcast operands in place (stride 0) through the strided kernel
        sargs = []
        for t in ins:
            a = np.array(t.detach().numpy())      # a writable copy: the simulator copies every argument back
            st = np.broadcast_to(a, shape).strides
            sargs += [a.ravel(), 0, np.array([s // a.itemsize for s in st], np.int64)]
        got = [np.empty(n, dt.np) for dt in r.out_dtypes]
        gpu.fused_cuda_strided[2, 32](np.array(shape, np.int64), *got, *sargs)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=2e-5, atol=1e-6)
        if r.grad_inputs:
            outs = [r.graph_values[v] for v in r.grad_outputs]
            gos = [reftorch.tensor(rng.uniform(-1, 1, tuple(shape)).astype(o.dtype.np)) for o in outs]
            wrt = [ins[j] for j in r.grad_inputs]
            want_b = reftorch.autograd.grad(outs, wrt, gos, retain_graph=True)
            got_b = [np.empty(n, ins[j].dtype.np) for j in r.grad_inputs]
            gpu.fused_backward_cuda[2, 32](*got_b, *full, *[np.array(g.numpy()).ravel() for g in gos])
            for g, w, t in zip(got_b, want_b, wrt):
                g = g.reshape(shape)
                lead = len(shape) - t.ndim
                g = g.sum(axis=tuple(range(lead))) if lead else g
                g = g.sum(axis=tuple(i for i, k in enumerate(t.shape) if k == 1 and g.shape[i] != 1), keepdims=True)
                np.testing.assert_allclose(g, w.numpy(), rtol=2e-5, atol=1e-6)
        checked += 1
assert checked >= 3, checked
print("SIM OK", checked)
'''

PTX = COMMON + r'''
from types import SimpleNamespace
from numba import cuda, typeof
from numba.core import types
import numba.cuda.dispatcher as dispatcher
if not cuda.is_available():
    dispatcher.get_current_device = lambda: SimpleNamespace(compute_capability=(7, 5), id=0)
def probe(out):
    out[0] = 1.0
try:
    cuda.compile_ptx(probe, (types.float32[::1],), cc=(7, 5))
except Exception as err:
    print("SKIP", type(err).__name__, err)
    sys.exit(0)
arr = lambda dt, layout="C": types.Array(typeof(np.dtype(dt).type(0)), 1, layout)
done = 0
w = reftorch.tensor(rng.standard_normal(9), requires_grad=True)
xs = reftorch.tensor(rng.standard_normal((4, 9)), requires_grad=True)
cases.append((regions(lambda x: ((x * w).sin() ** 2).sum(), xs), (xs,)))     # a fused trailing sum
for regs, _ in cases[:1] + cases[2:]:   # float32 GELU (+ backward), the mixed graph, the sum: ~2 s a compile
    for r in regs:
        gpu = codegen.load(codegen.cuda_source(r))
        ins = [arr(dt.np) for _, dt in r.inputs]
        outs = [arr(dt.np) for dt in r.out_dtypes] + ([arr(r.reduce.vdtype.np)] if r.reduce else [])
        cuda.compile_ptx(gpu.fused_cuda.py_func, tuple(outs + ins), cc=(7, 5))
        # the strided kernels as reftorch.compile launches them on cuda tensors: shape and strides are tuples
        geo = types.UniTuple(types.int64, len(r.shape))
        sargs = []
        for a in ins:
            sargs += [a, types.int64, geo]
        cuda.compile_ptx(gpu.fused_cuda_strided.py_func, tuple([geo] + outs + sargs), cc=(7, 5))
        if r.grad_inputs:
            out_dt = dict(zip(r.outputs, r.out_dtypes))
            gos = [arr(out_dt[v].np) for v in r.grad_outputs]
            gis = [arr(r.inputs[j][1].np) for j in r.grad_inputs]
            gr = [typeof(np.dtype(r.reduce.vdtype.np).type(0))] if r.reduce is not None and r.reduce.grad else []
            cuda.compile_ptx(gpu.fused_backward_cuda.py_func, tuple(gis + ins + gos + gr), cc=(7, 5))
            for g in gos:
                sargs += [g, types.int64, geo]
            cuda.compile_ptx(gpu.fused_backward_cuda_strided.py_func, tuple([geo] + gis + sargs + gr), cc=(7, 5))
        done += 1
assert done >= 3, done
print("PTX OK", done)
'''


def _run(code, sim):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (ROOT, os.environ.get("PYTHONPATH")) if p))
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    if sim:
        env["NUMBA_ENABLE_CUDASIM"] = "1"
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-6000:]
    return out


def test_fused_regions_run_in_the_cuda_simulator():
    out = _run(SIM, sim=True)
    assert "SIM OK" in out, out[-3000:]


@pytest.mark.skipif(bool(os.environ.get("NUMBA_ENABLE_CUDASIM")), reason="the simulator replaces compile_ptx")
def test_fused_regions_compile_to_ptx():
    pytest.importorskip("numba_cuda", reason="needs numba-cuda[cu13]")
    out = _run(PTX, sim=False)
    if "SKIP" in out:
        pytest.skip(out.strip().splitlines()[-1])
    assert "PTX OK" in out, out[-3000:]
