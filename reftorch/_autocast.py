"""Autocast state and casting (the core half of reftorch.amp; policies per op come from ops.yaml).

Each op of ops.yaml may carry `autocast: lower|fp32|promote`, or a policy per device (`{cpu: none, cuda:
fp32}`: PyTorch's CPU and CUDA lists differ; the generated SPECS hold a str or a {device: policy} dict); the
dispatcher asks `cast` to convert the op's floating Tensor arguments before it runs, the way PyTorch's
Autocast dispatch key does, with the policy of the device the args are on:
  lower    eligible args (floating, not float64, on an autocast-enabled device) -> the autocast dtype
  fp32     eligible args -> float32
  promote  eligible args -> float32 when any of them is float32, else the autocast dtype
  keep     no cast, and a composite's body runs with autocast off for that device (a native kernel in
           PyTorch, whose inner ops see no autocast: mean's sum stays in float16 on cuda)
Ops without a policy (for that device) run on their inputs as they are (so mixed inputs promote to the
widest, as usual).
Casts are ordinary differentiable `.to()` calls: float32 parameters get float32 gradients. State is
thread-local; lower-precision casts of leaf parameters are cached until the outermost region exits.
"""
from __future__ import annotations

import threading

import reftorch._dtype as D
import reftorch.autograd.grad_mode as grad_mode
from ._tensor import Tensor

DEVICES = ("cpu", "cuda")


class _State(threading.local):
    def __init__(self):
        self.enabled = {"cpu": False, "cuda": False}
        self.dtype = {"cpu": D.bfloat16, "cuda": D.float16}
        self.any = False                # some device enabled: the dispatcher's one fast test
        self.cache_enabled = True
        self.nesting = 0
        self.cache = {}


state = _State()


def is_enabled(device_type="cuda"):
    return state.enabled[device_type]


def get_dtype(device_type):
    return state.dtype[device_type]


def clear_cache():
    state.cache.clear()


def _eligible(t, device):
    return isinstance(t, Tensor) and t.dtype.category == 2 and t.device.type == device and state.enabled[device]


def _cast_one(t, to, device):
    if not _eligible(t, device) or t.dtype is D.float64 or t.dtype is to:
        return t
    cacheable = state.cache_enabled and to is state.dtype[device] and t.dtype is D.float32 and \
        t.requires_grad and t.grad_fn is None and t._base is None and grad_mode.state.enabled
    if cacheable:
        hit = state.cache.get(id(t))
        if hit is not None and hit[0] is t and hit[1] == t._storage.version:
            return hit[2]
    out = t.to(to)
    if cacheable:
        state.cache[id(t)] = (t, t._storage.version, out)
    return out


def _tensors(args):
    for a in args:
        if isinstance(a, Tensor):
            yield a
        elif isinstance(a, (list, tuple)):
            yield from (x for x in a if isinstance(x, Tensor))


def _device(args):
    for t in _tensors(args):
        if t.dtype.category == 2 and state.enabled.get(t.device.type):
            return t.device.type
    return None


def promotes(devices, args):
    """Whether autocast promotes these arguments now, for an op whose policy is promote on `devices`: its dtype
    checks must then see the promoted dtypes (PyTorch checks below its autocast layer, mixed dtypes pass)."""
    return state.any and _device(args) in devices


def cast(policy, args):
    """args (tensors, lists of tensors, anything else) converted as the op's autocast policy says (a policy,
    or a {device type: policy} dict)."""
    device = _device(args)
    if device is None:
        return args
    if policy.__class__ is dict:
        policy = policy.get(device)
        if policy is None:
            return args
    if policy == "keep":
        return args
    if policy == "lower":
        to = state.dtype[device]
    elif policy == "fp32":
        to = D.float32
    else:   # promote: the widest eligible floating type (float64 args are left alone)
        to = state.dtype[device]
        for t in _tensors(args):
            if _eligible(t, device) and t.dtype is D.float32:
                to = D.float32
    out = []
    for a in args:
        if isinstance(a, (list, tuple)) and any(_eligible(x, device) for x in a):
            out.append(type(a)(_cast_one(x, to, device) for x in a))
        else:
            out.append(_cast_one(a, to, device))
    return type(args)(out) if isinstance(args, tuple) else out


def kept(policy, args, kwargs):
    """The device type whose autocast a `keep` op's composite body runs without, or None."""
    device = _device(tuple(args) + tuple(kwargs.values()))
    if device is None:
        return None
    if policy.__class__ is dict:
        policy = policy.get(device)
    return device if policy == "keep" else None


class suspended:
    """Autocast off for one device type inside the block (restored on exit)."""

    def __init__(self, device):
        self.device = device

    def __enter__(self):
        self.prev = state.enabled[self.device]
        state.enabled[self.device] = False
        state.any = any(state.enabled.values())

    def __exit__(self, *exc):
        state.enabled[self.device] = self.prev
        state.any = any(state.enabled.values())
        return False


def cast_kwargs(policy, args, kwargs):
    """cast() over a call's positional and keyword arguments together (composite ops, nn.functional)."""
    keys = list(kwargs)
    res = cast(policy, tuple(args) + tuple(kwargs[k] for k in keys))
    n = len(args)
    return tuple(res[:n]), dict(zip(keys, res[n:]))


def policy(kind, **per_device):
    """Decorator for library functions that are not ops.yaml entries (nn.functional.linear, losses...):
    their arguments are cast as an op with `autocast: <kind>` would be, before the body runs.
    `policy(cuda="fp32")`: a policy per device type (the devices not named keep their args as they are)."""
    if per_device:
        kind = dict(per_device) if kind is None else dict({d: kind for d in DEVICES}, **per_device)
    import functools

    def wrap(fn):
        @functools.wraps(fn)
        def inner(*args, **kwargs):
            if state.any:
                args, kwargs = cast_kwargs(kind, args, kwargs)
            return fn(*args, **kwargs)
        inner.__autocast__ = kind
        return inner
    return wrap


def enter(device_type, enabled, dtype, cache_enabled):
    prev = (state.enabled[device_type], state.dtype[device_type], state.cache_enabled)
    state.enabled[device_type] = enabled
    if dtype is not None:
        state.dtype[device_type] = dtype
    if cache_enabled is not None:
        state.cache_enabled = cache_enabled
    state.any = any(state.enabled.values())
    state.nesting += 1
    return prev


def exit(device_type, prev):
    state.enabled[device_type], state.dtype[device_type], state.cache_enabled = prev
    state.any = any(state.enabled.values())
    state.nesting -= 1
    if state.nesting == 0:
        state.cache.clear()
