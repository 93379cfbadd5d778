"""reftorch.serialization.save_safetensors / reftorch.load: the safetensors format, round trips, interop with the safetensors
package (when installed), and failures that must not lose data or pass silently."""
import collections
import io
import json
import math
import os
import struct

import numpy as np
import pytest

import reftorch as torch
from reftorch.serialization import CheckpointError, save_safetensors


def _state_dict():
    g = torch.Generator().manual_seed(0)
    return collections.OrderedDict([
        ("layer.weight", torch.randn(4, 3, generator=g)),
        ("layer.bias", torch.randn(4, generator=g)),
        ("bn.num_batches_tracked", torch.tensor(7)),
        ("mask", torch.tensor([True, False, True])),
        ("scale", torch.tensor(0.5, dtype=torch.float64)),
        ("codes", torch.tensor([1, 2, 250], dtype=torch.uint8)),
        ("small", torch.tensor([-3, 4], dtype=torch.int16)),
        ("empty", torch.zeros(0, 5)),
    ])


def _same(a, b):
    assert a.dtype is b.dtype and tuple(a.shape) == tuple(b.shape)
    np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_round_trip_flat_state_dict(tmp_path):
    sd = _state_dict()
    path = tmp_path / "model.safetensors"
    save_safetensors(sd, path)
    back = torch.load(path)
    assert list(back) == list(sd)
    for k in sd:
        _same(back[k], sd[k])
    back["layer.weight"].add_(1.0)      # loaded tensors own writable memory
    assert not np.array_equal(back["layer.weight"].numpy(), sd["layer.weight"].numpy())


def test_file_layout_is_safetensors(tmp_path):
    path = tmp_path / "m.safetensors"
    save_safetensors({"a": torch.tensor([1.0, 2.0]), "b": torch.tensor([[1, 2]], dtype=torch.int32)}, path)
    raw = path.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    assert n % 8 == 0
    header = json.loads(raw[8:8 + n])
    assert header["__metadata__"] == {"format": "pt"}
    assert header["a"] == {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}
    assert header["b"] == {"dtype": "I32", "shape": [1, 2], "data_offsets": [8, 16]}
    assert raw[8 + n:8 + n + 8] == np.array([1.0, 2.0], "<f4").tobytes()
    assert len(raw) == 8 + n + 16


def test_nested_checkpoint_round_trip(tmp_path):
    p = torch.tensor([1.0, 2.0], requires_grad=True)
    opt = torch.optim.Adam([p], lr=0.01)
    p.grad = torch.tensor([0.5, -0.5])
    opt.step()
    ck = {"model": _state_dict(), "optimizer": opt.state_dict(), "epoch": 3, "best": float("inf"),
          "history": [0.5, 0.25], "name": "run-1", "note": None, "flags": (True, False), "dtype": torch.float64,
          "nan": float("nan"), "pair": (torch.tensor([1]), 2)}
    path = tmp_path / "ck.safetensors"
    save_safetensors(ck, path)
    back = torch.load(path)
    assert set(back) == set(ck)
    assert isinstance(back["model"], collections.OrderedDict) and list(back["model"]) == list(ck["model"])
    for k in ck["model"]:
        _same(back["model"][k], ck["model"][k])
    assert back["epoch"] == 3 and back["best"] == math.inf and math.isnan(back["nan"])
    assert back["history"] == [0.5, 0.25] and back["name"] == "run-1" and back["note"] is None
    assert back["flags"] == (True, False) and back["dtype"] is torch.float64
    assert isinstance(back["pair"], tuple) and back["pair"][1] == 2 and back["pair"][0].tolist() == [1]
    osd = back["optimizer"]
    assert list(osd["state"]) == [0]            # integer keys stay integers
    assert osd["param_groups"][0]["betas"] == (0.9, 0.999) and osd["param_groups"][0]["params"] == [0]
    _same(osd["state"][0]["exp_avg"], ck["optimizer"]["state"][0]["exp_avg"])
    _same(osd["state"][0]["step"], ck["optimizer"]["state"][0]["step"])


def test_file_objects(tmp_path):
    buf = io.BytesIO()
    save_safetensors({"x": torch.arange(3)}, buf)
    buf.seek(0)
    assert torch.load(buf)["x"].tolist() == [0, 1, 2]


def test_unsupported_values_are_refused(tmp_path):
    path = tmp_path / "x.safetensors"
    with pytest.raises(TypeError, match="got object at cfg"):
        save_safetensors({"cfg": object()}, path)
    with pytest.raises(ValueError, match="same key 'a.b'"):
        save_safetensors({"a": {"b": torch.zeros(1)}, "a.b": torch.zeros(1)}, path)
    assert not path.exists()
    assert os.listdir(tmp_path) == []       # no temporary file left behind


def test_missing_file():
    with pytest.raises(FileNotFoundError):
        torch.load("/nonexistent/dir/model.safetensors")


@pytest.mark.parametrize("damage,match", [
    (lambda raw: raw[:5], "not a valid checkpoint"),
    (lambda raw: raw[:20], "truncated"),
    (lambda raw: raw[:-3], "truncated"),
    (lambda raw: raw + b"xx", "cover .* bytes of data but the file holds"),
    (lambda raw: b"", "the file is empty"),
    (lambda raw: raw[:8] + b"[" + raw[9:], "not a valid checkpoint"),
    (lambda raw: raw[:9] + b"\xff" + raw[10:], "not valid JSON"),
    (lambda raw: raw[:12] + b"\xff" + raw[13:], "not valid JSON"),
    (lambda raw: b"PK\x03\x04" + raw[4:], "not a valid zip checkpoint"),
    (lambda raw: raw[:8] + b"x" + raw[9:], "not a valid checkpoint"),
    (lambda raw: b"\x80\x02}q\x00.", "Invalid magic number"),
    (lambda raw: struct.pack("<Q", 2 ** 40) + raw[8:], "not a valid checkpoint"),
])
def test_corrupt_files_raise_a_clear_error(tmp_path, damage, match):
    path = tmp_path / "m.safetensors"
    save_safetensors(_state_dict(), path)
    path.write_bytes(damage(path.read_bytes()))
    with pytest.raises(CheckpointError, match=match) as info:
        torch.load(path)
    assert str(path) in str(info.value)
    assert isinstance(info.value, RuntimeError)


def test_inconsistent_header_is_rejected(tmp_path):
    header = json.dumps({"x": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}}).encode()
    path = tmp_path / "bad.safetensors"
    path.write_bytes(struct.pack("<Q", len(header)) + header + b"\0" * 8)
    with pytest.raises(CheckpointError, match="needs 12 bytes"):
        torch.load(path)


def test_failed_save_keeps_the_old_file(tmp_path, monkeypatch):
    path = tmp_path / "model.safetensors"
    save_safetensors({"v": torch.tensor([1.0])}, path)
    old = path.read_bytes()

    def fail(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(OSError, match="disk full"):
        save_safetensors({"v": torch.tensor([2.0])}, path)
    monkeypatch.undo()
    assert path.read_bytes() == old
    assert os.listdir(tmp_path) == ["model.safetensors"]


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root ignores directory permissions")
def test_unwritable_directory_keeps_the_old_file(tmp_path):
    path = tmp_path / "model.safetensors"
    save_safetensors({"v": torch.tensor([1.0])}, path)
    old = path.read_bytes()
    os.chmod(tmp_path, 0o555)
    try:
        with pytest.raises(PermissionError):
            save_safetensors({"v": torch.tensor([2.0])}, path)
    finally:
        os.chmod(tmp_path, 0o755)
    assert path.read_bytes() == old


def test_directory_that_does_not_exist(tmp_path):
    with pytest.raises(FileNotFoundError):
        save_safetensors({"v": torch.tensor([1.0])}, tmp_path / "missing" / "model.safetensors")


def test_saved_file_gets_normal_permissions(tmp_path):
    path = tmp_path / "model.safetensors"
    save_safetensors({"v": torch.tensor([1.0])}, path)
    mask = os.umask(0)
    os.umask(mask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~mask


# ------------------------------------------------------------------ interop with the safetensors package

def test_safetensors_reads_ours(tmp_path):
    st = pytest.importorskip("safetensors.numpy")
    sd = _state_dict()
    path = tmp_path / "ours.safetensors"
    save_safetensors(sd, path)
    theirs = st.load_file(str(path))
    assert set(theirs) == set(sd)
    for k, v in sd.items():
        assert theirs[k].shape == tuple(v.shape)
        np.testing.assert_array_equal(theirs[k], v.numpy())
    nested = tmp_path / "nested.safetensors"
    save_safetensors({"model": {"w": torch.ones(2)}, "step": 5}, nested)
    assert list(st.load_file(str(nested))) == ["model.w"]


def test_we_read_safetensors_files(tmp_path):
    st = pytest.importorskip("safetensors.numpy")
    arrays = {"w": np.arange(12, dtype=np.float32).reshape(3, 4), "i": np.array([1, -2], dtype=np.int64),
              "b": np.array([True, False]), "d": np.array(2.5), "u": np.array([1, 255], np.uint8),
              "e": np.zeros((0, 3), np.float32)}
    path = tmp_path / "theirs.safetensors"
    st.save_file(arrays, str(path), metadata={"format": "np"})
    back = torch.load(path)
    assert set(back) == set(arrays)
    for k, a in arrays.items():
        assert back[k].numpy().dtype == a.dtype and back[k].numpy().shape == a.shape
        np.testing.assert_array_equal(back[k].numpy(), a)


def test_half_precision_files_load_as_16_bit_tensors(tmp_path):
    st = pytest.importorskip("safetensors.numpy")
    path = tmp_path / "half.safetensors"
    st.save_file({"h": np.array([1.5, -2.0], np.float16)}, str(path))
    back = torch.load(path)
    assert back["h"].dtype is torch.float16 and back["h"].tolist() == [1.5, -2.0]
    save_safetensors({"h": back["h"], "b": back["h"].bfloat16()}, tmp_path / "ours.safetensors")
    again = torch.load(tmp_path / "ours.safetensors")
    assert again["h"].dtype is torch.float16 and again["b"].dtype is torch.bfloat16
    assert again["b"].tolist() == [1.5, -2.0]


def test_safetensors_torch_reads_ours_when_installed(tmp_path):
    real = pytest.importorskip("torch")
    if getattr(real, "__file__", "").startswith(str(torch.__path__[0])):
        pytest.skip("'torch' resolves to reftorch")
    st = pytest.importorskip("safetensors.torch")
    path = tmp_path / "ours.safetensors"
    save_safetensors(_state_dict(), path)
    theirs = st.load_file(str(path))
    np.testing.assert_array_equal(theirs["layer.weight"].numpy(), _state_dict()["layer.weight"].numpy())


# ---------------------------------------------------------------------------- devices and map_location
# (the cuda side -- saving a cuda tensor and getting it back on cuda -- runs in the simulator:
# tests/cuda/test_cuda_device.py::test_save_and_load_keep_the_device)

def _saved_on_cuda():
    """A checkpoint as reftorch writes it for {"w": <cuda tensor>, "n": <cpu tensor>}, made without a GPU."""
    from reftorch import _safetensors as serialization
    tensors = {"w": torch.tensor([1.5, -2.0]), "n": torch.tensor(3)}
    meta = {"format": "pt", "reftorch.devices": json.dumps({"w": "cuda:0"})}
    return serialization._encode(tensors, meta)


def test_cpu_checkpoints_carry_no_device_metadata():
    buf = io.BytesIO()
    save_safetensors({"w": torch.ones(2)}, buf)
    (n,) = struct.unpack("<Q", buf.getvalue()[:8])
    assert json.loads(buf.getvalue()[8:8 + n])["__metadata__"] == {"format": "pt"}


def test_a_cuda_checkpoint_without_cuda_needs_map_location():
    with pytest.raises(RuntimeError, match=r"Attempting to deserialize object on a CUDA device but "
                                           r"torch\.cuda\.is_available\(\) is False\. If you are running on a "
                                           r"CPU-only machine, please use torch\.load with "
                                           r"map_location=torch\.device\('cpu'\)"):
        torch.load(io.BytesIO(_saved_on_cuda()))


@pytest.mark.parametrize("where", ["cpu", torch.device("cpu"), {"cuda:0": "cpu"}, lambda storage, loc: storage])
def test_map_location_moves_a_cuda_checkpoint_to_the_cpu(where):
    got = torch.load(io.BytesIO(_saved_on_cuda()), map_location=where)
    assert got["w"].device.type == "cpu" and got["n"].device.type == "cpu"
    assert got["w"].tolist() == [1.5, -2.0] and got["n"].item() == 3


def test_map_location_callable_sees_each_saved_location():
    seen = []

    def where(storage, location):
        seen.append(location)
        return storage if location != "cpu" else None     # None: the default place (the saved one)
    got = torch.load(io.BytesIO(_saved_on_cuda()), map_location=where)
    assert sorted(seen) == ["cpu", "cuda:0"] and got["w"].device.type == "cpu"


def test_map_location_names_are_checked_and_corrupt_device_metadata_is_named(tmp_path):
    buf = _saved_on_cuda()
    with pytest.raises(RuntimeError):
        torch.load(io.BytesIO(buf), map_location="tpu")
    if not torch.cuda.is_available():
        with pytest.raises(RuntimeError, match="CUDA"):
            torch.load(io.BytesIO(buf), map_location="cuda")
    from reftorch import _safetensors as serialization
    bad = serialization._encode({"w": torch.ones(1)}, {"format": "pt", "reftorch.devices": "[1, 2"})
    path = tmp_path / "bad.safetensors"
    path.write_bytes(bad)
    with pytest.raises(CheckpointError, match=r"bad\.safetensors: the checkpoint's 'reftorch\.devices' metadata"):
        torch.load(path)
