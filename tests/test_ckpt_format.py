"""reftorch.save / reftorch.load in PyTorch's checkpoint format (issue 17).

Reading: the fixtures in tests/fixtures/torch_ckpt/ were written by torch 2.13
(tests/fixtures/make_torch_checkpoints.py). Writing: what reftorch.save writes is taken apart with
zipfile and a restricted pickle reader of this file's own (independent of reftorch's loader), and
compared byte for byte with the fixture torch wrote for the same tensors. Where real torch is
installed, it loads what reftorch writes (weights_only=True) and the other way round.
"""
import collections
import io
import json
import os
import pathlib
import pickle
import pickletools
import subprocess
import sys
import zipfile

import numpy as np
import pytest

import reftorch as torch
from reftorch import nn
from reftorch.serialization import CheckpointError

FIXTURES = pathlib.Path(__file__).parent / "fixtures" / "torch_ckpt"
DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]
# the globals torch's weights-only unpickler allows that reftorch's writer uses
TORCH_GLOBALS = {"collections OrderedDict", "torch._utils _rebuild_tensor_v2", "torch._utils _rebuild_parameter",
                 "torch Size", "torch device", "_codecs encode", "__builtin__ set"} | \
                {f"torch {d}" for d in DTYPES} | \
                {f"torch {s}Storage" for s in ("Bool", "Byte", "Char", "Short", "Int", "Long", "Half", "BFloat16",
                                               "Float", "Double")}


def _tensors():
    """reftorch's twin of make_torch_checkpoints.tensors()."""
    base = torch.arange(24, dtype=torch.float32)
    grid = base.view(4, 6)
    out = {d: (torch.arange(6) - 2).to(getattr(torch, d)).reshape(2, 3) for d in DTYPES}
    out.update(base=base, grid=grid, t=grid.t(), cols=grid[:, 1::2], tail=base[20:], scalar=torch.tensor(2.5),
               empty=torch.zeros(0, 3), long0=torch.tensor(7), param=nn.Parameter(torch.ones(2)))
    return out


def _check_tensors(got):
    """The values, layouts and sharing of _tensors() / the tensors.pt fixture."""
    for d in DTYPES:
        t = got[d]
        assert t.dtype is getattr(torch, d) and tuple(t.shape) == (2, 3)
        expect = (np.arange(6) - 2).astype(t.dtype.np) if d != "bool" else (np.arange(6) - 2) != 0
        np.testing.assert_array_equal(t.numpy().reshape(-1), expect)
    np.testing.assert_array_equal(got["cols"].numpy(), np.arange(24.0).reshape(4, 6)[:, 1::2])
    assert got["cols"].stride() == (6, 2) and got["cols"].storage_offset() == 1
    assert got["t"].stride() == (1, 6) and got["tail"].storage_offset() == 20
    assert got["scalar"].dim() == 0 and got["scalar"].item() == 2.5
    assert tuple(got["empty"].shape) == (0, 3) and got["long0"].dtype is torch.int64
    assert isinstance(got["param"], nn.Parameter) and got["param"].requires_grad
    got["base"][7] = -1.0                   # views share one storage after loading
    assert got["grid"][1, 1].item() == -1.0 and got["t"][1, 1].item() == -1.0 and got["cols"][1, 0].item() == -1.0


# ---------------------------------------------------------------------------- reading what torch wrote

@pytest.mark.parametrize("name", ["tensors.pt", "legacy.pt"])
def test_reads_torch_files_zip_and_legacy(name):
    _check_tensors(torch.load(FIXTURES / name))


def test_reads_a_torch_state_dict_into_a_module():
    sd = torch.load(FIXTURES / "state_dict.pt")
    assert isinstance(sd, collections.OrderedDict) and sd._metadata[""] == {"version": 1}
    m = nn.Sequential(nn.Linear(3, 2), nn.BatchNorm1d(2))
    assert m.load_state_dict(sd) == nn.modules.module._IncompatibleKeys([], [])
    np.testing.assert_array_equal(m[0].weight.detach().numpy(), np.arange(6.0).reshape(2, 3) * 0.25)
    np.testing.assert_array_equal(m[0].bias.detach().numpy(), np.arange(2.0) * 0.25 - 1)
    assert m[1].running_mean.tolist() == [0.5, 0.5] and m[1].num_batches_tracked.item() == 3


def _walk(obj, prefix=""):
    if isinstance(obj, torch.Tensor):
        yield prefix, obj
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield from _walk(v, f"{prefix}.{k}" if prefix else str(k))
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            yield from _walk(v, f"{prefix}.{i}" if prefix else str(i))


def test_reads_a_nanogpt_style_checkpoint_exactly():
    ck = torch.load(FIXTURES / "nanogpt.pt")
    expected = json.loads((FIXTURES / "expected.json").read_text())["nanogpt.pt"]
    got = dict(_walk(ck))
    assert set(got) == set(expected)
    for path, facts in expected.items():
        t = got[path]
        assert str(t.dtype) == facts["dtype"] and list(t.shape) == facts["shape"], path
        assert list(t.stride()) == facts["stride"] and t.storage_offset() == facts["offset"], path
        np.testing.assert_array_equal(t.double().numpy(), np.array(facts["values"], dtype=np.float64), path)
    assert ck["model_args"] == {"n_layer": 2, "n_embd": 3, "bias": True, "dropout": 0.0, "vocab_size": None}
    assert ck["iter_num"] == 7 and ck["config"] == {"name": "run", "betas": (0.9, 0.95)}
    model = nn.Sequential(nn.Linear(3, 2), nn.BatchNorm1d(2))
    model.load_state_dict(ck["model"])
    opt = torch.optim.AdamW(model.parameters(), lr=0.01)
    opt.load_state_dict(ck["optimizer"])
    assert opt.param_groups[0]["lr"] == 0.01 and opt.state_dict()["state"][0]["step"].item() == 1


def test_mmap_maps_the_storages_and_leaves_the_file_alone(tmp_path):
    path = tmp_path / "t.pt"
    path.write_bytes((FIXTURES / "tensors.pt").read_bytes())
    got = torch.load(path, mmap=True)
    arr = got["base"]._storage.data
    while arr is not None and not isinstance(arr, np.memmap):
        arr = arr.base
    assert isinstance(arr, np.memmap)           # the storage is a view of the mapped file
    _check_tensors(got)                     # (writes to the mapped copy)
    assert path.read_bytes() == (FIXTURES / "tensors.pt").read_bytes()
    with pytest.raises(ValueError, match="f must be a file path in order to use the mmap argument"):
        torch.load(io.BytesIO(path.read_bytes()), mmap=True)
    with pytest.raises(RuntimeError, match="mmap can only be used with files saved with"):
        torch.load(FIXTURES / "legacy.pt", mmap=True)


@pytest.mark.parametrize("where", ["cpu", torch.device("cpu"), {"cpu": "cpu"}, lambda storage, loc: storage,
                                   lambda storage, loc: None, lambda storage, loc: storage.cpu()])
def test_map_location_forms(where):
    _check_tensors(torch.load(FIXTURES / "tensors.pt", map_location=where))


def test_map_location_callable_sees_storages_and_locations():
    seen = []

    def where(storage, location):
        seen.append((location, len(storage), storage.dtype))
        return storage
    torch.load(FIXTURES / "tensors.pt", map_location=where)
    assert ("cpu", 24, torch.float32) in seen and all(loc == "cpu" for loc, _, _ in seen)
    with pytest.raises(RuntimeError, match=r"Attempting to deserialize object on a CUDA device"):
        if torch.cuda.is_available():
            raise RuntimeError("Attempting to deserialize object on a CUDA device (skipped: cuda is here)")
        torch.load(FIXTURES / "tensors.pt", map_location="cuda")


def test_a_torch_pickled_module_loads_only_when_asked():
    with pytest.raises(pickle.UnpicklingError, match=r"Unsupported global: GLOBAL torch\.nn\.modules\.container\."
                                                     r"Sequential was not an allowed global by default"):
        torch.load(FIXTURES / "module.pt")
    m = torch.load(FIXTURES / "module.pt", weights_only=False).eval()
    lin, bn = m[0], m[1]
    assert isinstance(lin, nn.Linear) and isinstance(bn, nn.BatchNorm1d) and isinstance(lin.weight, nn.Parameter)
    x = torch.tensor([[1.0, -2.0], [0.5, 3.0]])
    y = x.numpy() @ lin.weight.detach().numpy().T + lin.bias.detach().numpy()
    expect = (y - bn.running_mean.numpy()) / np.sqrt(bn.running_var.numpy() + bn.eps) * bn.weight.detach().numpy() \
        + bn.bias.detach().numpy()
    np.testing.assert_allclose(m(x).detach().numpy(), expect, rtol=1e-6)


@pytest.mark.parametrize("name,message", [
    ("evil_system.pt", r"Trying to load unsupported GLOBAL posix\.system whose module posix is blocked"),
    ("evil_exec.pt", r"Unsupported global: GLOBAL exec was not an allowed global by default\. Please use "
                     r"`torch\.serialization\.add_safe_globals\(\[exec\]\)`"),
])
def test_malicious_torch_pickles_raise_and_run_nothing(tmp_path, monkeypatch, name, message):
    monkeypatch.chdir(tmp_path)             # the payloads create ./reftorch_marker
    with pytest.raises(pickle.UnpicklingError, match=message) as info:
        torch.load(FIXTURES / name)
    assert "Weights only load failed" in str(info.value) and "weights_only` set to `False`" in str(info.value)
    assert name in str(info.value)
    assert not (tmp_path / "reftorch_marker").exists()


def test_safe_globals_opt_in_runs_only_what_was_allowed(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with torch.serialization.safe_globals([exec]):
        assert exec in torch.serialization.get_safe_globals()
        torch.load(FIXTURES / "evil_exec.pt")
    assert (tmp_path / "reftorch_marker").exists()      # the explicit choice, as in torch
    assert torch.serialization.get_safe_globals() == []
    with pytest.raises(pickle.UnpicklingError):
        torch.load(FIXTURES / "evil_system.pt")         # posix stays blocked even if allowlisted
    torch.serialization.add_safe_globals([os.system])
    try:
        with pytest.raises(pickle.UnpicklingError, match="blocked"):
            torch.load(FIXTURES / "evil_system.pt")
    finally:
        torch.serialization.clear_safe_globals()
    assert torch.serialization.get_safe_globals() == []


# ---------------------------------------------------------------------------- what reftorch writes

def _records(raw):
    z = zipfile.ZipFile(io.BytesIO(raw))
    return z, [i.filename for i in z.infolist()]


def _torch_twin_model():
    """reftorch's twin of make_torch_checkpoints.model()."""
    m = nn.Sequential(nn.Linear(3, 2), nn.BatchNorm1d(2))
    with torch.no_grad():
        for i, p in enumerate(m.parameters()):
            p.copy_(torch.arange(p.numel(), dtype=torch.float32).reshape(p.shape) * 0.25 - i)
    m[1].running_mean.fill_(0.5)
    m[1].num_batches_tracked.fill_(3)
    return m


@pytest.mark.parametrize("name", ["tensors.pt", "state_dict.pt"])
def test_written_files_are_byte_identical_to_torchs(tmp_path, name):
    """The same tensors saved under the same file name: every byte as torch 2.13 wrote it, the archive
    layout, the pickle, the padding and the serialization id (a hash of the record names and CRCs)."""
    obj = _tensors() if name == "tensors.pt" else _torch_twin_model().state_dict()
    torch.save(obj, tmp_path / name)
    ours, theirs = (tmp_path / name).read_bytes(), (FIXTURES / name).read_bytes()
    if ours != theirs:      # say where
        zr, zt = zipfile.ZipFile(io.BytesIO(ours)), zipfile.ZipFile(io.BytesIO(theirs))
        assert [i.filename for i in zr.infolist()] == [i.filename for i in zt.infolist()]
        for ir, it in zip(zr.infolist(), zt.infolist()):
            assert zr.read(ir) == zt.read(it), it.filename
            assert (ir.header_offset, ir.flag_bits, ir.extra) == (it.header_offset, it.flag_bits, it.extra)
    assert ours == theirs


def _independent_load(raw):
    """Rebuild the tensors of an archive with NumPy alone: zipfile for the records, pickle.Unpickler with
    a find_class that allows only torch's rebuild names (and returns its own rebuild functions)."""
    z = zipfile.ZipFile(io.BytesIO(raw))
    prefix = z.namelist()[0].split("/")[0] + "/"
    np_types = {"Float": "<f4", "Double": "<f8", "Long": "<i8", "Int": "<i4", "Short": "<i2", "Char": "i1",
                "Byte": "u1", "Bool": "?", "Half": "<f2", "BFloat16": "<u2"}

    def rebuild(storage, offset, size, stride, requires_grad, hooks):
        arr, _ = storage
        return np.lib.stride_tricks.as_strided(arr[offset:], size, [s * arr.itemsize for s in stride])

    class Restricted(pickle.Unpickler):
        def find_class(self, module, name):
            full = f"{module} {name}"
            assert full in TORCH_GLOBALS, full
            if name.endswith("Storage"):
                return np_types[name[:-len("Storage")]]
            return {"_rebuild_tensor_v2": rebuild, "_rebuild_parameter": lambda d, rg, h: ("param", d, rg),
                    "OrderedDict": collections.OrderedDict}.get(name, lambda *a: (name, a))

        def persistent_load(self, pid):
            kind, np_type, key, location, numel = pid
            assert kind == "storage" and location == "cpu"
            info = z.getinfo(f"{prefix}data/{key}")
            assert info.compress_type == zipfile.ZIP_STORED
            head = raw[info.header_offset:info.header_offset + 30]
            name_len, extra_len = int.from_bytes(head[26:28], "little"), int.from_bytes(head[28:30], "little")
            assert (info.header_offset + 30 + name_len + extra_len) % 64 == 0      # storages are 64-byte aligned
            arr = np.frombuffer(z.read(info), np_type)
            assert len(arr) == numel
            return arr, key

    data = z.read(prefix + "data.pkl")
    globals_used = {arg for op, arg, _ in pickletools.genops(data) if op.name == "GLOBAL"}
    assert globals_used <= TORCH_GLOBALS, globals_used - TORCH_GLOBALS
    assert z.read(prefix + "byteorder") == b"little" and z.read(prefix + "version") == b"3\n"
    return Restricted(io.BytesIO(data)).load()


def test_written_archive_read_back_independently():
    src = _tensors()
    buf = io.BytesIO()
    torch.save(src, buf)
    back = _independent_load(buf.getvalue())
    for k, t in src.items():
        got = back[k][1] if isinstance(back[k], tuple) else back[k]
        want = t.detach().numpy()
        if t.dtype is torch.bfloat16:
            want = want.view(np.uint16)
        np.testing.assert_array_equal(got, want, k)


@pytest.mark.parametrize("legacy", [False, True])
def test_round_trip_every_dtype_view_and_layout(legacy):
    buf = io.BytesIO()
    torch.save(_tensors(), buf, _use_new_zipfile_serialization=not legacy)
    buf.seek(0)
    _check_tensors(torch.load(buf))


def test_file_arguments_path_pathlib_and_open_files(tmp_path):
    x = {"w": torch.arange(3.0)}
    torch.save(x, str(tmp_path / "a.pt"))
    torch.save(x, tmp_path / "b.pth")
    with open(tmp_path / "c.pt", "wb") as f:
        torch.save(x, f)
    for name, folder in (("a.pt", "a"), ("b.pth", "b"), ("c.pt", "archive")):
        assert zipfile.ZipFile(tmp_path / name).namelist()[0] == f"{folder}/data.pkl"
        with open(tmp_path / name, "rb") as f:
            assert torch.load(f)["w"].tolist() == [0.0, 1.0, 2.0]
        assert torch.load(tmp_path / name)["w"].tolist() == [0.0, 1.0, 2.0]
    assert sorted(os.listdir(tmp_path)) == ["a.pt", "b.pth", "c.pt"]     # no temporary files left
    with pytest.raises(RuntimeError, match="invalid file name"):
        torch.save(x, tmp_path / ".pt")
    with pytest.raises(AttributeError, match="expected 'f' to be string, path, or a file-like object"):
        torch.save(x, 3)


def test_failed_save_keeps_the_previous_file(tmp_path):
    path = tmp_path / "ck.pt"
    torch.save({"v": torch.ones(2)}, path)
    old = path.read_bytes()
    with pytest.raises((pickle.PicklingError, AttributeError, TypeError)):
        torch.save({"v": torch.zeros(2), "f": lambda: 0}, path)
    assert path.read_bytes() == old and os.listdir(tmp_path) == ["ck.pt"]


def test_whole_module_and_numpy_round_trip_with_weights_only_false(tmp_path):
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    x = torch.randn(5, 3)
    model(x).sum().backward()
    torch.save(model, tmp_path / "model.pt")
    with pytest.raises(pickle.UnpicklingError, match=r"GLOBAL reftorch\.nn\.modules\.container\.Sequential"):
        torch.load(tmp_path / "model.pt")
    data = zipfile.ZipFile(tmp_path / "model.pt").read("model/data.pkl")
    used = {arg for op, arg, _ in pickletools.genops(data) if op.name == "GLOBAL"} - TORCH_GLOBALS
    assert all(g.startswith("reftorch.nn.modules.") for g in used), used       # classes only: no kernels, no plans
    back = torch.load(tmp_path / "model.pt", weights_only=False)
    np.testing.assert_array_equal(back(x).detach().numpy(), model(x).detach().numpy())
    assert back[0].weight.grad is None and back[0].weight.requires_grad      # no grads, no graph
    back(x).sum().backward()                                                  # and it trains
    assert back[0].weight.grad is not None
    arr = np.arange(6.0).reshape(2, 3)
    torch.save(arr, tmp_path / "arr.pt")
    np.testing.assert_array_equal(torch.load(tmp_path / "arr.pt", weights_only=False), arr)
    with pytest.raises(pickle.UnpicklingError, match="numpy"):
        torch.load(tmp_path / "arr.pt")


def test_pickled_tensors_carry_no_graph_or_cached_state():
    a = torch.ones(3, requires_grad=True)
    b = (a * 2).sum()
    buf = io.BytesIO()
    torch.save({"a": a, "b": b}, buf)
    globals_used = {arg for op, arg, _ in pickletools.genops(zipfile.ZipFile(buf).read("archive/data.pkl"))
                    if op.name == "GLOBAL"}
    assert globals_used <= TORCH_GLOBALS
    buf.seek(0)
    back = torch.load(buf)
    assert back["b"].grad_fn is None and back["b"].requires_grad and back["b"].item() == 6.0


def test_nanogpt_style_checkpoint_round_trip_and_resume(tmp_path):
    model = nn.Sequential(nn.Embedding(5, 3), nn.Linear(3, 5))
    opt = torch.optim.AdamW(model.parameters(), lr=0.1)
    for _ in range(2):
        opt.zero_grad()
        model(torch.tensor([1, 2])).sum().backward()
        opt.step()
    ck = {"model": model.state_dict(), "optimizer": opt.state_dict(),
          "model_args": {"n_layer": 1, "bias": False, "dropout": 0.1}, "iter_num": 2, "best_val_loss": 1e9,
          "config": {"dtype": "float32", "betas": (0.9, 0.99)}}
    torch.save(ck, tmp_path / "ckpt.pt")
    back = torch.load(tmp_path / "ckpt.pt", map_location="cpu")
    fresh = nn.Sequential(nn.Embedding(5, 3), nn.Linear(3, 5))
    fresh.load_state_dict(back["model"])
    opt2 = torch.optim.AdamW(fresh.parameters(), lr=0.1)
    opt2.load_state_dict(back["optimizer"])
    for m, o in ((model, opt), (fresh, opt2)):
        o.zero_grad()
        m(torch.tensor([3])).sum().backward()
        o.step()
    for p, q in zip(model.parameters(), fresh.parameters()):
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())
    assert back["model_args"] == ck["model_args"] and back["iter_num"] == 2 and back["config"] == ck["config"]


def test_load_state_dict_from_a_mismatched_checkpoint_leaves_the_module_alone(tmp_path):
    small = nn.Linear(3, 2)
    torch.save(small.state_dict(), tmp_path / "small.pt")
    big = nn.Linear(4, 2)
    before = {k: v.clone() for k, v in big.state_dict().items()}
    with pytest.raises(RuntimeError, match="size mismatch for weight"):
        big.load_state_dict(torch.load(tmp_path / "small.pt"))
    for k, v in big.state_dict().items():
        np.testing.assert_array_equal(v.numpy(), before[k].numpy())
    raw = (tmp_path / "small.pt").read_bytes()
    (tmp_path / "bad.pt").write_bytes(raw[:len(raw) // 2])
    with pytest.raises(CheckpointError, match="bad.pt"):
        small.load_state_dict(torch.load(tmp_path / "bad.pt"))


def test_safetensors_stays_one_call_away(tmp_path):
    sd = {"w": torch.arange(4.0).reshape(2, 2), "b": torch.tensor([1, 2], dtype=torch.int32)}
    torch.serialization.save_safetensors(sd, tmp_path / "m.safetensors")
    raw = (tmp_path / "m.safetensors").read_bytes()
    n = int.from_bytes(raw[:8], "little")
    assert json.loads(raw[8:8 + n])["w"] == {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]}
    path = tmp_path / "m.safetensors"
    for back in (torch.load(path), torch.serialization.load_safetensors(path), torch.load(path, mmap=True)):
        assert back["w"].tolist() == [[0.0, 1.0], [2.0, 3.0]] and back["b"].dtype is torch.int32


# ---------------------------------------------------------------------------- with real torch installed

_TORCH_CHECK = r"""
import io, sys, collections, numpy as np, torch
raw = sys.stdin.buffer.read()
got = torch.load(io.BytesIO(raw))             # weights_only=True, torch's default
dt = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]
for d in dt:
    want = (torch.arange(6) - 2).to(getattr(torch, d)).reshape(2, 3)
    assert got[d].dtype == want.dtype and got[d].tolist() == want.tolist(), d
assert got["cols"].stride() == (6, 2) and got["cols"].storage_offset() == 1 and got["t"].stride() == (1, 6)
assert got["t"].data_ptr() == got["base"].data_ptr()
assert got["cols"].untyped_storage().data_ptr() == got["base"].data_ptr()      # one storage, as saved
assert got["scalar"].dim() == 0 and got["empty"].shape == (0, 3) and isinstance(got["param"], torch.nn.Parameter)
ck = got["ck"]
assert isinstance(ck["model"], collections.OrderedDict) and ck["iter_num"] == 3 and ck["model_args"]["bias"] is True
m = torch.nn.Linear(3, 2); m.load_state_dict(ck["model"])
opt = torch.optim.AdamW(m.parameters()); opt.load_state_dict(ck["optimizer"])
assert got["misc"] == [torch.float16, torch.Size([2, 3]), torch.device("cpu"), {1, 2}, b"ab", 1 + 2j, (None, True, 0.5)]
assert got["attr"].note == "kept" and got["ptag"].tag == 5 and isinstance(got["ptag"], torch.nn.Parameter)
legacy = torch.load(io.BytesIO(got["legacy"]))
assert legacy[1].data_ptr() == legacy[0].data_ptr() + 8 and legacy[1].tolist() == [2.0, 3.0, 4.0]
buf = io.BytesIO(); torch.save({"x": torch.arange(5.)[1:], "l": torch.nn.Linear(2, 2).state_dict()}, buf)
sys.stdout.buffer.write(buf.getvalue())
"""


def _real_torch_python():
    """A Python with real torch: this one if 'torch' is PyTorch, else REFTORCH_TORCH_PYTHON."""
    exe = os.environ.get("REFTORCH_TORCH_PYTHON")
    if exe:
        return exe
    try:
        import torch as real
    except ImportError:
        return None
    return sys.executable if hasattr(real, "_C") else None


@pytest.mark.skipif(_real_torch_python() is None, reason="real torch is not installed (set REFTORCH_TORCH_PYTHON)")
def test_real_torch_loads_what_reftorch_writes_and_back():
    lin = nn.Linear(3, 2)
    opt = torch.optim.AdamW(lin.parameters())
    lin(torch.ones(1, 3)).sum().backward()
    opt.step()
    legacy = io.BytesIO()
    base = torch.arange(10.0)
    torch.save([base, base[2:5]], legacy, _use_new_zipfile_serialization=False)
    obj = dict(_tensors(), ck={"model": lin.state_dict(), "optimizer": opt.state_dict(), "iter_num": 3,
                               "model_args": {"bias": True}},
               misc=[torch.float16, torch.Size([2, 3]), torch.device("cpu"), {1, 2}, b"ab", 1 + 2j, (None, True, 0.5)],
               legacy=legacy.getvalue())
    obj["attr"], obj["ptag"] = torch.arange(2.0), nn.Parameter(torch.ones(1))
    obj["attr"].note, obj["ptag"].tag = "kept", 5
    buf = io.BytesIO()
    torch.save(obj, buf)
    env = dict(os.environ, PYTHONPATH="")
    proc = subprocess.run([_real_torch_python(), "-c", _TORCH_CHECK], input=buf.getvalue(), capture_output=True,
                          env=env, cwd="/", timeout=300)
    assert proc.returncode == 0, proc.stderr.decode()[-3000:]
    back = torch.load(io.BytesIO(proc.stdout))
    assert back["x"].tolist() == [1.0, 2.0, 3.0, 4.0] and back["x"].storage_offset() == 1
    nn.Linear(2, 2).load_state_dict(back["l"])


def test_zip64_records_read_back(monkeypatch):
    """Records and offsets past 4 GiB take zip64 fields: with the threshold lowered, every record does."""
    from reftorch import _zip_format
    monkeypatch.setattr(_zip_format, "_ZIP64_AT", 16)
    buf = io.BytesIO()
    torch.save(_tensors(), buf)
    z = zipfile.ZipFile(buf)
    assert z.testzip() is None
    assert any(i.extra[:2] == b"\x01\x00" for i in z.infolist())     # zip64 extra fields are there
    monkeypatch.undo()
    buf.seek(0)
    _check_tensors(torch.load(buf))


def test_compiled_modules_pickle_as_their_module(tmp_path):
    model = nn.Linear(3, 2)
    compiled = torch.compile(model)
    x = torch.ones(1, 3)
    compiled(x)
    torch.save(compiled, tmp_path / "c.pt")
    back = torch.load(tmp_path / "c.pt", weights_only=False)
    assert type(back) is type(compiled) and back(x).tolist() == compiled(x).tolist()


def test_tensor_attributes_and_subclasses_round_trip():
    t = torch.arange(3.0)
    t.note = "kept"
    p = nn.Parameter(torch.ones(2))
    p.tag = 5
    buf = io.BytesIO()
    torch.save({"t": t, "p": p}, buf)
    data = zipfile.ZipFile(buf).read("archive/data.pkl")
    used = {arg for op, arg, _ in pickletools.genops(data) if op.name == "GLOBAL"}
    assert used <= TORCH_GLOBALS | {"torch._tensor _rebuild_from_type_v2", "torch Tensor",
                                    "torch._utils _rebuild_parameter_with_state"}
    buf.seek(0)
    back = torch.load(buf)
    assert back["t"].note == "kept" and back["t"].tolist() == [0.0, 1.0, 2.0]
    assert isinstance(back["p"], nn.Parameter) and back["p"].tag == 5


def test_get_unsafe_globals_in_checkpoint():
    assert torch.serialization.get_unsafe_globals_in_checkpoint(FIXTURES / "tensors.pt") == []
    assert torch.serialization.get_unsafe_globals_in_checkpoint(FIXTURES / "evil_system.pt") == ["posix.system"]
    assert torch.serialization.get_unsafe_globals_in_checkpoint(FIXTURES / "evil_exec.pt") == ["builtins.exec"]
    assert torch.serialization.get_unsafe_globals_in_checkpoint(FIXTURES / "module.pt") == \
        ["torch.nn.modules.batchnorm.BatchNorm1d", "torch.nn.modules.container.Sequential",
         "torch.nn.modules.linear.Linear"]
    with pytest.raises(ValueError, match="Expected input to be a checkpoint returned by torch.save"):
        torch.serialization.get_unsafe_globals_in_checkpoint(FIXTURES / "legacy.pt")


def test_map_location_errors_are_the_callers():
    def broken(storage, location):
        raise KeyError("mine")
    with pytest.raises(KeyError, match="mine"):
        torch.load(FIXTURES / "tensors.pt", map_location=broken)
    with pytest.raises(TypeError, match="map_location returned a str"):
        torch.load(FIXTURES / "tensors.pt", map_location=lambda s, loc: "cpu")
    with pytest.raises(RuntimeError, match="Expected one of cpu, cuda device type"):
        torch.load(FIXTURES / "tensors.pt", map_location="tpu")


def test_legacy_saves_stream_one_after_another():
    buf = io.BytesIO()
    for i in range(3):
        torch.save({"i": torch.tensor(i)}, buf, _use_new_zipfile_serialization=False)
    buf.seek(0)
    assert [torch.load(buf)["i"].item() for _ in range(3)] == [0, 1, 2]


def test_whole_module_in_the_legacy_format(tmp_path):
    model = nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3), nn.Linear(3, 1))
    torch.save(model, tmp_path / "m.pt", _use_new_zipfile_serialization=False)
    back = torch.load(tmp_path / "m.pt", weights_only=False)
    x = torch.randn(4, 2)
    model.eval(), back.eval()
    np.testing.assert_array_equal(back(x).detach().numpy(), model(x).detach().numpy())
    with pytest.raises(pickle.UnpicklingError, match=r"GLOBAL reftorch\.nn\.modules\.container\.Sequential"):
        torch.load(tmp_path / "m.pt")


def test_serialization_id_hashes_match_libstdcxx():
    """Values from g++ (libstdc++): std::hash<std::string>, and the record-name hash torch's writer combines
    over a std::unordered_set of 3005 names (3000 storages: past eight rehashes)."""
    from reftorch._zip_format import _hash_combine, _std_hash, _unordered_set_order
    assert [_std_hash(s) for s in (b"", b"a", b"hello")] == [6142509188972423790, 4993892634952068459,
                                                             2762169579135187400]
    names = [b"data.pkl", b".format_version", b".storage_alignment", b"byteorder"] + \
        [f"data/{i}".encode() for i in range(3000)] + [b"version"]
    combined = 0
    for name in _unordered_set_order(names):
        combined = _hash_combine(combined, _std_hash(name))
    assert combined == 7460312898770484889


class _TaggedTensor(torch.Tensor):
    """A Tensor subclass a user would allowlist."""


def test_tensor_subclasses_need_an_allowlist_entry():
    t = torch.arange(3.0)
    t.__class__ = _TaggedTensor
    buf = io.BytesIO()
    torch.save({"t": t}, buf)
    buf.seek(0)
    with pytest.raises(pickle.UnpicklingError, match="GLOBAL test_ckpt_format._TaggedTensor was not an allowed"):
        torch.load(buf)
    with torch.serialization.safe_globals([_TaggedTensor]):
        buf.seek(0)
        back = torch.load(buf)["t"]
    assert type(back) is _TaggedTensor and back.tolist() == [0.0, 1.0, 2.0]
    buf.seek(0)
    assert type(torch.load(buf, weights_only=False)["t"]) is _TaggedTensor
