"""Checkpoints of cuda tensors in torch's format, in numba's simulator (tests/test_cuda_simulator.py runs
this directory with NUMBA_ENABLE_CUDASIM=1): the location tag 'cuda:0', views still sharing one device
storage after loading, map_location both ways, and the legacy format."""
import io
import os
import zipfile

import pytest

if not os.environ.get("NUMBA_ENABLE_CUDASIM"):
    pytest.skip("needs NUMBA_ENABLE_CUDASIM=1 (run by tests/test_cuda_simulator.py)", allow_module_level=True)

import reftorch as torch  # noqa: E402


@pytest.mark.parametrize("legacy", [False, True])
def test_cuda_storages_keep_device_and_sharing(legacy):
    base = torch.arange(6.0, device="cuda")
    buf = io.BytesIO()
    torch.save({"base": base, "view": base.view(2, 3)[:, 1:], "cpu": torch.ones(2)}, buf,
               _use_new_zipfile_serialization=not legacy)
    if not legacy:
        assert b"cuda:0" in zipfile.ZipFile(buf).read("archive/data.pkl")
    buf.seek(0)
    got = torch.load(buf)
    assert got["base"].device == torch.device("cuda:0") and got["cpu"].device.type == "cpu"
    assert got["view"].tolist() == [[1.0, 2.0], [4.0, 5.0]] and got["view"].stride() == (3, 1)
    assert got["view"]._storage is got["base"]._storage       # one device storage, as saved
    buf.seek(0)
    on_cpu = torch.load(buf, map_location="cpu")
    assert on_cpu["view"].device.type == "cpu" and on_cpu["view"]._storage is on_cpu["base"]._storage
    buf.seek(0)
    moved = torch.load(buf, map_location=lambda storage, loc: storage.cuda())
    assert moved["cpu"].is_cuda and moved["cpu"].tolist() == [1.0, 1.0]
