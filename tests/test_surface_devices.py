"""Devices and back-end flags (issue 16 point 3): the default device, the meta device through every kind of op and
through nn modules, torch.backends, torch.accelerator, threads, matmul precision, deterministic mode.

Every expectation below was checked against torch 2.13 (CPU build) by running the same code."""
import warnings

import pytest

import reftorch as torch
from reftorch import _config, _cpu, nn


@pytest.fixture
def restore_default_device():
    yield
    torch.set_default_device(None)


def geometry(t):
    return tuple(t.shape), t.dtype, t.stride(), str(t.device)


# ------------------------------------------------------------------------------------------- default device

def test_device_context_manager_sets_the_default_for_factories():
    assert repr(torch.get_default_device()) == "device(type='cpu')"
    with torch.device("meta") as d:
        assert str(d) == "meta" and str(torch.get_default_device()) == "meta"
        for t in (torch.zeros(2), torch.tensor([1, 2]), torch.arange(3), torch.randn(3, 4), torch.empty(2, 3),
                  torch.ones(1), torch.full((2,), 3.0), torch.eye(2)):
            assert t.device.type == "meta"
        assert torch.empty(2, 3).stride() == (3, 1)
    assert torch.ones(1).device.type == "cpu"


def test_nested_device_blocks_restore_the_outer_default():
    with torch.device("cpu"):
        with torch.device("meta"):
            assert torch.ones(1).device.type == "meta"
        assert torch.ones(1).device.type == "cpu"


def test_set_default_device(restore_default_device):
    torch.set_default_device("meta")
    assert str(torch.get_default_device()) == "meta" and torch.ones(1).device.type == "meta"
    torch.set_default_device(None)
    assert str(torch.get_default_device()) == "cpu" and torch.ones(1).device.type == "cpu"


def test_device_strings():
    assert repr(torch.device("mps")) == "device(type='mps')"
    assert repr(torch.device("meta:0")) == "device(type='meta', index=0)"
    assert repr(torch.device("cuda", 1)) == "device(type='cuda', index=1)"
    with pytest.raises(RuntimeError, match="Expected one of cpu, cuda, ipu, xpu, mkldnn, opengl, opencl, ideep, hip, "
                                           "ve, fpga, maia, xla, lazy, vulkan, mps, meta, hpu, mtia, privateuseone "
                                           "device type at start of device string: foo"):
        torch.device("foo")
    with pytest.raises(RuntimeError, match="Invalid device string: 'cuda:x'"):
        torch.device("cuda:x")
    with pytest.raises(NotImplementedError, match="Could not run 'aten::empty.memory_format' with arguments from the "
                                                  "'MPS' backend"):
        torch.zeros(2, device="mps")


# ------------------------------------------------------------------------------------------- meta tensors

def test_meta_repr():
    assert repr(torch.empty(2, 3, device="meta")) == "tensor(..., device='meta', size=(2, 3))"
    assert repr(torch.empty(2, dtype=torch.int64, device="meta")) == \
        "tensor(..., device='meta', size=(2,), dtype=torch.int64)"
    assert repr(torch.empty(2, device="meta", requires_grad=True)) == \
        "tensor(..., device='meta', size=(2,), requires_grad=True)"
    assert str(torch.tensor(3.0, device="meta")) == "tensor(..., device='meta', size=())"
    m = torch.empty(2, 3, device="meta")
    assert m.is_meta and not torch.ones(1).is_meta and m.data_ptr() == 0


def test_meta_has_no_values():
    m = torch.empty(2, 3, device="meta")
    with pytest.raises(RuntimeError, match="a Tensor with 6 elements cannot be converted to Scalar"):
        m.item()
    s = torch.empty((), device="meta")
    for f in (s.item, lambda: bool(s), lambda: float(s)):
        with pytest.raises(RuntimeError, match=r"Tensor.item\(\) cannot be called on meta tensors"):
            f()
    with pytest.raises(TypeError, match="can't convert meta device type tensor to numpy. Use Tensor.cpu"):
        m.numpy()
    for f in (m.tolist, m.cpu, lambda: m.to("cpu"), lambda: torch.ones(2, 3).copy_(m)):
        with pytest.raises(NotImplementedError, match="Cannot copy out of meta tensor; no data!"):
            f()


def test_meta_mixed_with_cpu_raises_as_torch():
    m = torch.empty(2, 3, device="meta")
    with pytest.raises(RuntimeError, match="Tensor on device cpu is not on the expected device meta!"):
        m + torch.ones(2, 3)
    with pytest.raises(RuntimeError, match="Tensor on device meta is not on the expected device cpu!"):
        torch.ones(2, 3) + m
    # 0-d cpu tensors and Python numbers mix, as in torch
    assert geometry(m + torch.ones(())) == ((2, 3), torch.float32, (3, 1), "meta")
    assert geometry(m + torch.tensor(2.0)) == ((2, 3), torch.float32, (3, 1), "meta")
    assert geometry(m + 1) == ((2, 3), torch.float32, (3, 1), "meta")


def test_meta_through_every_kind_of_op():
    m = torch.empty(2, 3, device="meta")
    assert geometry(m + torch.empty(3, device="meta", dtype=torch.float64)) == \
        ((2, 3), torch.float64, (3, 1), "meta")                                      # promotion and broadcasting
    assert geometry(m.t().exp()) == ((3, 2), torch.float32, (1, 3), "meta")          # the input's memory order kept
    assert geometry(m == m) == ((2, 3), torch.bool, (3, 1), "meta")
    assert geometry(m.sum(1)) == ((2,), torch.float32, (1,), "meta")                  # reductions
    assert geometry(m.to(torch.int8).sum()) == ((), torch.int64, (), "meta")
    assert geometry((m == m).all()) == ((), torch.bool, (), "meta")
    assert geometry(m.mean()) == ((), torch.float32, (), "meta")
    assert geometry(m.std()) == ((), torch.float32, (), "meta")
    assert geometry(m.cumsum(0)) == ((2, 3), torch.float32, (3, 1), "meta")           # scans
    assert geometry(m.argmax(1)) == ((2,), torch.int64, (1,), "meta")                 # arg-reductions
    assert geometry(m.softmax(1)) == ((2, 3), torch.float32, (3, 1), "meta")
    assert geometry(m[0, 1:]) == ((2,), torch.float32, (1,), "meta")                  # views
    assert geometry(m.reshape(6)) == ((6,), torch.float32, (1,), "meta")
    assert geometry(m.t().reshape(6)) == ((6,), torch.float32, (1,), "meta")          # a reshape that copies
    assert geometry(m.expand(4, 2, 3).contiguous()) == ((4, 2, 3), torch.float32, (6, 3, 1), "meta")
    assert geometry(m @ torch.empty(3, 5, device="meta")) == ((2, 5), torch.float32, (5, 1), "meta")   # array ops
    assert geometry(torch.cat([m, m])) == ((4, 3), torch.float32, (3, 1), "meta")
    assert geometry(m[torch.tensor([0, 1])]) == ((2, 3), torch.float32, (3, 1), "meta")
    values, indices = m.sort(1)
    assert geometry(values) == ((2, 3), torch.float32, (3, 1), "meta")
    assert geometry(indices) == ((2, 3), torch.int64, (3, 1), "meta")
    values, indices = m.max(1)
    assert geometry(values) == ((2,), torch.float32, (1,), "meta") and indices.dtype == torch.int64
    assert geometry(torch.where(m > 0, m, 0.0)) == ((2, 3), torch.float32, (3, 1), "meta")
    assert geometry(torch.zeros_like(m)) == ((2, 3), torch.float32, (3, 1), "meta")
    assert geometry(m.clone()) == ((2, 3), torch.float32, (3, 1), "meta")
    assert geometry(torch.ones(2).to("meta")) == ((2,), torch.float32, (1,), "meta")
    assert geometry(torch.empty(0, device="meta")) == ((0,), torch.float32, (1,), "meta")


def test_meta_nn_functional():
    x = torch.empty(2, 4, device="meta")
    assert geometry(nn.functional.linear(x, torch.empty(3, 4, device="meta"))) == ((2, 3), torch.float32, (3, 1),
                                                                                 "meta")
    y = nn.functional.conv2d(torch.empty(1, 3, 8, 8, device="meta"), torch.empty(4, 3, 3, 3, device="meta"))
    assert geometry(y) == ((1, 4, 6, 6), torch.float32, (144, 36, 6, 1), "meta")


def test_meta_in_place_ops_write_nothing():
    m = torch.empty(2, 3, device="meta")
    assert m.add_(1) is m and m.copy_(torch.ones(2, 3)) is m and m.fill_(2.0) is m and m.zero_() is m


def test_meta_value_dependent_shapes_raise():
    m = torch.empty(2, 3, device="meta")
    with pytest.raises(NotImplementedError):
        torch.nonzero(m)
    with pytest.raises(NotImplementedError):
        m.unique()


def test_meta_autograd_gives_meta_gradients():
    with torch.device("meta"):
        lin = nn.Linear(4, 3)
    out = lin(torch.empty(2, 4, device="meta"))
    out.sum().backward()
    assert geometry(lin.weight.grad) == ((3, 4), torch.float32, (4, 1), "meta")


# ------------------------------------------------------------------------------------------- meta modules

def _model():
    return nn.Sequential(nn.Linear(4, 3), nn.LayerNorm(3), nn.Conv2d(1, 2, 3), nn.Embedding(5, 2), nn.BatchNorm1d(3))


def test_build_on_meta_then_to_empty_then_load():
    with torch.device("meta"):
        m = _model()
    assert repr(m[0].weight) == "Parameter containing:\ntensor(..., device='meta', size=(3, 4), requires_grad=True)"
    assert repr(m[4].num_batches_tracked) == "tensor(..., device='meta', size=(), dtype=torch.int64)"
    assert geometry(m[2](torch.empty(1, 1, 5, 5, device="meta"))) == ((1, 2, 3, 3), torch.float32, (18, 9, 3, 1),
                                                                      "meta")
    ref = _model()
    sd = ref.state_dict()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m.load_state_dict(sd)
    assert len(caught) == 12 and str(caught[0].message) == (
        "for 0.weight: copying from a non-meta parameter in the checkpoint to a meta parameter in the current model, "
        "which is a no-op. (Did you mean to pass `assign=True` to assign items in the state dictionary to their "
        "corresponding key in the module instead of copying them in place?)")
    assert m[0].weight.device.type == "meta"
    assert m.to_empty(device="cpu") is m
    w = m[0].weight
    assert w.device.type == "cpu" and w.requires_grad and type(w).__name__ == "Parameter"
    assert m[4].num_batches_tracked.dtype == torch.int64
    m.load_state_dict(sd)
    for k, v in sd.items():
        assert bool((m.state_dict()[k] == v).all()), k


def test_to_empty_recurse_false_moves_only_own_tensors():
    with torch.device("meta"):
        seq = nn.Sequential(nn.Linear(2, 2))
        lin = nn.Linear(4, 3)
    assert seq.to_empty(device="cpu", recurse=False)[0].weight.device.type == "meta"
    assert lin.to_empty(device="cpu", recurse=False).weight.device.type == "cpu"


def test_load_state_dict_assign_replaces_and_keeps_requires_grad():
    with torch.device("meta"):
        a = nn.Linear(4, 3)
    a.load_state_dict({"weight": torch.ones(3, 4, dtype=torch.float64), "bias": torch.zeros(3)}, assign=True)
    assert a.weight.device.type == "cpu" and a.weight.dtype == torch.float64    # the loaded tensor, as it is
    assert a.weight.requires_grad and type(a.weight).__name__ == "Parameter" and a.weight.is_leaf
    p = nn.Parameter(torch.ones(3), requires_grad=False)
    a.load_state_dict({"weight": torch.ones(3, 4), "bias": p}, assign=True)
    assert a.bias is p and a.bias.requires_grad        # requires_grad of the module's parameter wins
    with torch.device("meta"):
        b = nn.Linear(4, 3)
    with pytest.raises(RuntimeError, match=r"size mismatch for weight: copying a param with shape torch.Size\(\[3, 5\]\) "
                                           r"from checkpoint, the shape in current model is torch.Size\(\[3, 4\]\)."):
        b.load_state_dict({"weight": torch.ones(3, 5), "bias": torch.zeros(3)}, assign=True)
    assert b.weight.device.type == "meta"


def test_module_to_from_meta_points_at_to_empty():
    assert nn.Linear(2, 2).to("meta").weight.device.type == "meta"
    assert nn.Linear(2, 2, device="meta").weight.device.type == "meta"
    with pytest.raises(NotImplementedError, match=r"Cannot copy out of meta tensor; no data! Please use "
                                                  r"torch.nn.Module.to_empty\(\) instead of torch.nn.Module.to\(\) when "
                                                  r"moving module from meta to a different device."):
        nn.Linear(2, 2, device="meta").to("cpu")


# ------------------------------------------------------------------------------------------- torch.backends

def test_backends_answers():
    b = torch.backends
    assert (b.cudnn.is_available(), b.cudnn.version()) == (False, None)
    assert (b.cudnn.enabled, b.cudnn.benchmark, b.cudnn.deterministic, b.cudnn.allow_tf32) == (True, False, False, True)
    assert (b.mps.is_available(), b.mps.is_built(), b.mkldnn.is_available(), b.openmp.is_available()) == \
        (False, False, False, False)
    assert b.mkldnn.enabled is True
    assert (b.opt_einsum.is_available(), b.opt_einsum.enabled, b.opt_einsum.strategy) == (False, False, None)
    assert b.cuda.matmul.allow_fp16_reduced_precision_reduction is True
    assert b.cpu.get_cpu_capability() in ("AVX512", "AVX2", "DEFAULT")
    assert isinstance(b.cuda.is_built(), bool) and isinstance(b.mkl.is_available(), bool)


def test_backends_flags_hold_state():
    c = torch.backends.cudnn
    c.benchmark = True
    try:
        assert c.benchmark is True
        with c.flags(enabled=False):
            assert c.enabled is False
        assert c.enabled is True
    finally:
        c.benchmark = False
    with pytest.raises(AttributeError, match="Unknown attribute foo"):
        torch.backends.cuda.matmul.foo = 1
    with pytest.raises(ValueError, match="opt_einsum is not available, so setting `enabled` to True"):
        torch.backends.opt_einsum.set_flags(True)


def test_float32_matmul_precision_and_allow_tf32():
    b = torch.backends
    try:
        assert torch.get_float32_matmul_precision() == "highest" and b.cuda.matmul.allow_tf32 is False
        torch.set_float32_matmul_precision("medium")
        assert (b.cuda.matmul.allow_tf32, b.cudnn.allow_tf32, torch.get_float32_matmul_precision()) == \
            (True, True, "medium")
        torch.set_float32_matmul_precision("highest")
        assert b.cuda.matmul.allow_tf32 is False
        b.cuda.matmul.allow_tf32 = True
        assert torch.get_float32_matmul_precision() == "high"
        with pytest.warns(UserWarning, match="foo is not one of 'highest', 'high', or 'medium'"):
            torch.set_float32_matmul_precision("foo")
        assert torch.get_float32_matmul_precision() == "high"
    finally:
        torch.set_float32_matmul_precision("highest")


# ------------------------------------------------------------------------------------------- accelerator

def test_accelerator_follows_reftorch_cuda():
    a = torch.accelerator
    assert a.is_available() == torch.cuda.is_available()
    assert a.device_count() == torch.cuda.device_count()
    if not torch.cuda.is_available():
        assert a.current_accelerator() is None
        for f in (a.current_device_index, lambda: a.set_device_index(0), a.synchronize):
            with pytest.raises(RuntimeError, match="Cannot access accelerator device when none is available."):
                f()
        with pytest.raises(RuntimeError, match="Cannot access accelerator device when none is available."):
            torch.device(0)
    else:
        assert str(a.current_accelerator()) == "cuda" and a.current_device_index() == torch.cuda.current_device()
        a.synchronize()


# ------------------------------------------------------------------------------------------- threads, determinism

def test_set_num_threads_governs_the_kernel_pool():
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        assert torch.get_num_threads() == 1 and _cpu.THREADS == 1
        assert not _cpu._parallel(1 << 30)      # one thread: no kernel splits its work
        torch.set_num_threads(3)
        assert _cpu._chunks(3 * 4096) == [(0, 4096), (4096, 8192), (8192, 12288)]
    finally:
        torch.set_num_threads(before)
    with pytest.raises(RuntimeError, match="set_num_threads expects a positive integer"):
        torch.set_num_threads(0)
    with pytest.raises(RuntimeError, match="set_num_threads expects an int, but got str"):
        torch.set_num_threads("a")


def test_set_num_interop_threads_once(monkeypatch):
    monkeypatch.setattr(_config, "_interop_set", False)
    monkeypatch.setattr(_config, "interop_threads", None)
    with pytest.raises(RuntimeError, match="set_num_interop_threads expects a positive integer"):
        torch.set_num_interop_threads(0)
    torch.set_num_interop_threads(3)
    assert torch.get_num_interop_threads() == 3
    with pytest.raises(RuntimeError, match="Error: cannot set number of interop threads after parallel work has "
                                           "started or set_num_interop_threads called"):
        torch.set_num_interop_threads(2)


def test_deterministic_algorithms():
    try:
        assert (torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled()) \
            == (False, False)
        torch.use_deterministic_algorithms(True, warn_only=True)
        assert (torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled(),
                torch.get_deterministic_debug_mode()) == (True, True, 1)
        torch.use_deterministic_algorithms(False)
        assert torch.get_deterministic_debug_mode() == 0
        with pytest.raises(TypeError, match=r"_set_deterministic_algorithms\(\): argument 'mode' \(position 1\) must "
                                            r"be bool, not int"):
            torch.use_deterministic_algorithms(1)
        torch.set_deterministic_debug_mode("error")
        assert torch.are_deterministic_algorithms_enabled() and torch.get_deterministic_debug_mode() == 2
    finally:
        torch.use_deterministic_algorithms(False)


def test_meta_layers_forward():
    x = torch.empty(4, 3, 8, 8, device="meta")
    with torch.device("meta"):
        bn, drop, pool = nn.BatchNorm2d(3), nn.Dropout(0.5), nn.MaxPool2d(2)
        mha, gru = nn.MultiheadAttention(8, 2, batch_first=True), nn.GRU(8, 4, batch_first=True)
    assert geometry(bn(x))[:2] == ((4, 3, 8, 8), torch.float32)
    assert geometry(drop(x))[:2] == ((4, 3, 8, 8), torch.float32)
    assert geometry(pool(x))[:2] == ((4, 3, 4, 4), torch.float32)
    assert geometry(nn.functional.interpolate(x, scale_factor=2))[:2] == ((4, 3, 16, 16), torch.float32)
    q = torch.empty(2, 5, 8, device="meta")
    assert geometry(mha(q, q, q)[0])[:2] == ((2, 5, 8), torch.float32)
    assert geometry(gru(q)[0])[:2] == ((2, 5, 4), torch.float32)
    loss = nn.functional.cross_entropy(torch.empty(4, 5, device="meta"), torch.empty(4, dtype=torch.long,
                                                                                      device="meta"))
    assert geometry(loss) == ((), torch.float32, (), "meta")
    assert geometry(torch.einsum("bchw,bchw->b", x, x)) == ((4,), torch.float32, (1,), "meta")
    assert geometry(x.bfloat16().sum(1)) == ((4, 8, 8), torch.bfloat16, (64, 8, 1), "meta")


def test_meta_pickles_and_deep_copies():
    import copy
    import pickle
    m = torch.empty(2, 3, device="meta", requires_grad=True).t()
    r = pickle.loads(pickle.dumps(m))
    assert geometry(r) == ((3, 2), torch.float32, (1, 3), "meta") and r.requires_grad
    with torch.device("meta"):
        lin = nn.Linear(3, 2)
    c = copy.deepcopy(lin)
    assert c.weight.device.type == "meta" and type(c.weight).__name__ == "Parameter"


def test_meta_allocates_nothing():
    # 2**40 elements: 4 TiB on cpu; on meta only the geometry exists, whatever the factory
    for make in (torch.empty, torch.zeros, torch.ones, torch.rand, torch.randn):
        assert geometry(make(1 << 20, 1 << 20, device="meta")) == ((1 << 20, 1 << 20), torch.float32,
                                                                    (1 << 20, 1), "meta")
    assert torch.full((1 << 40,), 2.0, device="meta").shape == (1 << 40,)
    assert torch.randint(0, 5, (1 << 40,), device="meta").dtype == torch.int64
    with torch.device("meta"):
        big = nn.Linear(1 << 20, 1 << 20)          # its init (kaiming_uniform_) draws nothing either
    assert geometry(big.weight.t() @ big.weight)[0] == (1 << 20, 1 << 20)
