"""Devices on cuda (issue 16 point 3): deterministic mode takes the host path for float atomics, accelerator
answers from reftorch.cuda, meta and cuda tensors refuse to mix. Run in the simulator by tests/test_cuda_simulator.py."""
import pytest

import reftorch as torch
from reftorch import _cuda_index


def test_deterministic_mode_sums_float_scatters_on_the_host(monkeypatch):
    launched = []
    launch = _cuda_index._launch
    monkeypatch.setattr(_cuda_index, "_launch", lambda kernel, *a: launched.append(kernel) or launch(kernel, *a))
    x = torch.zeros(4, dtype=torch.float64)
    idx = torch.tensor([2, 0, 2])
    src = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)
    want = x.index_add(0, idx, src).tolist()
    assert want == [2.0, 0.0, 4.0, 0.0]
    assert x.cuda().index_add(0, idx, src.cuda()).tolist() == want and _cuda_index.put_add_kernel in launched
    launched.clear()
    torch.use_deterministic_algorithms(True)
    try:
        assert x.cuda().index_add(0, idx, src.cuda()).tolist() == want
        assert _cuda_index.put_add_kernel not in launched       # summed in a fixed order on the host
        ints = torch.zeros(4, dtype=torch.int64).cuda().index_add(0, idx, torch.ones(3, dtype=torch.int64).cuda())
        assert ints.tolist() == [1, 0, 2, 0] and _cuda_index.put_add_kernel in launched   # integer sums: any order
    finally:
        torch.use_deterministic_algorithms(False)


def test_accelerator_is_cuda():
    a = torch.accelerator
    assert a.is_available() and str(a.current_accelerator()) == "cuda" and a.device_count() >= 1
    assert a.current_device_index() == 0
    a.set_device_index(0)
    a.synchronize()
    with a.device_index(0):
        assert a.current_device_index() == 0


def test_meta_and_cuda_do_not_mix():
    with pytest.raises(RuntimeError, match="Tensor on device cuda:0 is not on the expected device meta!"):
        torch.empty(2, 3, device="meta") + torch.ones(2, 3, device="cuda")
    with torch.device("cuda"):
        assert torch.ones(2).device.type == "cuda"
    assert torch.ones(2, device="cuda").to("meta").device.type == "meta"
