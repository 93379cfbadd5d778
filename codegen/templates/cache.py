"""Where Numba may cache compiled kernels.

`cache=True` raises "no locator available" at import when no cache directory is writable, so we
probe once: NUMBA_CACHE_DIR if set, else a per-user directory, else the package directory; when
none is writable, kernels compile uncached (slower first calls, never an import error).
"""
import logging
import os
import tempfile
import threading
import types

import numba


def _writable(path):
    try:
        os.makedirs(path, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path):
            pass
        return True
    except OSError:
        return False


def _choose():
    if os.environ.get("REFTORCH_NO_CACHE"):
        return None
    explicit = os.environ.get("NUMBA_CACHE_DIR")
    if explicit:
        return explicit if _writable(explicit) else None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    for candidate in (os.path.join(base, "reftorch", "numba"), os.path.join(os.path.dirname(__file__), "__pycache__")):
        if _writable(candidate):
            return candidate
    return None


CACHE_DIR = _choose()
if CACHE_DIR is not None:
    numba.config.CACHE_DIR = CACHE_DIR
CACHE = CACHE_DIR is not None


# A damaged cache repairs itself. A crash or a full disk while Numba writes a cache entry, or a copy cut short,
# leaves index (.nbi) or data (.nbc) files that are empty, zero-filled or truncated; Numba unpickles them on
# every load and raises (UnpicklingError, EOFError, ...) from the op that asked for the kernel, in every process,
# until someone deletes the directory. Here such a file counts as absent: it is removed, the kernel compiles,
# and Numba's save writes a fresh entry in its place. Each repair is logged (a warning on the "reftorch.kernels"
# logger) and counted in cache_stats().

_log = logging.getLogger("reftorch.kernels")
_STATS_LOCK = threading.Lock()
_REPAIRED = []      # (path, error) of each damaged cache file found in this process


def cache_stats():
    """This process's kernel cache: its directory (None: kernels compile uncached), and the damaged cache
    files it found, removed and recompiled ("repaired", their count, and "repaired_files", their paths)."""
    with _STATS_LOCK:
        files = [path for path, _ in _REPAIRED]
    return {"dir": CACHE_DIR, "repaired": len(files), "repaired_files": files}


def _repaired(path, err):
    with _STATS_LOCK:
        _REPAIRED.append((path, f"{type(err).__name__}: {err}"))
    _log.warning("reftorch: kernel cache file %s was damaged (%s: %s); recompiling it", path, type(err).__name__, err)
    try:
        os.remove(path)     # so that the save after the compile writes it afresh (and nothing counts it twice)
    except OSError:
        pass


def _self_repairing_cache():
    try:
        from numba.core import caching
    except ImportError:
        return
    files = caching.IndexDataCacheFile
    load_index, load_data = files._load_index, files._load_data
    if getattr(load_index, "reftorch", False):
        return

    def _load_index(self):
        try:
            return load_index(self)
        except Exception as err:    # noqa: BLE001 -- whatever a damaged pickle raises: the index is rebuilt
            _repaired(self._index_path, err)
            return {}

    def _load_data(self, name):
        try:
            return load_data(self, name)
        except FileNotFoundError:
            raise                   # Numba's own case: the index names a file removed meanwhile
        except Exception as err:    # noqa: BLE001 -- as above; None makes Numba compile and save the entry
            _repaired(self._data_path(name), err)
            return None

    rebuild_entry = caching.Cache._load_overload

    def _load_overload(self, sig, target_context):
        try:
            return rebuild_entry(self, sig, target_context)
        except Exception as err:    # noqa: BLE001 -- an entry that unpickles but does not rebuild: its index goes,
            _repaired(self._cache_file._index_path, err)    # and the save after the compile writes both afresh
            return None

    _load_index.reftorch = _load_data.reftorch = _load_overload.reftorch = True
    files._load_index, files._load_data = _load_index, _load_data
    caching.Cache._load_overload = _load_overload


_self_repairing_cache()


# Vector width. On CPUs with AVX-512 LLVM's default tuning prefers 256-bit vectors (older Skylake parts
# lower their clock for 512-bit instructions). On the project's machine (Emerald Rapids) 512-bit vectors
# make the float32 exp, tanh, sigmoid and log kernels 1.3-1.6x faster (benches/compare.py measures them
# against NumPy, which uses 512 bits there too). Numba keys its cache on the CPU features, so the two
# widths never share compiled code. REFTORCH_VECTOR_WIDTH=256 keeps LLVM's choice; features or a CPU name
# set through Numba's own NUMBA_CPU_FEATURES / NUMBA_CPU_NAME are left alone.

def _prefer_512_bit_vectors():
    if os.environ.get("REFTORCH_VECTOR_WIDTH", "512") != "512" or numba.config.CPU_FEATURES is not None \
            or numba.config.CPU_NAME is not None:
        return
    try:
        from numba.core.codegen import get_host_cpu_features
        features = get_host_cpu_features()
    except Exception:   # noqa: BLE001 -- no native target information: LLVM's defaults stand
        return
    if "+avx512f" in features.split(","):
        numba.config.CPU_FEATURES = features + ",-prefer-256-bit"


_prefer_512_bit_vectors()


# Loading a cached kernel. Numba refreshes its CPU target context before every cache load; the first
# refresh imports and installs all of Numba's typing and lowering registries (~0.2 s), which only
# compiling needs, and Numba's compiler refreshes both contexts itself before it compiles. So a load
# here initialises only Numba's runtime (NRT: loaded kernels link against its symbols), and the
# registries load at the first compile. Then Numba's array-math registry checks for BLAS by importing
# scipy.linalg (~0.25 s), though no kernel calls BLAS (matmul goes through NumPy): while that registry
# imports, the check only asks whether SciPy is installed (Numba's own BLAS users, np.dot in user
# code, still import it when they compile). REFTORCH_NUMBA_REFRESH=1 keeps Numba's own cache loads
# (and its per-process build of the runtime, below).

def _load_without_refresh():
    try:
        from numba.core import caching
        from numba.core.cpu import CPUContext
        from numba.core.runtime import rtsys
    except ImportError:         # another Numba layout: its own loads
        return
    load = caching.Cache.load_overload
    if getattr(load, "reftorch", False) or not hasattr(caching.Cache, "_guard_against_spurious_io_errors"):
        return

    def load_overload(self, sig, target_context):
        if type(target_context) is not CPUContext:
            return load(self, sig, target_context)
        rtsys.initialize(target_context)
        with self._guard_against_spurious_io_errors():
            return self._load_overload(sig, target_context)
        # None when the `with` swallowed an I/O error: Numba then compiles

    load_overload.reftorch = True
    caching.Cache.load_overload = load_overload


def _quiet_blas_check():
    """Import Numba's array-math registry with a BLAS check that does not import scipy.linalg."""
    import sys
    if "numba.np.arraymath" in sys.modules or "scipy.linalg" in sys.modules:
        return
    try:
        import importlib.util
        from numba.np import linalg
    except ImportError:
        return
    real = linalg.ensure_blas

    def scipy_installed():
        if importlib.util.find_spec("scipy") is None:
            raise ImportError("scipy 0.16+ is required for linear algebra")

    linalg.ensure_blas = scipy_installed
    try:
        from numba.np import arraymath
        arraymath.ensure_blas = real
    except Exception:   # noqa: BLE001 -- whatever this Numba does, its own import path will run later
        pass
    finally:
        linalg.ensure_blas = real


def _first_refresh_quiet():
    from numba.core.cpu import CPUContext
    refresh = CPUContext.refresh
    if getattr(refresh, "reftorch", False):
        return

    def quiet_refresh(self):
        _quiet_blas_check()
        refresh(self)

    quiet_refresh.reftorch = True
    CPUContext.refresh = quiet_refresh


def _cached_runtime():
    """Numba compiles its runtime's LLVM functions (NRT atomics, incref/decref) in every process before the
    first kernel runs (~40 ms); their object code is kept in CACHE_DIR, keyed like Numba's own cache
    (Numba, llvmlite and Python versions, target triple, CPU name and features), and loaded (~5 ms)."""
    try:
        import hashlib
        import pickle
        import sys
        import llvmlite
        from numba.core.runtime import nrtdynmod
    except ImportError:
        return
    build = nrtdynmod.compile_nrt_functions
    if getattr(build, "reftorch", False) or not hasattr(nrtdynmod, "create_nrt_module"):
        return

    def compile_nrt_functions(ctx):
        codegen = ctx.codegen()
        key = repr((numba.__version__, llvmlite.__version__, sys.version_info[:2], codegen.magic_tuple()))
        path = os.path.join(CACHE_DIR, "nrt-" + hashlib.sha1(key.encode()).hexdigest() + ".pickle")
        try:
            with open(path, "rb") as f:
                return codegen.unserialize_library(pickle.load(f))
        except FileNotFoundError:
            pass
        except Exception as err:   # noqa: BLE001 -- damaged, unreadable or from elsewhere: compile it
            _repaired(path, err)
        try:
            ir_mod, library = nrtdynmod.create_nrt_module(ctx)
            library.enable_object_caching()
            library.add_ir_module(ir_mod)
            library.finalize()
            state = library.serialize_using_object_code()
        except Exception:   # noqa: BLE001 -- Numba's own way
            return build(ctx)
        try:
            with tempfile.NamedTemporaryFile("wb", dir=CACHE_DIR, delete=False) as f:
                pickle.dump(state, f)
            os.replace(f.name, path)
        except Exception:   # noqa: BLE001 -- not cached this time
            pass
        return library

    compile_nrt_functions.reftorch = True
    nrtdynmod.compile_nrt_functions = compile_nrt_functions


# Two more costs of a process's first kernel call that a cached load does not need (~25 ms together):
# - Numba types an ndarray argument by first asking isinstance(val, np.ma.MaskedArray), and NumPy imports
#   numpy.ma on that first touch (~20 ms). No MaskedArray exists before numpy.ma is imported, so the
#   check below asks only once it is: the same answer, without the import.
# - Numba's dispatchers run the `numba_extensions` entry points (a scan of every installed distribution's
#   metadata, ~6 ms) before their first call works out argument types, so that extensions can register
#   types. Kernel arguments are arrays and numbers, never extension types: a kernel's dispatcher runs the
#   entry points when it compiles (below), not when it loads from the cache.
# The same hook on compiling binds a kernel's helpers (see _jit below): a cached load needs none of them.

def _typeof_ndarray_without_ma():
    try:
        import sys
        import numpy as np
        from numba.core import errors, types as nbtypes
        from numba.core.typing import typeof as nbtypeof
        from numba.np import numpy_support
    except ImportError:
        return
    own = nbtypeof.typeof_impl.dispatch(np.ndarray)
    if getattr(own, "reftorch", False) or own is not getattr(nbtypeof, "_typeof_ndarray", None):
        return      # already replaced, or not the implementation this copy was written from

    def _typeof_ndarray(val, c):
        ma = sys.modules.get("numpy.ma")
        if ma is not None and isinstance(val, ma.MaskedArray):
            raise errors.NumbaTypeError("Unsupported array type: numpy.ma.MaskedArray.")
        try:
            dtype = numpy_support.from_dtype(val.dtype)
        except errors.NumbaNotImplementedError:
            raise errors.NumbaValueError(f"Unsupported array dtype: {val.dtype}")
        layout = numpy_support.map_layout(val)
        readonly = not val.flags.writeable
        return nbtypes.Array(dtype, val.ndim, layout, readonly=readonly)

    _typeof_ndarray.reftorch = True
    nbtypeof.typeof_impl.register(np.ndarray)(_typeof_ndarray)


def _hook_compiles():
    """Before Numba compiles any function: its entry points, and the helpers of a kernel that has none bound
    yet. False where this Numba has no such place (kernels then bind their helpers when jitted)."""
    try:
        from numba.core import dispatcher, entrypoints
        compiler = dispatcher._FunctionCompiler
        compile = compiler.compile
    except (ImportError, AttributeError):
        return False
    if getattr(compile, "reftorch", False):
        return True

    def compile_after_entry_points(self, args, return_type):
        entrypoints.init_all()
        if getattr(self, "py_func", None) in _UNBOUND:
            _bind_helpers(self.py_func)
        return compile(self, args, return_type)

    compile_after_entry_points.reftorch = True
    compiler.compile = compile_after_entry_points
    return True


def _no_entry_points():
    pass


_UNBOUND = set()    # kernels (recorded functions) jitted without their helpers: bound before they compile
_LATE_HELPERS = _hook_compiles()
_SKIP_ENTRY_POINTS = False
if not os.environ.get("REFTORCH_NUMBA_REFRESH"):
    _load_without_refresh()
    if CACHE:
        _cached_runtime()
    _typeof_ndarray_without_ma()
    _SKIP_ENTRY_POINTS = _LATE_HELPERS
_first_refresh_quiet()


# Kernels compiled on first use. cpu.py and cpu_half.py define ~900 and ~1400 Numba functions; building a
# dispatcher for each at import took ~0.1 s (0.5 s before .pyc files exist), yet a program calls a few
# dozen. Below their `from ._cache import njit` line, `@njit(...)` records the options and returns the
# plain function; the module's last line moves the recorded functions out of its namespace, and its
# __getattr__ (PEP 562: asked only for names the module lacks) binds numba.njit(**options)(function) in
# their place on the first lookup. Numba reads a kernel's globals when it compiles it, so every recorded
# helper the kernel reaches must be a dispatcher by then: they are bound just before the kernel first
# compiles (a kernel loaded from the cache needs none of them). Later lookups are plain module attributes. Numba's disk cache keys on the function's file, qualified name, first line and
# bytecode, none of which change: a kernel jitted late loads the cache entry of one jitted at import.

_OPTIONS = {}       # recorded function -> its numba.njit options
_PENDING = {}       # module name -> {name: recorded function}, the functions moved out of the module
_JITTED = {}        # recorded function -> its dispatcher, published once its helpers are bound
_LOCK = threading.RLock()


def njit(*args, **options):
    """numba.njit's signature (`@njit` or `@njit(**options)`): records the function, returns it as it is."""
    if len(args) == 1 and callable(args[0]) and not options:
        _OPTIONS[args[0]] = {}
        return args[0]
    if args:
        raise TypeError("kernel modules give numba.njit options by keyword")

    def record(fn):
        _OPTIONS[fn] = options
        return fn
    return record


def jit_on_lookup(namespace):
    """Move a kernel module's recorded functions out of its namespace; returns the module's __getattr__
    and __dir__ (which lists them as before)."""
    module = namespace["__name__"]
    pending = _PENDING.setdefault(module, {})
    for name, value in list(namespace.items()):
        if _recorded(value) and value.__globals__ is namespace:
            pending[name] = value
            del namespace[name]

    def __getattr__(name):
        fn = pending.get(name)
        if fn is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        return jitted(fn)

    def __dir__():
        return sorted(set(namespace) | set(pending))
    return __getattr__, __dir__


def jitted(fn):
    """The Numba dispatcher of a recorded function, made once (thread-safe)."""
    d = _JITTED.get(fn)
    if d is None:
        with _LOCK:
            d = _JITTED.get(fn)
            if d is None:
                d = _jit(fn)
    return d


def _names(code):
    """The global names a function's code (and code nested in it) may read."""
    names = set(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            names |= _names(c)
    return names


def _recorded(value):
    return type(value) is types.FunctionType and value in _OPTIONS


def _lookup(namespace, name):
    value = namespace.get(name)
    return _PENDING.get(namespace.get("__name__"), {}).get(name) if value is None else value


def _dispatcher(fn):
    d = numba.njit(**_OPTIONS[fn])(fn)
    if _SKIP_ENTRY_POINTS:
        d._compilation_chain_init_hook = _no_entry_points
    return d


def _helpers(fn):
    g = fn.__globals__
    return [v for v in (_lookup(g, n) for n in _names(fn.__code__)) if _recorded(v)]


def _jit(root):
    if not _LATE_HELPERS:
        return _bind(root, {})
    d = _dispatcher(root)
    if _helpers(root):
        _UNBOUND.add(root)           # before it is published: its first compile binds them
    root.__globals__[root.__name__] = d
    _JITTED[root] = d
    return d


def _bind_helpers(fn):
    with _LOCK:
        if fn in _UNBOUND:
            _bind(fn, {fn: _JITTED[fn]})
            _UNBOUND.discard(fn)


def _bind(root, made):
    """Dispatchers for root and each recorded function it reaches, bound in their modules (those jitted
    without their helpers get theirs: an inlined helper's globals are read as its caller compiles)."""
    todo = [root]
    seen = set()
    while todo:
        fn = todo.pop()
        if fn in seen:
            continue
        seen.add(fn)
        if fn not in made:
            if fn in _JITTED and fn not in _UNBOUND:
                continue
            made[fn] = _JITTED.get(fn) or _dispatcher(fn)
        todo.extend(_helpers(fn))
    for fn in reversed(made):        # bind the names in the module, callees before their callers
        g = fn.__globals__
        for name in _names(fn.__code__) | {fn.__name__}:
            v = _lookup(g, name)
            if _recorded(v):
                g[name] = made.get(v) or _JITTED[v]
    _JITTED.update(made)             # published last: another thread never gets a half-bound kernel
    _UNBOUND.difference_update(made)
    return _JITTED[root]
