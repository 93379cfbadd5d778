"""default_collate and default_convert: how samples become a batch."""
from __future__ import annotations

import collections.abc
import copy
import re

import numpy as np

import reftorch as torch

__all__ = ["default_collate", "default_convert"]

_NP_STR_OR_OBJECT = re.compile(r"[SaUO]")
_ERROR = "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {}"


def _is_namedtuple(x):
    return isinstance(x, tuple) and hasattr(x, "_fields")


def default_collate(batch):
    """Collate a list of samples into a batch, recursively.

    tensors -> stacked along a new first dim; NumPy arrays -> tensors, then stacked; Python floats ->
    float64 tensor; ints (and bools) -> int64 (bool) tensor; strings stay a list; dicts, namedtuples
    and lists collate field by field; tuples give a list of collated fields (as PyTorch does).
    """
    elem = batch[0]
    if isinstance(elem, torch.Tensor):
        return torch.stack(list(batch), 0)
    if type(elem).__module__ == "numpy" and not isinstance(elem, (np.str_, np.bytes_)):
        if isinstance(elem, np.ndarray):
            if _NP_STR_OR_OBJECT.search(elem.dtype.str) is not None:
                raise TypeError(_ERROR.format(elem.dtype))
            return default_collate([torch.as_tensor(np.ascontiguousarray(b)) for b in batch])
        if isinstance(elem, np.generic):
            if _NP_STR_OR_OBJECT.search(elem.dtype.str) is not None:
                raise TypeError(_ERROR.format(elem.dtype))
            return torch.as_tensor(np.array(batch))
    if isinstance(elem, bool):
        return torch.tensor(batch)
    if isinstance(elem, float):
        return torch.tensor(batch, dtype=torch.float64)
    if isinstance(elem, int):
        return torch.tensor(batch)
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, collections.abc.Mapping):
        collated = {key: default_collate([d[key] for d in batch]) for key in elem}
        try:
            if isinstance(elem, collections.abc.MutableMapping):
                clone = copy.copy(elem)
                clone.update(collated)
                return clone
            return type(elem)(collated)
        except TypeError:
            return collated
    if _is_namedtuple(elem):
        return type(elem)(*(default_collate(list(s)) for s in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        size = len(elem)
        if any(len(e) != size for e in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        transposed = [list(s) for s in zip(*batch)]
        if isinstance(elem, tuple):
            return [default_collate(s) for s in transposed]
        try:
            clone = copy.copy(elem)
            for i, samples in enumerate(transposed):
                clone[i] = default_collate(samples)
            return clone
        except TypeError:
            return [default_collate(s) for s in transposed]
    raise TypeError(_ERROR.format(type(elem)))


def default_convert(data):
    """What the DataLoader applies to each sample when batching is off: NumPy arrays become tensors."""
    if isinstance(data, torch.Tensor):
        return data
    if type(data).__module__ == "numpy" and not isinstance(data, (np.str_, np.bytes_)):
        if isinstance(data, np.ndarray) and _NP_STR_OR_OBJECT.search(data.dtype.str) is not None:
            return data
        return torch.as_tensor(data)
    if isinstance(data, collections.abc.Mapping):
        converted = {k: default_convert(v) for k, v in data.items()}
        try:
            return type(data)(converted)
        except TypeError:
            return converted
    if _is_namedtuple(data):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        try:
            return type(data)([default_convert(d) for d in data])
        except TypeError:
            return [default_convert(d) for d in data]
    return data
