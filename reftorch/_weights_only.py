"""The weights-only unpickler: torch.load's default, which rebuilds tensors and plain data and runs nothing else.

It reads the opcodes torch's `_weights_only_unpickler` reads (protocol 2, as torch.save writes) and
allows the same globals: torch's rebuild functions, dtypes, storage types, Size, device, Parameter,
OrderedDict, Counter, set, complex, bytearray and `_codecs.encode` (bytes), mapped to reftorch's own
implementations (reftorch/_pickle_format.py), plus what `add_safe_globals` / `safe_globals` allow.
Any other global, a call of anything not allowed, a BUILD or NEWOBJ of another type raises
pickle.UnpicklingError with torch's wording, before anything of it runs. The loop is iterative (no
recursion on nested data) and every read is bounded by the bytes it is given.
"""
from __future__ import annotations

import _compat_pickle
import codecs
import collections
import pickle
import struct
import warnings

from reftorch import _pickle_format as PF
from reftorch._checkpoint import MalformedData
from reftorch._tensor import Tensor
from reftorch.nn.parameter import Parameter
import reftorch as torch

_BLOCKED_MODULES = ("sys", "os", "posix", "nt")
_marked_safe_globals = set()


# ============================================================================ the allowlist

def add_safe_globals(safe_globals):
    global _marked_safe_globals
    _marked_safe_globals = _marked_safe_globals.union(set(safe_globals))


def get_safe_globals():
    return list(_marked_safe_globals)


def clear_safe_globals():
    global _marked_safe_globals
    _marked_safe_globals = set()


def remove_safe_globals(safe_globals):
    global _marked_safe_globals
    _marked_safe_globals = _marked_safe_globals - set(safe_globals)


class safe_globals:
    """Context manager: the given globals are allowed inside the `with` block only."""

    def __init__(self, safe_globals):
        self.safe_globals = safe_globals

    def __enter__(self):
        add_safe_globals(self.safe_globals)

    def __exit__(self, type, value, tb):
        remove_safe_globals(self.safe_globals)


def _user_globals():
    rc = {}
    for f in _marked_safe_globals:
        if isinstance(f, tuple):
            if len(f) != 2:
                raise ValueError(f"Expected tuple of length 2 (global, str of callable full path), but got tuple "
                                 f"of length: {len(f)}")
            if type(f[1]) is not str:
                raise TypeError(f"Expected second item in tuple to be str of callable full path, but got: "
                                f"{type(f[1])}")
            rc[f[1]] = f[0]
        else:
            rc[f"{f.__module__}.{f.__qualname__}"] = f
    return rc


def _safe_bytearray(*args):
    if args and isinstance(args[0], int):       # bytearray(n) would allocate n bytes the file never held
        raise MalformedData("bytearray(size) in a checkpoint: only bytearrays of given contents are plain data")
    return bytearray(*args)


_BUILTIN_GLOBALS = {"_codecs.encode": codecs.encode, "builtins.bytearray": _safe_bytearray,
                    "builtins.set": set, "builtins.complex": complex}
ALLOWED = dict(PF.TORCH_GLOBALS, **_BUILTIN_GLOBALS)
_ALLOWED_IDS = {id(v) for v in ALLOWED.values()}
_NEW_OK = (collections.OrderedDict, collections.Counter, set, complex, bytearray, torch.Size)


def _unsupported_global(full_path):
    if full_path.startswith("builtins"):         # torch names builtins without their module
        rest = full_path[len("builtins"):]
        full_path = rest[1:] if rest.startswith(".") else "builtins" + rest
    return pickle.UnpicklingError(
        f"Unsupported global: GLOBAL {full_path} was not an allowed global by default. Please use "
        f"`torch.serialization.add_safe_globals([{full_path}])` or the `torch.serialization.safe_globals("
        f"[{full_path}])` context manager to allowlist this global if you trust this class/function.")


# ============================================================================ the unpickler

class Unpickler:
    """`Unpickler(file, persistent_load=fn).load()`: file is a bounded binary stream (read, readline)."""

    def __init__(self, file, *, persistent_load=None, encoding="bytes"):
        self.read = file.read
        self.readline = file.readline
        self.encoding = encoding
        self.persistent_load = persistent_load
        self.memo = {}
        self.proto = -1
        self.user = _user_globals()
        self.user_ids = {id(v) for v in self.user.values()}

    def load(self):
        self.metastack = []
        self.stack = []
        ops = _OPS
        read = self.read
        while True:
            key = read(1)
            if not key:
                raise EOFError("the pickle ended before its STOP opcode (truncated)")
            op = ops.get(key[0])
            if op is None:
                raise pickle.UnpicklingError(f"Unsupported operand {key[0]}")
            if op is _stop:
                return self.stack.pop()
            op(self)

    def allowed(self, obj):
        return id(obj) in _ALLOWED_IDS or id(obj) in self.user_ids

    def pop_mark(self):
        items = self.stack
        self.stack = self.metastack.pop()
        return items

    def read_exact(self, n):
        data = self.read(n)
        if len(data) != n:
            raise EOFError(f"the pickle ended inside an opcode's {n}-byte argument (truncated)")
        return data


def global_name(module, name):
    """The dotted name of a pickled GLOBAL, with Python 2's module names (protocol 2 writes __builtin__)
    mapped to Python 3's."""
    if (module, name) in _compat_pickle.NAME_MAPPING:
        module, name = _compat_pickle.NAME_MAPPING[(module, name)]
    elif module in _compat_pickle.IMPORT_MAPPING:
        module = _compat_pickle.IMPORT_MAPPING[module]
    return f"{module}.{name}"


def _global(u):
    module = u.readline()[:-1].decode("utf-8")
    name = u.readline()[:-1].decode("utf-8")
    full_path = global_name(module, name)
    module = full_path[:len(full_path) - len(name) - 1]
    if module in _BLOCKED_MODULES:
        raise pickle.UnpicklingError(f"Trying to load unsupported GLOBAL {full_path} whose module {module} is "
                                     f"blocked.")
    if full_path in ALLOWED:
        obj = ALLOWED[full_path]
    elif full_path in u.user:
        obj = u.user[full_path]
    else:
        raise _unsupported_global(full_path)
    if isinstance(obj, PF.Absent):
        raise MalformedData(f"the checkpoint holds {obj.what}, which reftorch does not have")
    u.stack.append(obj)


def _newobj(u):
    args = u.stack.pop()
    cls = u.stack.pop()
    if cls is Parameter:
        u.stack.append(Parameter(*args))
    elif u.allowed(cls) and isinstance(cls, type) and issubclass(cls, Tensor):
        if args:
            raise MalformedData("Tensor.__new__ with arguments in a checkpoint")
        t = torch.empty(0)
        t.__class__ = cls
        u.stack.append(t)
    elif (cls in _NEW_OK or id(cls) in u.user_ids) and isinstance(cls, type):
        u.stack.append(cls.__new__(cls, *args))
    else:
        raise pickle.UnpicklingError(f"Can only create new object for nn.Parameter or classes allowlisted via "
                                     f"`add_safe_globals` but got {cls}")


def _reduce(u):
    args = u.stack.pop()
    func = u.stack[-1]
    if not u.allowed(func) or isinstance(func, (PF.StorageType, torch.dtype)):
        msg = f"Trying to call reduce for unrecognized function {func}"
        if hasattr(func, "__self__"):
            msg += f" which belongs to {func.__self__}"
        raise pickle.UnpicklingError(msg)
    if type(args) is not tuple:
        raise MalformedData(f"REDUCE arguments must be a tuple, got {type(args).__name__}")
    u.stack[-1] = func(*args)


def _build(u):
    state = u.stack.pop()
    inst = u.stack[-1]
    if type(inst) is collections.OrderedDict:       # a state_dict's _metadata
        if not isinstance(state, dict):
            raise MalformedData(f"an OrderedDict's state must be a dict, got {type(state).__name__}")
        inst.__dict__.update(state)
    elif type(inst) is Parameter:
        PF.set_obj_state(inst, state)
    elif id(type(inst)) in u.user_ids:
        if hasattr(inst, "__setstate__"):
            inst.__setstate__(state)
            return
        slotstate = None
        if isinstance(state, tuple) and len(state) == 2:
            state, slotstate = state
        if state:
            inst.__dict__.update(state)
        if slotstate:
            for k, v in slotstate.items():
                setattr(inst, k, v)
    else:
        raise pickle.UnpicklingError(f"Can only build Tensor, Parameter, OrderedDict or types allowlisted via "
                                     f"`add_safe_globals`, but got {type(inst)}")


def _append(u):
    item = u.stack.pop()
    if type(u.stack[-1]) is not list:
        raise pickle.UnpicklingError(f"Can only append to lists, but got {type(u.stack[-1])}")
    u.stack[-1].append(item)


def _appends(u):
    items = u.pop_mark()
    if type(u.stack[-1]) is not list:
        raise pickle.UnpicklingError(f"Can only extend lists, but got {type(u.stack[-1])}")
    u.stack[-1].extend(items)


def _check_dict(u, opcode):
    if type(u.stack[-1]) not in (dict, collections.OrderedDict, collections.Counter):
        raise pickle.UnpicklingError(f"Can only {opcode} for dict, collections.OrderedDict, collections.Counter, "
                                     f"but got {type(u.stack[-1])}")


def _setitem(u):
    v, k = u.stack.pop(), u.stack.pop()
    _check_dict(u, "SETITEM")
    u.stack[-1][k] = v


def _setitems(u):
    items = u.pop_mark()
    _check_dict(u, "SETITEMS")
    if len(items) % 2:
        raise MalformedData("SETITEMS with an odd number of items")
    target = u.stack[-1]
    for i in range(0, len(items), 2):
        target[items[i]] = items[i + 1]


def _mark(u):
    u.metastack.append(u.stack)
    u.stack = []


def _tuple(u):
    items = tuple(u.pop_mark())       # pop_mark replaces u.stack: look it up after
    u.stack.append(items)


def _tuple_n(n):
    def op(u):
        if len(u.stack) < n:
            raise IndexError(f"TUPLE{n} on a stack of {len(u.stack)}")
        items = tuple(u.stack[len(u.stack) - n:])
        del u.stack[len(u.stack) - n:]
        u.stack.append(items)
    return op


def _const(value_factory):
    def op(u):
        u.stack.append(value_factory())
    return op


def _unpack(fmt, size):
    def op(u):
        u.stack.append(struct.unpack(fmt, u.read_exact(size))[0])
    return op


def _binint1(u):
    u.stack.append(u.read_exact(1)[0])


def _binunicode(u):
    (n,) = struct.unpack("<I", u.read_exact(4))
    u.stack.append(str(u.read_exact(n), "utf-8", "surrogatepass"))


def _short_binstring(u):
    data = u.read_exact(u.read_exact(1)[0])
    u.stack.append(data if u.encoding == "bytes" else data.decode(u.encoding, "strict"))


def _binpersid(u):
    pid = u.stack.pop()
    if type(pid) is not tuple and type(pid) is not int:
        raise pickle.UnpicklingError(f"persistent_load id must be tuple or int, but got {type(pid)}")
    if type(pid) is tuple and len(pid) > 0 and pid[0] not in ("storage", b"storage"):
        raise pickle.UnpicklingError(f"Only persistent_load of storage is allowed, but got {type(pid[0])}")
    if u.persistent_load is None:
        raise pickle.UnpicklingError("unsupported persistent id encountered")
    u.stack.append(u.persistent_load(pid))


def _get(size):
    def op(u):
        idx = u.read_exact(1)[0] if size == 1 else struct.unpack("<I", u.read_exact(4))[0]
        if idx not in u.memo:
            raise KeyError(f"memo entry {idx} read before it was written")
        u.stack.append(u.memo[idx])
    return op


def _put(size):
    def op(u):
        idx = u.read_exact(1)[0] if size == 1 else struct.unpack("<I", u.read_exact(4))[0]
        u.memo[idx] = u.stack[-1]
    return op


def _long1(u):
    u.stack.append(pickle.decode_long(u.read_exact(u.read_exact(1)[0])))


def _proto(u):
    u.proto = u.read_exact(1)[0]
    if u.proto != 2:
        warnings.warn(f"Detected pickle protocol {u.proto} in the checkpoint, which was not the default pickle "
                      f"protocol used by `torch.load` (2). The weights_only Unpickler might not support all "
                      f"instructions implemented by this protocol, please file an issue for adding support if you "
                      f"encounter this.", stacklevel=4)


def _stop(u):
    pass


_OPS = {
    pickle.GLOBAL[0]: _global, pickle.NEWOBJ[0]: _newobj, pickle.REDUCE[0]: _reduce, pickle.BUILD[0]: _build,
    pickle.APPEND[0]: _append, pickle.APPENDS[0]: _appends, pickle.SETITEM[0]: _setitem,
    pickle.SETITEMS[0]: _setitems, pickle.MARK[0]: _mark, pickle.TUPLE[0]: _tuple,
    pickle.TUPLE1[0]: _tuple_n(1), pickle.TUPLE2[0]: _tuple_n(2), pickle.TUPLE3[0]: _tuple_n(3),
    pickle.NONE[0]: _const(lambda: None), pickle.NEWFALSE[0]: _const(lambda: False),
    pickle.NEWTRUE[0]: _const(lambda: True), pickle.EMPTY_TUPLE[0]: _const(tuple),
    pickle.EMPTY_LIST[0]: _const(list), pickle.EMPTY_DICT[0]: _const(dict), pickle.EMPTY_SET[0]: _const(set),
    pickle.BININT[0]: _unpack("<i", 4), pickle.BININT1[0]: _binint1, pickle.BININT2[0]: _unpack("<H", 2),
    pickle.BINFLOAT[0]: _unpack(">d", 8), pickle.BINUNICODE[0]: _binunicode,
    pickle.SHORT_BINSTRING[0]: _short_binstring, pickle.BINPERSID[0]: _binpersid,
    pickle.BINGET[0]: _get(1), pickle.LONG_BINGET[0]: _get(4), pickle.BINPUT[0]: _put(1),
    pickle.LONG_BINPUT[0]: _put(4), pickle.LONG1[0]: _long1, pickle.PROTO[0]: _proto, pickle.STOP[0]: _stop,
}


UNSAFE_MESSAGE = (
    "In PyTorch 2.6, we changed the default value of the `weights_only` argument in `torch.load` from `False` to "
    "`True`. Re-running `torch.load` with `weights_only` set to `False` will likely succeed, but it can result in "
    "arbitrary code execution. Do it only if you got the file from a trusted source.")
_DOCS_MESSAGE = ("\n\nCheck the documentation of torch.load to learn more about types accepted by default with "
                 "weights_only https://pytorch.org/docs/stable/generated/torch.load.html.")


def weights_only_message(message):
    """torch.load's wording around a refusal of the weights-only unpickler (`_get_wo_message`)."""
    if "was not an allowed global by default." in message:
        return ("Weights only load failed. This file can still be loaded, to do so you have two options, "
                "\033[1mdo those steps only if you trust the source of the checkpoint\033[0m. "
                f"\n\t(1) {UNSAFE_MESSAGE}\n\t(2) Alternatively, to load with `weights_only=True` please check the "
                "recommended steps in the following error message.\n\tWeightsUnpickler error: " + message
                + _DOCS_MESSAGE)
    out = f"Weights only load failed. {UNSAFE_MESSAGE}\n"
    if "is blocked" not in message:
        out += ("Please file an issue with the following so that we can make `weights_only=True` compatible with "
                "your use case: WeightsUnpickler error: ")
    return out + "\n\n" + message + _DOCS_MESSAGE
