"""Optimizer: the base class that holds parameter groups and per-parameter state.

Subclasses implement `step()`; each reads `group[...]` options, lazily creates its state the first
time a parameter has a gradient, and updates parameters in place under `no_grad`. The state_dict
layout is PyTorch's: parameters are replaced by their index in the order of the groups.
"""
from __future__ import annotations

import copy
import functools
import warnings
from collections import defaultdict
from itertools import chain

import reftorch as torch


class _RequiredParameter:
    """Marks an option that has no default: every parameter group must give it."""

    def __repr__(self):
        return "<required parameter>"


required = _RequiredParameter()


def _typename(obj):
    if isinstance(obj, torch.Tensor):
        return obj.type()
    module = type(obj).__module__
    name = type(obj).__qualname__
    return name if module in (None, "builtins") else f"{module}.{name}"


class Optimizer:
    """Base class of all optimizers.

    params: an iterable of tensors, of (name, tensor) pairs, or of dicts each defining a parameter
    group ({"params": [...], "lr": ...}); options a group leaves out come from `defaults`.
    """

    _foreach_differentiable = False     # whether foreach=True may go with differentiable=True (SGD's may)

    def __init__(self, params, defaults):
        self.defaults = defaults
        if isinstance(params, torch.Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of Tensors or dicts, "
                            f"but got {_typename(params)}")
        self.state = defaultdict(dict)
        self.param_groups = []
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for group in param_groups:
            self.add_param_group(dict(group))

    # ------------------------------------------------------------------ groups
    def add_param_group(self, param_group):
        """Add a group of parameters (a dict with "params" and optional per-group options)."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group).__name__}")
        params = param_group["params"]
        if isinstance(params, torch.Tensor):
            params = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, but the ordering "
                            "of tensors in sets will change between runs. Please use a list instead.")
        else:
            params = list(params)
        names = []
        tensors = []
        for p in params:
            if isinstance(p, tuple) and len(p) == 2 and isinstance(p[0], str):
                names.append(p[0])
                p = p[1]
            tensors.append(p)
        if names and len(names) != len(tensors):
            raise ValueError("all optimizer params should be with/without names. Some param names are missing")
        for p in tensors:
            if not isinstance(p, torch.Tensor):
                raise TypeError(f"optimizer can only optimize Tensors, but one of the params is {_typename(p)}")
            if not self.defaults.get("differentiable", None) and not (p.is_leaf or p.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")
        param_group["params"] = tensors
        if names:
            param_group["param_names"] = names

        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(f"parameter group didn't specify a value of required optimization parameter {name}")
            param_group.setdefault(name, default)

        if len(tensors) != len({id(p) for p in tensors}):
            warnings.warn("optimizer contains a parameter group with duplicate parameters; in future, this will "
                          "cause an error; see github.com/pytorch/pytorch/issues/40967 for more information",
                          stacklevel=3)
        seen = {id(p) for group in self.param_groups for p in group["params"]}
        if any(id(p) in seen for p in tensors):
            raise ValueError("some parameters appear in more than one parameter group")
        if self.param_groups and ("param_names" in param_group) != ("param_names" in self.param_groups[0]):
            raise ValueError("all optimizer param groups should be with/without names.")
        self.param_groups.append(param_group)

    # ------------------------------------------------------------------ gradients
    def zero_grad(self, set_to_none=True):
        """Reset the gradients of all optimized tensors: to None (default) or to zeros in place."""
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    g = p.grad
                    if g.grad_fn is not None:
                        g.detach_()
                    else:
                        g.requires_grad_(False)
                    g.zero_()

    def step(self, closure=None):
        raise NotImplementedError(f"{type(self).__name__} does not implement step()")

    @staticmethod
    def _run_closure(closure):
        if closure is None:
            return None
        with torch.enable_grad():
            return closure()

    # ------------------------------------------------------------------ state
    def state_dict(self):
        """{"state": {index: {...}}, "param_groups": [{options..., "params": [indices]}]}.

        Parameters are numbered in the order they appear across groups. State tensors are returned by
        reference (as PyTorch does); save or copy them if the optimizer keeps stepping.
        """
        index_of = {}
        groups = []
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            for p in group["params"]:
                index_of.setdefault(id(p), len(index_of))
            packed["params"] = [index_of[id(p)] for p in group["params"]]
            groups.append(packed)
        state = {(index_of[id(k)] if isinstance(k, torch.Tensor) else k): v for k, v in self.state.items()}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict):
        """Load a state_dict made by `state_dict()` of an optimizer with the same groups' sizes.

        State tensors are copied, and floating ones are cast to their parameter's dtype (not `step`).
        """
        if not isinstance(state_dict, dict) or "state" not in state_dict or "param_groups" not in state_dict:
            raise ValueError("optimizer state_dict must be a dict with 'state' and 'param_groups'")
        groups = self.param_groups
        saved_groups = copy.deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match the size of "
                             "optimizer's group")
        id_map = dict(zip(chain.from_iterable(s["params"] for s in saved_groups),
                          chain.from_iterable(g["params"] for g in groups)))

        def cast(param, value, key=None):
            if isinstance(value, torch.Tensor):
                if key != "step" and param.is_floating_point() and value.is_floating_point():
                    return value.detach().to(param.dtype, copy=True)
                return value.detach().clone()
            if isinstance(value, dict):
                return {k: cast(param, v, key=k) for k, v in value.items()}
            if isinstance(value, (list, tuple)):
                return type(value)(cast(param, v) for v in value)
            return value

        state = defaultdict(dict)
        for k, v in state_dict["state"].items():
            key = _int_key(k)
            if key in id_map:
                param = id_map[key]
                state[param] = cast(param, v)
            else:
                state[k] = v
        new_groups = []
        for group, saved in zip(groups, saved_groups):
            saved["params"] = group["params"]
            if "param_names" in group and "param_names" not in saved:
                saved["param_names"] = group["param_names"]
            new_groups.append(saved)
        self.__setstate__({"state": state, "param_groups": new_groups})

    def __getstate__(self):
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state):
        self.__dict__.update(state)
        for group in self.param_groups:
            for name, default in self.defaults.items():
                if default is not required:
                    group.setdefault(name, default)

    def __repr__(self):
        lines = [f"{type(self).__name__} ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            for key in sorted(group):
                if key != "params":
                    lines.append(f"    {key}: {group[key]}")
        lines.append(")")
        return "\n".join(lines)

    # ------------------------------------------------------------------ helpers for subclasses
    @staticmethod
    def _params_with_grad(group):
        """The group's parameters that have a gradient, each with its gradient."""
        for p in group["params"]:
            if p.grad is None:
                continue
            yield p, p.grad


def _int_key(k):
    """State keys saved by a checkpoint may come back as strings of their index."""
    if isinstance(k, str) and k.isdigit():
        return int(k)
    return k


def _scalar_step(fused=False):
    """The `step` counter of a parameter's state: a 0-d tensor, as in PyTorch (float32, or float64 when that is
    the default dtype and the optimizer is not fused)."""
    dtype = torch.float64 if not fused and torch.get_default_dtype() == torch.float64 else torch.float32
    return torch.tensor(0.0, dtype=dtype)


def _bump(step_t):
    """Increment a `step` tensor in place and return the new count as a Python number."""
    step_t.add_(1)
    return step_t.item()


_FUSED_DEVICES = ["mps", "cuda", "xpu", "hpu", "cpu", "mtia", "privateuseone"]


def _check_fused(fused, foreach=None, differentiable=False):
    """fused=True picks the single-pass kernels (reftorch's generated ones where it has them; the same
    update either way); PyTorch refuses it with differentiable or foreach."""
    if fused:
        if differentiable:
            raise RuntimeError("`fused` does not support `differentiable`")
        if foreach:
            raise RuntimeError("`fused` and `foreach` cannot be `True` together.")


def _check_fused_param(p):
    if not (p.device.type in _FUSED_DEVICES and p.is_floating_point()):
        raise RuntimeError("`fused=True` requires all the params to be floating point Tensors of supported devices: "
                           f"{_FUSED_DEVICES} but {p.dtype} and {p.device.type}")


def _use_grad_for_differentiable(step):
    """Run `step` with autograd on only when the optimizer is `differentiable` (as PyTorch does), so that a
    differentiable optimizer's update can be backpropagated through; otherwise under no_grad."""

    @functools.wraps(step)
    def wrapper(self, *args, **kwargs):
        if not self._foreach_differentiable and any(g.get("foreach") and g.get("differentiable")
                                                    for g in self.param_groups):
            # PyTorch's multi-tensor kernels have no derivatives; reftorch refuses the pair as it does
            raise AssertionError("_foreach ops don't support autograd")
        previous = torch.is_grad_enabled()
        try:
            torch.set_grad_enabled(bool(self.defaults.get("differentiable", False)))
            return step(self, *args, **kwargs)
        finally:
            torch.set_grad_enabled(previous)

    return wrapper


_CAPTURABLE_DEVICES = ["cuda", "xpu", "hpu", "privateuseone"]


def _check_capturable(tensors, supports_xla=True):
    """capturable=True keeps step counts on the parameters' device for CUDA graphs; PyTorch refuses it elsewhere."""
    devices = _CAPTURABLE_DEVICES + (["xla"] if supports_xla else [])
    if not all(t.device.type in devices for t in tensors):
        raise AssertionError(f"If capturable=True, params and state_steps must be on supported devices: {devices}.")


def _check_lr(lr):
    if isinstance(lr, torch.Tensor) and lr.numel() != 1:
        raise ValueError("Tensor lr must be 1-element")
    if not 0.0 <= lr:
        raise ValueError(f"Invalid learning rate: {lr}")
    return lr.item() if isinstance(lr, torch.Tensor) else lr
