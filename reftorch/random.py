"""reftorch.random: the default generator's state, seeding, and fork_rng.

The cpu generator lives in reftorch/_creation.py (the top-level reftorch.manual_seed & co. are the
same functions); this module adds the cuda generator's state as a ByteTensor and fork_rng.
"""
from __future__ import annotations

import contextlib
import struct
import warnings

import reftorch._dtype as D
import reftorch.cuda as _cuda
from ._creation import tensor as _tensor
from ._creation_random import (default_generator, get_rng_state, initial_seed, manual_seed, seed,  # noqa: F401
                               set_rng_state)

__all__ = ["set_rng_state", "get_rng_state", "manual_seed", "seed", "initial_seed", "fork_rng"]


def cuda_get_rng_state(device="cuda"):
    """The cuda generator's state: 16 bytes, its seed then its counter offset (torch's layout)."""
    return _tensor(list(struct.pack("<QQ", _cuda._initial_seed, _cuda._offset)), dtype=D.uint8)


def cuda_set_rng_state(new_state, device="cuda"):
    data = bytes(new_state.tolist())
    if len(data) != 16:
        raise RuntimeError(f"RNG state is wrong size: expected 16 bytes, got {len(data)}")
    _cuda._initial_seed, _cuda._offset = struct.unpack("<QQ", data)
    _cuda._seed_set = True


def _device_count():
    return _cuda.device_count() if _cuda.is_available() else 0


_fork_rng_warned_already = False


def _warn_many_devices(num_devices, caller, devices_kw):
    global _fork_rng_warned_already
    message = (
        f"CUDA reports that you have {num_devices} available devices, and "
        f"you have used {caller} without explicitly specifying which devices are being used. "
        f"For safety, we initialize *every* CUDA device by default, which can "
        f"be quite slow if you have a lot of CUDAs. If you know that you are only"
        f" making use of a few CUDA devices, set the environment variable "
        f"CUDA_VISIBLE_DEVICES or the '{devices_kw}' keyword argument of {caller} "
        "with the set of devices you are actually using. For example, if you are using CPU only, "
        "set device.upper()_VISIBLE_DEVICES= or devices=[]; if you are using device 0 only, "
        f"set CUDA_VISIBLE_DEVICES=0 or devices=[0].  To initialize all devices "
        f"and suppress this warning, set the '{devices_kw}' keyword argument to "
        f"`range(torch.cuda.device_count())`.")
    warnings.warn(message, stacklevel=4)
    _fork_rng_warned_already = True


@contextlib.contextmanager
def fork_rng(devices=None, enabled=True, _caller="fork_rng", _devices_kw="devices", device_type=None):
    """Restore the cpu generator (and the given cuda devices' generators) on exit."""
    if device_type == "meta" or not enabled:
        yield
        return
    if device_type not in (None, "cuda", "cpu"):
        raise RuntimeError(f"torch has no module of `{device_type}`, you should register "
                           "a module by `torch._register_device_module`.")
    if devices is None:
        num_devices = _device_count()
        if num_devices > 1 and not _fork_rng_warned_already:
            _warn_many_devices(num_devices, _caller, _devices_kw)
        devices = list(range(num_devices))
    else:
        devices = list(devices)
    cpu_state = get_rng_state()
    device_states = [cuda_get_rng_state(d) for d in devices]
    try:
        yield
    finally:
        set_rng_state(cpu_state)
        for d, state in zip(devices, device_states):
            cuda_set_rng_state(state, d)
