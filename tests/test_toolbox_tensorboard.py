"""SummaryWriter: the event files it writes, read back by TensorBoard's own EventAccumulator."""
import os
import struct
import zlib

import numpy as np
import pytest

import reftorch as torch

pytest.importorskip("tensorboard")
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator  # noqa: E402

from reftorch.utils.tensorboard import SummaryWriter  # noqa: E402


def _read(path):
    ea = EventAccumulator(str(path), size_guidance={"histograms": 0, "scalars": 0, "images": 0, "tensors": 0})
    ea.Reload()
    return ea


def _png_pixels(data):
    """Decode the PNGs the writer makes (8-bit, filter 0 rows) to HxWxC."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, header = 8, b"", None
    while pos < len(data):
        (n,), kind = struct.unpack(">I", data[pos:pos + 4]), data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + n]
        assert zlib.crc32(kind + body) & 0xFFFFFFFF == struct.unpack(">I", data[pos + 8 + n:pos + 12 + n])[0]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    w, h, _, color, *_ = header
    c = {0: 1, 2: 3, 6: 4}[color]
    raw = np.frombuffer(zlib.decompress(idat), dtype=np.uint8).reshape(h, 1 + w * c)
    assert (raw[:, 0] == 0).all()
    return raw[:, 1:].reshape(h, w, c)


def test_scalars_text_and_purge(tmp_path):
    with SummaryWriter(tmp_path) as w:
        for i in range(3):
            w.add_scalar("loss", 1.0 / (i + 1), i)
        w.add_scalar("t", torch.tensor(2.5), 7, walltime=123.0)
        w.add_scalar("new", np.float64(0.25), 1, new_style=True, double_precision=True)
        w.add_text("note", "hello **world**", 3)
    ea = _read(tmp_path)
    assert [(e.step, round(e.value, 6)) for e in ea.Scalars("loss")] == [(0, 1.0), (1, 0.5), (2, 0.333333)]
    assert ea.Scalars("t")[0].wall_time == 123.0 and ea.Scalars("t")[0].value == 2.5
    assert ea.Tensors("new")[0].tensor_proto.double_val == [0.25]
    assert ea.Tensors("note/text_summary")[0].tensor_proto.string_val == [b"hello **world**"]
    assert ea.SummaryMetadata("note/text_summary").plugin_data.plugin_name == "text"
    with pytest.raises(AssertionError, match="Tensor should contain one element"):
        SummaryWriter(tmp_path / "x").add_scalar("bad", torch.ones(2))


def test_add_scalars_runs(tmp_path):
    w = SummaryWriter(tmp_path)
    w.add_scalars("loss/all", {"train": 1.0, "val": torch.tensor(2.0)}, 0)
    w.add_scalars("loss/all", {"train": 0.5, "val": 1.5}, 1)
    w.close()
    assert {"loss_all_train", "loss_all_val"} <= set(os.listdir(tmp_path))
    assert [e.value for e in _read(tmp_path / "loss_all_val").Scalars("loss/all")] == [2.0, 1.5]


def test_histogram(tmp_path):
    values = torch.tensor([0.0, 1.0, 1.0, 2.0, 3.0, -1.0])
    with SummaryWriter(tmp_path) as w:
        w.add_histogram("h", values, 0)
        w.add_histogram("fixed", values, 1, bins=4)
        w.add_histogram("merged", np.arange(100.0), 2, bins=50, max_bins=10)
        with pytest.raises(ValueError, match="The input has no element."):
            w.add_histogram("empty", torch.ones(0), 0)
    ea = _read(tmp_path)
    h = ea.Histograms("h")[0].histogram_value
    assert (h.min, h.max, h.num, h.sum, h.sum_squares) == (-1.0, 3.0, 6.0, 6.0, 16.0)
    assert sum(h.bucket) == 6 and h.bucket[0] == 0
    f = ea.Histograms("fixed")[0].histogram_value
    assert list(f.bucket_limit) == [-1.0, 0.0, 1.0, 2.0, 3.0] and list(f.bucket) == [0, 1, 1, 2, 2]
    m = ea.Histograms("merged")[0].histogram_value
    assert len(m.bucket) == 11 and sum(m.bucket) == 100 and list(m.bucket[1:]) == [10] * 10


def test_images(tmp_path):
    chw = torch.rand(3, 4, 5)
    batch = torch.rand(10, 1, 2, 3)
    with SummaryWriter(tmp_path) as w:
        w.add_image("chw", chw, 0)
        w.add_image("hw", np.full((2, 3), 255, dtype=np.uint8), 0, dataformats="HW")
        w.add_images("nchw", batch, 0)
        with pytest.raises(AssertionError, match="size of input tensor and input format are different"):
            w.add_image("bad", torch.rand(4, 5), 0)
    ea = _read(tmp_path)
    img = ea.Images("chw")[0]
    assert (img.width, img.height) == (5, 4)
    expected = (chw.numpy().transpose(1, 2, 0) * 255).clip(0, 255).astype(np.uint8)
    assert (_png_pixels(img.encoded_image_string) == expected).all()
    assert (_png_pixels(ea.Images("hw")[0].encoded_image_string) == 255).all()
    grid = ea.Images("nchw")[0]
    assert (grid.width, grid.height) == (8 * 3, 2 * 2)      # 8 to a row, as torch tiles them


def test_hparams(tmp_path):
    with SummaryWriter(tmp_path) as w:
        w.add_hparams({"lr": 0.1, "opt": "sgd", "bs": 4}, {"hp/acc": 0.75}, run_name="trial",
                      hparam_domain_discrete={"opt": ["sgd", "adam"]})
        with pytest.raises(TypeError, match="hparam_dict and metric_dict should be dictionary."):
            w.add_hparams([], {})
        with pytest.raises(ValueError, match="value should be one of int, float, str, bool, or torch.Tensor"):
            w.add_hparams({"x": [1]}, {})
    from tensorboard.plugins.hparams import plugin_data_pb2
    ea = _read(tmp_path / "trial")
    assert ea.Scalars("hp/acc")[0].value == 0.75
    content = ea.PluginTagToContent("hparams")
    data = plugin_data_pb2.HParamsPluginData.FromString(content["_hparams_/session_start_info"])
    assert data.session_start_info.hparams["lr"].number_value == 0.1
    assert data.session_start_info.hparams["opt"].string_value == "sgd"
    exp = plugin_data_pb2.HParamsPluginData.FromString(content["_hparams_/experiment"]).experiment
    assert [i.name for i in exp.hparam_infos] == ["lr", "opt", "bs"]
    assert [v.string_value for v in exp.hparam_infos[1].domain_discrete.values] == ["sgd", "adam"]
    assert exp.metric_infos[0].name.tag == "hp/acc"


def test_graph(tmp_path):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    with SummaryWriter(tmp_path) as w:
        w.add_graph(model, torch.randn(2, 3))
    nodes = {n.name: (n.op, list(n.input)) for n in _read(tmp_path).Graph().node}
    assert nodes["input/input.0"] == ("IO Node", [])
    assert nodes["0/weight"][0] == "prim::GetAttr"
    first = next(name for name, (op, inputs) in nodes.items() if "input/input.0" in inputs)
    assert set(nodes[first][1]) == {"input/input.0", "0/weight", "0/bias"}
    relu = next(name for name, (op, inputs) in nodes.items() if inputs == [first])
    last = next(name for name, (op, inputs) in nodes.items() if relu in inputs)
    assert set(nodes[last][1]) == {relu, "2/weight", "2/bias"}
    assert nodes["output/output.0"] == ("IO Node", [last])
    assert all(p.grad is None for p in model.parameters())


def test_default_logdir_flush_reopen(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    w = SummaryWriter(comment="_x", purge_step=5)
    assert w.get_logdir().startswith("runs" + os.sep) and w.get_logdir().endswith("_x")
    w.add_scalar("a", 1.0, 6)
    w.flush()
    w.close()
    w.add_scalar("a", 2.0, 7)       # a closed writer opens a new file
    w.close()
    assert [e.value for e in _read(w.get_logdir()).Scalars("a")] == [1.0, 2.0]


def test_figure(tmp_path):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig = plt.figure(figsize=(2, 1), dpi=10)
    with SummaryWriter(tmp_path) as w:
        w.add_figure("fig", fig, 0)
    img = _read(tmp_path).Images("fig")[0]
    assert (img.width, img.height) == (20, 10)
