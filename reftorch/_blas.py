"""How many threads numpy.matmul's BLAS uses for the small products of array-op bodies.

The array ops whose bodies call BLAS (numpy.matmul, numpy.dot...; ops.yaml marks none by hand: the generator
flags them as `blas`) run small products on one thread. OpenBLAS, which NumPy's wheels ship, splits even a
64x128 @ 128x128 product over its threads, and on this 2-core machine that made it slower: 21 µs on one
thread against 31 µs on two (a 64-128-128-10 MLP training step does eight such products). Setting the count
costs ~0.4 µs through ctypes, so it is done only where the inputs are small. A BLAS that is already
single-threaded (OPENBLAS_NUM_THREADS=1, as CI sets) or that is not found is left alone.
"""
import ctypes
import glob
import os

import numpy as np

SMALL = 32768       # total input elements below which a BLAS call runs on one thread (128x128 @ 128x128)

# OpenBLAS's setter, under the names NumPy's wheels (scipy-openblas, 64-bit ints) and others export it
_SETTERS = ("scipy_openblas_set_num_threads64_", "openblas_set_num_threads64_", "openblas_set_num_threads")
_GETTERS = ("scipy_openblas_get_num_threads64_", "openblas_get_num_threads64_", "openblas_get_num_threads")


def _find():
    """(set_num_threads, get_num_threads) of the OpenBLAS NumPy loaded, or None."""
    root = os.path.dirname(os.path.dirname(np.__file__))
    pkg = os.path.dirname(np.__file__)
    paths = glob.glob(os.path.join(root, "numpy.libs", "*openblas*")) + \
        glob.glob(os.path.join(pkg, ".dylibs", "*openblas*"))
    for path in paths:
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        setter = next((getattr(lib, n) for n in _SETTERS if hasattr(lib, n)), None)
        getter = next((getattr(lib, n) for n in _GETTERS if hasattr(lib, n)), None)
        if setter is not None and getter is not None:
            setter.argtypes, setter.restype = [ctypes.c_int], None
            getter.argtypes, getter.restype = [], ctypes.c_int
            return setter, getter
    return None


_found = _find()
set_threads, get_threads = _found if _found is not None else (None, None)


_asked = []         # the count reftorch.set_num_threads last gave, once it has been called
_followers = []     # thread setters of libraries loaded later (MKL's LAPACK, kernels/lapack_calls.py)


def set_max_threads(n):
    """The BLAS's thread count for the products that may use several (reftorch.set_num_threads)."""
    if set_threads is not None:
        set_threads(n)
    _asked[:] = [n]
    for setter in _followers:
        setter(n)


def follow(setter):
    """Call setter(n) with every later set_num_threads count, and now with the last one given: a library
    loaded on first use then honours torch.set_num_threads as NumPy's BLAS does."""
    _followers.append(setter)
    if _asked:
        setter(_asked[0])


def _run(n_elements, fn, *args, **kw):
    """fn(*args, **kw), on one BLAS thread when its inputs hold fewer than SMALL elements and BLAS has more."""
    if set_threads is None or n_elements >= SMALL:
        return fn(*args, **kw)
    n = get_threads()
    if n <= 1:
        return fn(*args, **kw)
    set_threads(1)
    try:
        return fn(*args, **kw)
    finally:
        set_threads(n)


def serial_small(fn, args, kw, arrays):
    """An array-op body fn(**args, **kw) whose inputs are `arrays` (None for an absent optional Tensor)."""
    if set_threads is None:
        return fn(**args, **kw)
    n = 0
    for a in arrays:
        if a is not None:
            n += a.size
    if n >= SMALL:
        return fn(**args, **kw)
    threads = get_threads()         # _run, inlined: the body's arguments are passed on once
    if threads <= 1:
        return fn(**args, **kw)
    set_threads(1)
    try:
        return fn(**args, **kw)
    finally:
        set_threads(threads)


def matmul_into(a, b, out):
    """numpy.matmul(a, b, out=out) (reftorch.compile's step replay)."""
    return _run(a.size + b.size, np.matmul, a, b, out=out)
