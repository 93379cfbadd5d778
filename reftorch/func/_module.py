"""functional_call and stack_module_state: a module run with other parameters, and an ensemble's parameters
stacked (for vmap over models)."""
from __future__ import annotations

import reftorch._functional as F

_MISSING = object()


def _owner(module, dotted):
    """(submodule, attribute name) for a dotted key."""
    *path, name = dotted.split(".")
    for p in path:
        module = getattr(module, p)
    return module, name


def _merge(parameter_and_buffer_dicts):
    if isinstance(parameter_and_buffer_dicts, dict):
        return dict(parameter_and_buffer_dicts)
    merged = {}
    for d in parameter_and_buffer_dicts:
        twice = sorted(k for k in d if k in merged)
        if twice:
            raise ValueError(f"{twice} appeared in multiple dictionaries; behavior of functional call is ambiguous")
        merged.update(d)
    return merged


def _check_strict(module, given):
    names = [n for n, _ in module.named_parameters(remove_duplicate=False)] + \
        [n for n, _ in module.named_buffers(remove_duplicate=False)]
    unexpected = [k for k in given if k not in names]
    missing = sorted(n for n in names if n not in given)
    if unexpected or missing:
        msg = [f"Error(s) in reparametrizing for {type(module).__name__}:"]
        if unexpected:
            msg.append("\tUnexpected key(s): " + ", ".join(f"'{k}'" for k in unexpected) + ".")
        if missing:
            msg.append("\tMissing key(s): " + ", ".join(f"'{k}'" for k in missing) + ".")
        raise RuntimeError("\n".join(msg))


def _tied(module, given):
    """Keys of parameters tied to a given one (the same tensor under two names) get its replacement too."""
    by_tensor = {}
    for n, p in list(module.named_parameters(remove_duplicate=False)) + \
            list(module.named_buffers(remove_duplicate=False)):
        by_tensor.setdefault(id(p), []).append(n)
    out = dict(given)
    for names in by_tensor.values():
        have = [n for n in names if n in given]
        for n in names:
            if have and n not in out:
                out[n] = given[have[0]]
    return out


def _swap(module, values):
    """Put values in place (in _parameters / _buffers, or as plain attributes); returns what to restore."""
    undo = []
    for key, value in values.items():
        owner, name = _owner(module, key)
        for table in (owner._parameters, owner._buffers):
            if name in table:
                undo.append((table, name, table[name]))
                table[name] = value
                break
        else:
            undo.append((owner, name, owner.__dict__.get(name, _MISSING)))
            owner.__dict__[name] = value
    return undo


def _restore(undo):
    for where, name, old in reversed(undo):
        if isinstance(where, dict):
            where[name] = old
        elif old is _MISSING:
            del where.__dict__[name]
        else:
            where.__dict__[name] = old


def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *, tie_weights=True, strict=False):
    """module(*args, **kwargs) with its parameters and buffers replaced by the given tensors for the call."""
    values = _merge(parameter_and_buffer_dicts)
    if strict:
        _check_strict(module, values)
    if tie_weights:
        values = _tied(module, values)
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    undo = _swap(module, values)
    try:
        return module(*args, **(kwargs or {}))
    finally:
        _restore(undo)


def stack_module_state(models):
    """(params, buffers): each model's parameters and buffers stacked along a new first dim (leaves that
    require grad, for the parameters), for vmap over an ensemble with functional_call."""
    models = list(models)
    if not models:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or not any(m.training for m in models)):
        raise RuntimeError("stack_module_state: Expected all models to have the same training/eval mode.")
    first = models[0]
    params = {}
    for name, _ in first.named_parameters():
        stacked = F.stack([dict(m.named_parameters())[name].detach() for m in models])
        params[name] = stacked.requires_grad_(True)
    buffers = {}
    for name, _ in first.named_buffers():
        buffers[name] = F.stack([dict(m.named_buffers())[name] for m in models])
    return params, buffers

