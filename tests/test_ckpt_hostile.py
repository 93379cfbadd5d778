"""Malformed and hostile checkpoints (issue 17's bad files, issue 20 point 3): each raises
reftorch.serialization.CheckpointError naming the file and the problem, reads no more than the file
holds, and returns only tensors and plain data. Hypothesis mutates safetensors headers and the
records of torch's zip format (bounded examples)."""
import collections
import io
import json
import os
import struct

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import reftorch as torch
from reftorch import nn
from reftorch._pickle_format import LoadedStorage
from reftorch._tensor import Storage, Tensor
from reftorch._zip_format import ZipWriter
from reftorch.serialization import CheckpointError, save_safetensors

FUZZ = settings(max_examples=int(os.environ.get("REFTORCH_EXAMPLES", 40)), deadline=None,
                derandomize=os.environ.get("REFTORCH_FUZZ_RANDOM") is None,      # CI: the same examples each run
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


class CountingBytesIO(io.BytesIO):
    """A file object that records the largest read it was asked for."""
    name = "counted.pt"

    def __init__(self, data):
        super().__init__(data)
        self.largest = 0

    def read(self, n=-1):
        self.largest = max(self.largest, len(self.getbuffer()) if n is None or n < 0 else n)
        return super().read(n)

    def readinto(self, b):
        self.largest = max(self.largest, len(b))
        return super().readinto(b)


def _load_bytes(data, **kw):
    """load() of these bytes: the result, or the CheckpointError it raised (anything else fails the test);
    no read asks for more than the file holds."""
    f = CountingBytesIO(data)
    try:
        return torch.load(f, **kw)
    except CheckpointError as err:
        assert "counted.pt" in str(err), str(err)
        return err
    finally:
        assert f.largest <= max(len(data), 9)


def _good_zip():
    buf = io.BytesIO()
    base = torch.arange(6.0)
    torch.save({"w": base.view(2, 3), "b": base[1:4], "n": torch.tensor(3), "cfg": {"lr": 0.1, "betas": (0.9, 0.99)}},
               buf)
    return buf.getvalue()


def _archive(records):
    """A zip checkpoint of the given {name: bytes} records (valid CRCs), in torch's layout."""
    buf = io.BytesIO()
    z = ZipWriter(buf, "archive")
    for name, data in records.items():
        z.write_record(name, data)
    z.close()
    return buf.getvalue()


def _records_of(raw):
    import zipfile
    z = zipfile.ZipFile(io.BytesIO(raw))
    return {i.filename.split("/", 1)[1]: z.read(i) for i in z.infolist()}


# ---------------------------------------------------------------------------- files that are not checkpoints

def test_dev_zero_a_directory_and_a_missing_path(tmp_path):
    if os.path.exists("/dev/zero"):
        with pytest.raises(CheckpointError, match="/dev/zero: not a regular file"):
            torch.load("/dev/zero")
        with open("/dev/zero", "rb") as f:          # as a file object it has no size: nothing is read
            with pytest.raises(CheckpointError, match="empty"):
                torch.load(f)
    with pytest.raises(IsADirectoryError, match=str(tmp_path)):
        torch.load(tmp_path)
    with pytest.raises(FileNotFoundError, match="nope.pt"):
        torch.load(tmp_path / "nope.pt")


def test_unseekable_file_objects_get_torchs_message():
    r, w = os.pipe()
    os.write(w, _good_zip()[:100])
    os.close(w)
    with open(r, "rb", buffering=0) as f:
        with pytest.raises(OSError, match="You can only torch.load from a file that is seekable"):
            torch.load(f)


@pytest.mark.parametrize("data,match", [
    (b"", "the file is empty"),
    (b"hello world, not a checkpoint", "not a valid checkpoint"),
    (b"PK\x03\x04" + b"\0" * 40, "not a valid zip checkpoint"),
    (b"\x80\x02K\x01.", "Invalid magic number"),
    (b"\0" * 600 + b"ustar", "not a valid checkpoint"),
])
def test_other_formats(data, match):
    err = _load_bytes(data)
    assert isinstance(err, CheckpointError) and match in str(err), err


# ---------------------------------------------------------------------------- torch's zip format, damaged

def test_truncated_archives():
    raw = _good_zip()
    for cut in list(range(0, len(raw), 37)) + [len(raw) - 1]:
        err = _load_bytes(raw[:cut])
        assert isinstance(err, CheckpointError), (cut, err)


def test_records_missing_short_or_corrupt():
    recs = _records_of(_good_zip())
    missing = {k: v for k, v in recs.items() if k != "data/0"}
    assert "has no record 'archive/data/0'" in str(_load_bytes(_archive(missing)))
    short = dict(recs, **{"data/0": recs["data/0"][:-4]})
    assert "has 20 bytes; the pickle expects 24" in str(_load_bytes(_archive(short)))
    cut_pickle = dict(recs, **{"data.pkl": recs["data.pkl"][:-30]})
    assert "ends early" in str(_load_bytes(_archive(cut_pickle)))
    no_pickle = {k: v for k, v in recs.items() if k != "data.pkl"}
    assert "has no record 'archive/data.pkl'" in str(_load_bytes(_archive(no_pickle)))
    raw = bytearray(_good_zip())
    at = raw.index(np.arange(6.0, dtype=np.float32).tobytes())
    raw[at] ^= 0xFF                                     # a flipped bit in a storage
    assert "fails its CRC-32 check" in str(_load_bytes(bytes(raw)))
    bad_order = dict(recs, byteorder=b"middle")
    assert "Unknown endianness type" in str(_load_bytes(_archive(bad_order)))


def test_big_endian_archives_are_swapped():
    recs = _records_of(_good_zip())
    swapped = np.frombuffer(recs["data/0"], "<f4").astype(">f4").tobytes()
    back = _load_bytes(_archive(dict(recs, byteorder=b"big", **{"data/0": swapped})))
    assert back["w"].tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]


def test_tensors_that_reach_past_their_storage():
    small = Storage(np.zeros(4, np.float32))
    for offset, shape, strides in ((10, (2,), (1,)), (0, (3, 3), (3, 1)), (3, (2,), (1,)), (0, (2, 2), (10, 1))):
        buf = io.BytesIO()
        torch.save(Tensor._make(small, offset, shape, strides, torch.float32), buf)
        err = _load_bytes(buf.getvalue())
        assert isinstance(err, CheckpointError) and "but its storage has 4" in str(err), err


@pytest.mark.parametrize("shape,strides,match", [
    ((2 ** 62,), (1,), "needs 4611686018427387904 elements but its storage has 4"),
    ((True,), (1,), "must be a tuple of ints"),
    ((2, -1), (1, 1), "negative size"),
    ((2 ** 64, 0), (1, 1), "beyond int64"),
])
def test_impossible_tensor_shapes(shape, strides, match):
    buf = io.BytesIO()
    torch.save([Tensor._make(Storage(np.zeros(4, np.float32)), 0, shape, strides, torch.float32)], buf)
    err = _load_bytes(buf.getvalue())
    assert isinstance(err, CheckpointError) and match in str(err), err


def test_truncated_legacy_files():
    buf = io.BytesIO()
    base = torch.arange(6.0)
    torch.save({"w": base, "v": base[2:], "n": torch.tensor(3)}, buf, _use_new_zipfile_serialization=False)
    raw = buf.getvalue()
    for cut in list(range(1, len(raw), 23)) + [len(raw) - 1]:
        err = _load_bytes(raw[:cut])
        assert isinstance(err, CheckpointError), (cut, err)
    assert _load_bytes(raw)["v"].tolist() == [2.0, 3.0, 4.0, 5.0]


def test_sizes_claimed_far_beyond_the_file():
    recs = _records_of(_good_zip())
    pkl = recs["data.pkl"]
    huge = pkl.replace(b"K\x06t", b"\x8a\x08" + (2 ** 60).to_bytes(8, "little") + b"t", 1)   # numel 2**60
    assert huge != pkl
    err = _load_bytes(_archive(dict(recs, **{"data.pkl": huge})))
    assert "has 24 bytes; the pickle expects 4611686018427387904" in str(err), err


def _pickle_with(tail):
    """A data.pkl of protocol 2 whose object is built by the given opcodes."""
    return b"\x80\x02" + tail + b"."


@pytest.mark.parametrize("tail,match", [
    (b"cbuiltins\neval\n", "GLOBAL eval was not an allowed global"),
    (b"cos\nsystem\n", "whose module os is blocked"),
    (b"creftorch\nnn\n", "GLOBAL reftorch.nn was not an allowed global"),
    (b"ctorch\nTensor\n", None),                                    # a class object alone is data
    (b"ccollections\nOrderedDict\n)R(K\x01K\x02K\x03u", "odd number of items"),
    (b"]K\x01a(K\x02K\x03e", None),
    (b"]K\x01a(K\x02K\x03l", "Unsupported operand 108"),
    (b"ctorch\nfloat32\n)R", "Trying to call reduce for unrecognized function"),
    (b"cbuiltins\nbytearray\nJ\x00\x00\x00\x40\x85R", "bytearray(size)"),
    (b"ctorch\nfloat8_e4m3fn\n", "dtype torch.float8_e4m3fn, which reftorch does not have"),
    (b"ctorch\ndevice\nX\x03\x00\x00\x00tpu\x85R", "a device"),
    (b"c_codecs\nencode\nX\x01\x00\x00\x00aX\x03\x00\x00\x00bad\x86R", "corrupt or holds values"),
    (b"h\x05", "memo entry 5 read before"),
    (b"K\x01K\x02", None),
    (b"\x95", "Unsupported operand 149"),
    (b"t", "corrupt"),
    (b"", "corrupt"),
    (b"}K\x01K\x02s}b", "Can only build"),
])
def test_hostile_pickles_raise_the_checkpoint_error(tail, match):
    recs = _records_of(_good_zip())
    err = _load_bytes(_archive(dict(recs, **{"data.pkl": _pickle_with(tail)})))
    if match is None:
        assert not isinstance(err, Exception), err
    else:
        assert isinstance(err, CheckpointError) and match in str(err), err


def test_deeply_nested_pickles_do_not_recurse():
    deep = b"]" * 50_000 + b"a" * 49_999
    recs = _records_of(_good_zip())
    got = _load_bytes(_archive(dict(recs, **{"data.pkl": _pickle_with(deep)})))
    depth = 0
    while isinstance(got, list) and got:
        got, depth = got[0], depth + 1
    assert depth == 49_999


@FUZZ
@given(st.data())
def test_fuzz_zip_bytes(data):
    raw = bytearray(_good_zip())
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(raw) - 1))
        raw[at] = data.draw(st.integers(0, 255))
    got = _load_bytes(bytes(raw))
    assert isinstance(got, (dict, CheckpointError)), got


@FUZZ
@given(st.data())
def test_fuzz_data_pkl_with_valid_crcs(data):
    recs = _records_of(_good_zip())
    pkl = bytearray(recs["data.pkl"])
    for _ in range(data.draw(st.integers(1, 3))):
        at = data.draw(st.integers(0, len(pkl) - 1))
        pkl[at] = data.draw(st.integers(0, 255))
    got = _load_bytes(_archive(dict(recs, **{"data.pkl": bytes(pkl)})))
    _only_plain_data(got)


def _only_plain_data(obj):
    """A load returns tensors and plain data: nothing callable, no module, no class but data types."""
    todo, seen = [obj], set()
    while todo:
        x = todo.pop()
        if id(x) in seen:
            continue
        seen.add(id(x))
        if isinstance(x, (dict, collections.Counter)):
            todo.extend(x.keys())
            todo.extend(x.values())
        elif isinstance(x, (list, tuple, set, frozenset)):
            todo.extend(x)
        else:
            assert x is None or isinstance(x, _PLAIN) or x in (Tensor, nn.Parameter, torch.Size), type(x)


_PLAIN = (CheckpointError, Tensor, LoadedStorage, bool, int, float, complex, str, bytes, bytearray, torch.dtype,
          torch.device)


# ---------------------------------------------------------------------------- safetensors headers

def _safetensors(header, data=b""):
    text = json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text + data


@pytest.mark.parametrize("header,match", [
    ({"x": {"dtype": ["F32"], "shape": [1], "data_offsets": [0, 4]}}, "unknown dtype"),
    ({"x": {"dtype": {"a": 1}, "shape": [1], "data_offsets": [0, 4]}}, "unknown dtype"),
    ({"x": {"dtype": "F32", "shape": [True], "data_offsets": [0, 4]}}, "invalid shape"),
    ({"x": {"dtype": "F32", "shape": [2 ** 62], "data_offsets": [0, 4]}}, "needs"),
    ({"x": {"dtype": "F32", "shape": [2 ** 31, 2 ** 31], "data_offsets": [0, 2 ** 64]}}, "cover"),
    ({"x": {"dtype": "F32", "shape": [1], "data_offsets": [0, True]}}, "invalid data_offsets"),
    ({"x": {"dtype": "F32", "shape": [1], "data_offsets": [4, 0]}}, "invalid data_offsets"),
    ({"x": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}, "__metadata__": {"a": 1}}, "must map strings"),
    ({"x": [1, 2]}, "must have dtype, shape and data_offsets"),
])
def test_hostile_safetensors_entries(header, match):
    err = _load_bytes(_safetensors(header, b"\0" * 4))
    assert isinstance(err, CheckpointError) and match in str(err), err


def test_safetensors_header_nested_50000_levels():
    text = b"{" + b'"a":[' * 50_000 + b"]" * 50_000 + b"}"
    err = _load_bytes(struct.pack("<Q", len(text)) + text)
    assert isinstance(err, CheckpointError) and "not valid JSON" in str(err), err


def _with_tree(tree):
    meta = {"format": "pt", "reftorch.tree": tree if isinstance(tree, str) else json.dumps(tree)}
    return _safetensors({"__metadata__": meta, "t": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}},
                        b"\0" * 4)


@pytest.mark.parametrize("tree", [
    {"dtype": "nn"}, {"dtype": "Tensor"}, {"dtype": "load"}, {"dtype": "serialization.os"}, {"dtype": 3},
    {"dict": 5}, {"dict": [[1]]}, {"dict": [[[1], {"v": 1}]]}, [1, 2], {"t": 5}, {"t": "missing"},
    {"v": {"a": 1}}, {"list": {"a": 1}}, {"tuple": 3}, {"odict": [[{"x": 1}, {"v": 1}]]}, {"zz": 1},
    {"v": 1, "t": "t"}, "[" * 50_000 + "]" * 50_000,
])
def test_hostile_tree_metadata(tree):
    err = _load_bytes(_with_tree(tree))
    assert isinstance(err, CheckpointError) and "metadata is corrupt" in str(err), err


def test_tree_dtypes_are_only_dtypes():
    assert _load_bytes(_with_tree({"dtype": "torch.bfloat16"})) is torch.bfloat16


_json_leaf = st.one_of(st.none(), st.booleans(), st.integers(-2 ** 70, 2 ** 70), st.floats(allow_nan=False),
                       st.text(max_size=6))


def _json_containers(inner):
    return st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=4), inner, max_size=4))


_json = st.recursive(_json_leaf, _json_containers, max_leaves=12)


@FUZZ
@given(st.data())
def test_fuzz_safetensors_headers(data):
    buf = io.BytesIO()
    save_safetensors({"model": {"w": torch.arange(4.0)}, "step": 3, "opt": [torch.ones(2, dtype=torch.int8)]}, buf)
    raw = buf.getvalue()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    path = data.draw(st.lists(st.sampled_from(sorted(header)), min_size=1, max_size=1))[0]
    target = header[path]
    if isinstance(target, dict) and target:
        field = data.draw(st.sampled_from(sorted(target)))
        target[field] = data.draw(_json)
    else:
        header[path] = data.draw(_json)
    got = _load_bytes(_safetensors(header, raw[8 + n:]))
    _only_plain_data(got)


@FUZZ
@given(st.data())
def test_fuzz_legacy_bytes(data):
    buf = io.BytesIO()
    base = torch.arange(6.0)
    torch.save({"w": base, "v": base[2:], "cfg": [1, "a", None]}, buf, _use_new_zipfile_serialization=False)
    raw = bytearray(buf.getvalue())
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(raw) - 1))
        raw[at] = data.draw(st.integers(0, 255))
    _only_plain_data(_load_bytes(bytes(raw)))
