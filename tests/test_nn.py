"""nn.Module mechanics, Parameter, containers, state_dict, hooks, repr, nn.init, nn.utils and losses.

References are NumPy computations written here; the expected reprs and error messages are PyTorch's
(checked against torch 2.13)."""
import copy
import math
import pickle

import numpy as np
import pytest

import reftorch as torch
import reftorch.nn as nn
import reftorch.nn.functional as F


def np_(t):
    return t.detach().numpy()


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(3, 4)
        self.bn = nn.BatchNorm1d(4)
        self.head = nn.Sequential(nn.ReLU(), nn.Linear(4, 2))
        self.scale = nn.Parameter(torch.ones(1))
        self.register_buffer("steps", torch.zeros((), dtype=torch.int64))
        self.register_buffer("cache", torch.zeros(2), persistent=False)

    def forward(self, x):
        return self.head(self.bn(self.fc1(x))) * self.scale


# ------------------------------------------------------------------ Parameter

def test_parameter_is_a_tensor_sharing_storage():
    data = torch.arange(6.0).reshape(2, 3)
    p = nn.Parameter(data)
    assert isinstance(p, nn.Parameter) and isinstance(p, torch.Tensor)
    assert p.requires_grad and p.is_leaf and p.grad_fn is None
    with torch.no_grad():
        data.add_(1)
    assert np_(p)[0, 0] == 1.0                       # no copy
    assert not nn.Parameter(torch.ones(2), requires_grad=False).requires_grad
    assert not isinstance(p * 2, nn.Parameter)        # results of ops are plain tensors
    assert not isinstance(p.detach(), nn.Parameter)
    assert repr(nn.Parameter(torch.ones(2))) == "Parameter containing:\ntensor([1., 1.], requires_grad=True)"
    assert nn.Parameter().shape == (0,)


def test_parameter_deepcopy_and_pickle():
    p = nn.Parameter(torch.tensor([1.0, 2.0]))
    q = copy.deepcopy(p)
    assert isinstance(q, nn.Parameter) and q.requires_grad
    with torch.no_grad():
        q.mul_(3)
    assert np_(p).tolist() == [1.0, 2.0]
    r = pickle.loads(pickle.dumps(p))
    assert isinstance(r, nn.Parameter) and np_(r).tolist() == [1.0, 2.0]


def test_parameter_gets_gradient():
    lin = nn.Linear(3, 2)
    x = torch.randn(5, 3)
    lin(x).sum().backward()
    np.testing.assert_allclose(np_(lin.weight.grad), np.tile(np_(x).sum(0), (2, 1)), rtol=1e-5)
    np.testing.assert_allclose(np_(lin.bias.grad), [5.0, 5.0])


# ------------------------------------------------------------------ registration and traversal

def test_registration_by_assignment():
    net = Net()
    names = [n for n, _ in net.named_parameters()]
    assert names == ["scale", "fc1.weight", "fc1.bias", "bn.weight", "bn.bias", "head.1.weight", "head.1.bias"]
    assert [n for n, _ in net.named_buffers()] == ["steps", "cache", "bn.running_mean", "bn.running_var",
                                                   "bn.num_batches_tracked"]
    assert [n for n, _ in net.named_children()] == ["fc1", "bn", "head"]
    assert [n for n, _ in net.named_modules()] == ["", "fc1", "bn", "head", "head.0", "head.1"]
    assert len(list(net.parameters(recurse=False))) == 1
    assert net.fc1.weight is net._modules["fc1"]._parameters["weight"]
    with pytest.raises(AttributeError, match="'Net' object has no attribute 'nope'"):
        net.nope


def test_shared_modules_and_parameters_are_listed_once():
    lin = nn.Linear(2, 2)
    seq = nn.Sequential(lin, nn.ReLU(), lin)
    assert len(list(seq.parameters())) == 2
    assert len(list(seq.modules())) == 3
    assert [n for n, _ in seq.named_modules(remove_duplicate=False)] == ["", "0", "1", "2"]


def test_setattr_rules():
    m = nn.Linear(2, 2)
    with pytest.raises(TypeError, match=r"cannot assign 'torch.Tensor' as parameter 'weight' "
                                        r"\(torch.nn.Parameter or None expected\)"):
        m.weight = torch.zeros(2, 2)
    m.bias = None
    assert m.bias is None and "bias" in m._parameters
    m.extra = nn.ReLU()
    assert "extra" in m._modules
    del m.extra
    assert "extra" not in m._modules
    m.register_buffer("buf", torch.ones(1))
    m.buf = torch.zeros(1)                    # a registered buffer stays a buffer
    assert np_(m._buffers["buf"]).tolist() == [0.0]
    m.tracked = nn.Buffer(torch.ones(3), persistent=False)
    assert "tracked" in m._buffers and "tracked" not in m.state_dict()

    class Early(nn.Module):
        def __init__(self):
            self.w = nn.Parameter(torch.ones(1))

    with pytest.raises(AttributeError, match="cannot assign parameters before Module.__init__"):
        Early()
    with pytest.raises(KeyError, match="attribute 'weight' already exists"):
        m.register_buffer("weight", torch.ones(1))
    with pytest.raises(TypeError, match=r"cannot assign 'torch.Tensor' object to parameter 'p'"):
        m.register_parameter("p", torch.ones(1))


def test_add_module_and_get_submodule():
    net = Net()
    net.add_module("extra", nn.Tanh())
    assert net.get_submodule("head.1") is net.head[1]
    assert net.get_parameter("head.1.bias") is net.head[1].bias
    assert net.get_buffer("bn.running_var") is net.bn.running_var
    with pytest.raises(TypeError, match="is not a Module subclass"):
        net.add_module("x", 3)


# ------------------------------------------------------------------ state dict

def test_state_dict_keys_and_roundtrip():
    torch.manual_seed(0)
    net = Net()
    sd = net.state_dict()
    assert list(sd) == ["scale", "steps", "fc1.weight", "fc1.bias", "bn.weight", "bn.bias", "bn.running_mean",
                        "bn.running_var", "bn.num_batches_tracked", "head.1.weight", "head.1.bias"]
    assert all(not v.requires_grad for v in sd.values())
    assert net.state_dict(keep_vars=True)["fc1.weight"] is net.fc1.weight
    other = Net()
    result = other.load_state_dict(sd)
    assert repr(result) == "<All keys matched successfully>"
    x = torch.randn(5, 3)
    net.eval(), other.eval()
    np.testing.assert_array_equal(np_(net(x)), np_(other(x)))
    assert sd["fc1.weight"] is not net.fc1.weight
    with torch.no_grad():                     # load copies: later edits of the dict do not leak in
        sd["fc1.weight"].zero_()
    assert np.abs(np_(other.fc1.weight)).sum() > 0


def test_load_state_dict_errors_leave_module_untouched():
    net = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Linear(4, 2))
    before = {k: np_(v).copy() for k, v in net.state_dict().items()}
    bad = {k: torch.zeros(v.shape, dtype=v.dtype) for k, v in net.state_dict().items()}
    del bad["0.bias"]
    bad["extra.w"] = torch.zeros(2)
    bad["2.weight"] = torch.zeros(5, 5)
    with pytest.raises(RuntimeError) as err:
        net.load_state_dict(bad)
    assert str(err.value) == (
        'Error(s) in loading state_dict for Sequential:\n\tMissing key(s) in state_dict: "0.bias". '
        '\n\tUnexpected key(s) in state_dict: "extra.w". \n\tsize mismatch for 2.weight: copying a param with '
        'shape torch.Size([5, 5]) from checkpoint, the shape in current model is torch.Size([2, 4]).')
    for k, v in net.state_dict().items():       # nothing was copied, not even the valid entries
        np.testing.assert_array_equal(np_(v), before[k])
    with pytest.raises(RuntimeError, match="size mismatch for 2.weight"):
        net.load_state_dict(bad, strict=False)
    for k, v in net.state_dict().items():
        np.testing.assert_array_equal(np_(v), before[k])
    bad["2.weight"] = torch.zeros(2, 4)
    result = net.load_state_dict(bad, strict=False)
    assert result.missing_keys == ["0.bias"] and result.unexpected_keys == ["extra.w"]
    assert repr(result) == "_IncompatibleKeys(missing_keys=['0.bias'], unexpected_keys=['extra.w'])"
    assert np.abs(np_(net[0].weight)).sum() == 0          # strict=False loads what matches
    with pytest.raises(RuntimeError, match=r'While copying the parameter named "0.weight", expected torch.Tensor '
                                           r"or Tensor-like object from checkpoint but received <class 'float'>"):
        net.load_state_dict(dict(bad, **{"0.weight": 3.0}), strict=False)


def test_load_state_dict_keeps_dtype_and_identity():
    lin = nn.Linear(2, 2)
    w = lin.weight
    lin.load_state_dict({"weight": torch.ones((2, 2), dtype=torch.float64), "bias": torch.zeros(2)})
    assert lin.weight is w and lin.weight.dtype == torch.float32 and np_(w).sum() == 4
    lin.load_state_dict({"weight": torch.full((2, 2), 2.0), "bias": torch.zeros(2)}, assign=True)
    assert lin.weight is not w and isinstance(lin.weight, nn.Parameter) and lin.weight.requires_grad


def test_batchnorm_state_dict_without_num_batches_tracked():
    bn = nn.BatchNorm1d(3)
    sd = {k: v for k, v in bn.state_dict().items() if k != "num_batches_tracked"}   # an old checkpoint
    assert repr(bn.load_state_dict(sd)) == "<All keys matched successfully>"


# ------------------------------------------------------------------ modes, grads, conversion, hooks

def test_train_eval_and_dropout():
    net = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5))
    assert net.training and net[1].training
    net.eval()
    assert not net.training and not net[1].training
    x = torch.ones(3, 4)
    np.testing.assert_array_equal(np_(net[1](x)), np_(x))
    assert net.train() is net and net[1].training


def test_zero_grad_and_requires_grad():
    lin = nn.Linear(2, 2)
    lin(torch.ones(1, 2)).sum().backward()
    lin.zero_grad(set_to_none=False)
    assert np_(lin.weight.grad).sum() == 0 and lin.weight.grad is not None
    lin.zero_grad()
    assert lin.weight.grad is None
    lin.requires_grad_(False)
    assert not any(p.requires_grad for p in lin.parameters())


def test_to_double_keeps_parameters_and_int_buffers():
    net = Net()
    w = net.fc1.weight
    net(torch.randn(4, 3)).sum().backward()
    assert net.to(torch.float64) is net
    assert net.fc1.weight is w and isinstance(w, nn.Parameter) and w.dtype == torch.float64
    assert w.grad.dtype == torch.float64
    assert net.bn.running_mean.dtype == torch.float64
    assert net.bn.num_batches_tracked.dtype == torch.int64 and net.steps.dtype == torch.int64
    out = net(torch.randn(4, 3, dtype=torch.float64))
    assert out.dtype == torch.float64
    net.float()
    assert w.dtype == torch.float32
    net.double()
    assert w.dtype == torch.float64
    with pytest.raises(TypeError, match="nn.Module.to only accepts floating point"):
        net.to(torch.int64)


def test_apply_initialises_every_linear():
    seen = []

    def init_fn(m):
        seen.append(type(m).__name__)
        if isinstance(m, nn.Linear):
            nn.init.constant_(m.weight, 0.5)

    net = Net().apply(init_fn)
    assert seen == ["Linear", "BatchNorm1d", "ReLU", "Linear", "Sequential", "Net"]
    assert np.all(np_(net.head[1].weight) == 0.5)


def test_forward_hooks():
    lin = nn.Linear(2, 2)
    calls = []
    h1 = lin.register_forward_pre_hook(lambda m, args: (args[0] * 0,))
    h2 = lin.register_forward_hook(lambda m, args, out: calls.append(np_(args[0]).sum()) or out + 1)
    y = lin(torch.ones(1, 2))
    np.testing.assert_allclose(np_(y), np_(lin.bias)[None] + 1, rtol=1e-6)
    assert calls == [0.0]
    h1.remove(), h2.remove()
    y = lin(torch.ones(1, 2))
    np.testing.assert_allclose(np_(y), np_(lin.weight).sum(1)[None] + np_(lin.bias)[None], rtol=1e-6)
    h3 = lin.register_forward_pre_hook(lambda m, args, kwargs: ((args[0] * 2,), kwargs), with_kwargs=True)
    y = lin(torch.ones(1, 2))
    np.testing.assert_allclose(np_(y), 2 * np_(lin.weight).sum(1)[None] + np_(lin.bias)[None], rtol=1e-6)
    h3.remove()


# ------------------------------------------------------------------ containers

def test_sequential_indexing():
    a, b, c = nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1)
    seq = nn.Sequential(a, b, c)
    assert len(seq) == 3 and seq[0] is a and seq[-1] is c and list(seq) == [a, b, c]
    sub = seq[1:]
    assert isinstance(sub, nn.Sequential) and list(sub) == [b, c]
    seq.append(nn.Sigmoid())
    assert len(seq) == 4 and isinstance(seq[3], nn.Sigmoid)
    del seq[3]
    assert len(seq) == 3
    seq.insert(1, nn.Tanh())
    assert [type(m).__name__ for m in seq] == ["Linear", "Tanh", "ReLU", "Linear"]
    with pytest.raises(IndexError, match="index 7 is out of range"):
        seq[7]
    x = torch.randn(4, 2)
    ref = np.maximum(np.tanh(np_(x) @ np_(a.weight).T + np_(a.bias)), 0) @ np_(c.weight).T + np_(c.bias)
    np.testing.assert_allclose(np_(seq(x)), ref, rtol=1e-5, atol=1e-6)
    named = nn.Sequential(__import__("collections").OrderedDict([("enc", nn.Linear(1, 1)), ("act", nn.ReLU())]))
    assert named.enc is named[0]


def test_modulelist_and_moduledict():
    layers = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)])
    layers.append(nn.ReLU())
    layers.extend([nn.Tanh()])
    assert len(layers) == 5 and len(list(layers.parameters())) == 6
    assert isinstance(layers[-1], nn.Tanh) and isinstance(layers[1:3], nn.ModuleList)
    d = nn.ModuleDict({"a": nn.Linear(1, 1), "b": nn.ReLU()})
    d["c"] = nn.Tanh()
    assert list(d.keys()) == ["a", "b", "c"] and "b" in d and len(d) == 3
    assert [n for n, _ in d.named_parameters()] == ["a.weight", "a.bias"]
    plist = nn.ParameterList([nn.Parameter(torch.ones(2)), torch.zeros(3)])
    assert isinstance(plist[1], nn.Parameter) and len(list(plist.parameters())) == 2
    pdict = nn.ParameterDict({"w": torch.ones(2)})
    assert isinstance(pdict["w"], nn.Parameter)


def test_identity_flatten_unflatten():
    x = torch.randn(2, 3, 4, 5)
    assert nn.Identity(54, unused="x")(x) is x
    assert nn.Flatten()(x).shape == (2, 60)
    assert nn.Flatten(0, 2)(x).shape == (24, 5)
    assert nn.Unflatten(1, (3, 20))(nn.Flatten()(x)).shape == (2, 3, 20)


# ------------------------------------------------------------------ repr (strings as PyTorch prints them)

def test_repr_like_pytorch():
    net = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(inplace=True), nn.MaxPool2d(2),
                        nn.Flatten(), nn.Dropout(0.25), nn.Linear(16, 10))
    assert repr(net) == (
        "Sequential(\n"
        "  (0): Conv2d(1, 8, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))\n"
        "  (1): BatchNorm2d(8, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)\n"
        "  (2): ReLU(inplace=True)\n"
        "  (3): MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)\n"
        "  (4): Flatten(start_dim=1, end_dim=-1)\n"
        "  (5): Dropout(p=0.25, inplace=False)\n"
        "  (6): Linear(in_features=16, out_features=10, bias=True)\n"
        ")")
    assert repr(nn.ModuleList([nn.Linear(2, 2) for _ in range(3)] + [nn.ReLU()])) == (
        "ModuleList(\n  (0-2): 3 x Linear(in_features=2, out_features=2, bias=True)\n  (3): ReLU()\n)")
    assert repr(nn.LSTM(4, 6, 2, batch_first=True, bidirectional=True)) == \
        "LSTM(4, 6, num_layers=2, batch_first=True, bidirectional=True)"
    assert repr(nn.Embedding(10, 3, padding_idx=0)) == "Embedding(10, 3, padding_idx=0)"
    assert repr(nn.GELU(approximate="tanh")) == "GELU(approximate='tanh')"
    assert repr(nn.Conv1d(2, 3, 3, padding="same", bias=False)) == \
        "Conv1d(2, 3, kernel_size=(3,), stride=(1,), padding=same, bias=False)"
    assert repr(nn.LayerNorm((4, 5))) == "LayerNorm((4, 5), eps=1e-05, elementwise_affine=True, bias=True)"
    assert repr(nn.CrossEntropyLoss()) == "CrossEntropyLoss()"
    assert repr(nn.MultiheadAttention(8, 2)) == (
        "MultiheadAttention(\n  (out_proj): NonDynamicallyQuantizableLinear(in_features=8, out_features=8, "
        "bias=True)\n)")

    class Custom(nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = nn.Sequential(nn.Linear(1, 1))

        def extra_repr(self):
            return "custom=1"

    assert repr(Custom()) == ("Custom(\n  custom=1\n  (inner): Sequential(\n    (0): Linear(in_features=1, "
                              "out_features=1, bias=True)\n  )\n)")


# ------------------------------------------------------------------ nn.init

def test_calculate_gain():
    assert nn.init.calculate_gain("linear") == 1 and nn.init.calculate_gain("conv2d") == 1
    assert nn.init.calculate_gain("tanh") == 5.0 / 3
    assert nn.init.calculate_gain("relu") == math.sqrt(2.0)
    assert nn.init.calculate_gain("leaky_relu", 0.2) == math.sqrt(2.0 / 1.04)
    assert nn.init.calculate_gain("selu") == 0.75
    with pytest.raises(ValueError, match="Unsupported nonlinearity foo"):
        nn.init.calculate_gain("foo")


def test_default_layer_init_bounds():
    torch.manual_seed(1)
    lin = nn.Linear(50, 400)
    bound = 1 / math.sqrt(50)                 # kaiming_uniform_(a=sqrt(5)) == U(-1/sqrt(fan_in), 1/sqrt(fan_in))
    w, b = np_(lin.weight), np_(lin.bias)
    assert w.min() >= -bound and w.max() <= bound and w.max() > 0.95 * bound and w.min() < -0.95 * bound
    assert np.abs(b).max() <= bound and np.abs(b).max() > 0.9 * bound
    conv = nn.Conv2d(6, 40, 3, groups=2)
    cb = 1 / math.sqrt(3 * 9)                 # fan_in = in_channels / groups * k * k
    assert np.abs(np_(conv.weight)).max() <= cb and np.abs(np_(conv.weight)).max() > 0.9 * cb
    assert np.abs(np_(conv.bias)).max() <= cb
    emb = nn.Embedding(1000, 8, padding_idx=3)
    e = np_(emb.weight)
    assert abs(e.std() - 1) < 0.05 and np.all(e[3] == 0)
    bn = nn.BatchNorm2d(4)
    assert np.all(np_(bn.weight) == 1) and np.all(np_(bn.bias) == 0) and np.all(np_(bn.running_var) == 1)
    rnn = nn.LSTM(3, 25)
    assert all(np.abs(np_(p)).max() <= 1 / 5 for p in rnn.parameters())


def test_init_functions():
    torch.manual_seed(2)
    w = torch.empty(200, 300)
    assert nn.init.uniform_(w, -2, 3) is w
    assert np_(w).min() >= -2 and np_(w).max() <= 3
    nn.init.normal_(w, 1.0, 0.5)
    assert abs(np_(w).mean() - 1) < 0.01 and abs(np_(w).std() - 0.5) < 0.01
    nn.init.xavier_uniform_(w, gain=2.0)
    a = 2.0 * math.sqrt(6.0 / 500)
    assert np.abs(np_(w)).max() <= a and np.abs(np_(w)).max() > 0.98 * a
    nn.init.xavier_normal_(w)
    assert abs(np_(w).std() - math.sqrt(2.0 / 500)) < 0.002
    nn.init.kaiming_uniform_(w, mode="fan_out", nonlinearity="relu")
    bound = math.sqrt(2.0) * math.sqrt(3.0 / 200)
    assert np.abs(np_(w)).max() <= bound and np.abs(np_(w)).max() > 0.98 * bound
    nn.init.kaiming_normal_(w, a=0.1, nonlinearity="leaky_relu")
    assert abs(np_(w).std() - math.sqrt(2.0 / 1.01) / math.sqrt(300)) < 0.002
    nn.init.trunc_normal_(w, mean=0.5, std=1.0, a=0.0, b=1.0)
    assert np_(w).min() >= 0 and np_(w).max() <= 1
    nn.init.constant_(w, 0.3)
    assert np.all(np_(w) == np.float32(0.3))
    nn.init.zeros_(w), nn.init.ones_(w)
    assert np.all(np_(w) == 1)
    q = nn.init.orthogonal_(torch.empty(3, 5), gain=2.0)
    np.testing.assert_allclose(np_(q) @ np_(q).T, 4 * np.eye(3), atol=1e-5)
    e = nn.init.eye_(torch.empty(2, 3))
    assert np_(e).tolist() == [[1, 0, 0], [0, 1, 0]]
    d = nn.init.dirac_(torch.empty(2, 2, 3, 3))
    assert np_(d)[0, 0, 1, 1] == 1 and np_(d).sum() == 2
    p = nn.Parameter(torch.zeros(3))
    nn.init.ones_(p)                            # works on leaves that require grad (runs under no_grad)
    assert p.grad_fn is None and p.requires_grad
    with pytest.raises(ValueError, match="Fan in and fan out can not be computed"):
        nn.init.xavier_uniform_(torch.empty(3))


# ------------------------------------------------------------------ nn.utils

def test_clip_grad_norm():
    a = nn.Parameter(torch.tensor([3.0, 0.0]))
    b = nn.Parameter(torch.tensor([[4.0]]))
    a.grad = torch.tensor([3.0, 0.0])
    b.grad = torch.tensor([[4.0]])
    total = nn.utils.clip_grad_norm_([a, b], max_norm=1.0)
    assert isinstance(total, torch.Tensor) and abs(float(total) - 5.0) < 1e-6
    np.testing.assert_allclose(np_(a.grad), [3 / 5.000001, 0], rtol=1e-6)
    np.testing.assert_allclose(np_(b.grad), [[4 / 5.000001]], rtol=1e-6)
    total = nn.utils.clip_grad_norm_([a, b], max_norm=10.0, norm_type="inf" and math.inf)
    assert abs(float(total) - 0.8) < 1e-5 and abs(np_(b.grad)[0, 0] - 0.8) < 1e-5      # not scaled up
    a.grad = torch.tensor([float("nan"), 1.0])
    with pytest.raises(RuntimeError, match="The total norm of order 2.0 for gradients from `parameters` is "
                                           "non-finite"):
        nn.utils.clip_grad_norm_([a, b], 1.0, error_if_nonfinite=True)
    assert float(nn.utils.clip_grad_norm_([nn.Parameter(torch.ones(1))], 1.0)) == 0.0


def test_clip_grad_value_and_vectors():
    p = nn.Parameter(torch.zeros(4))
    p.grad = torch.tensor([-3.0, -0.5, 0.2, 7.0])
    nn.utils.clip_grad_value_([p], 1.0)
    assert np_(p.grad).tolist() == [-1.0, -0.5, np.float32(0.2), 1.0]
    lin = nn.Linear(3, 2)
    vec = nn.utils.parameters_to_vector(lin.parameters())
    assert vec.shape == (8,)
    np.testing.assert_array_equal(np_(vec)[:6], np_(lin.weight).reshape(-1))
    nn.utils.vector_to_parameters(torch.arange(8.0), lin.parameters())
    assert np_(lin.weight).tolist() == [[0, 1, 2], [3, 4, 5]] and np_(lin.bias).tolist() == [6, 7]
    with pytest.raises(TypeError, match="expected torch.Tensor"):
        nn.utils.vector_to_parameters([1.0], lin.parameters())


# ------------------------------------------------------------------ losses against NumPy

def _log_softmax(x, axis=1):
    m = x.max(axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis, keepdims=True))


def _ce_ref(x, t, w=None, ignore=-100, smoothing=0.0, reduction="mean"):
    lp = _log_softmax(x)
    n, c = x.shape
    w = np.ones(c) if w is None else w
    valid = t != ignore
    ts = np.where(valid, t, 0)
    nll = -lp[np.arange(n), ts] * w[ts] * valid
    smooth = -(lp * w).sum(1) * valid
    if reduction == "none":
        return (1 - smoothing) * nll + smoothing / c * smooth
    if reduction == "sum":
        return (1 - smoothing) * nll.sum() + smoothing / c * smooth.sum()
    denom = (w[ts] * valid).sum()
    return (1 - smoothing) * nll.sum() / denom + smoothing / c * smooth.sum() / denom


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_and_nll(reduction):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((6, 5))
    t = np.array([0, 4, 2, -100, 1, 2])
    w = rng.random(5) + 0.5
    xt, tt, wt = torch.tensor(x), torch.tensor(t), torch.tensor(w)
    np.testing.assert_allclose(np_(F.cross_entropy(xt, tt, reduction=reduction)),
                               _ce_ref(x, t, reduction=reduction), rtol=1e-10)
    np.testing.assert_allclose(np_(F.cross_entropy(xt, tt, wt, reduction=reduction)),
                               _ce_ref(x, t, w, reduction=reduction), rtol=1e-10)
    np.testing.assert_allclose(np_(F.cross_entropy(xt, tt, wt, reduction=reduction, label_smoothing=0.3)),
                               _ce_ref(x, t, w, smoothing=0.3, reduction=reduction), rtol=1e-10)
    np.testing.assert_allclose(np_(nn.NLLLoss(wt, reduction=reduction)(F.log_softmax(xt, 1), tt)),
                               _ce_ref(x, t, w, reduction=reduction), rtol=1e-10)
    p = rng.random((6, 5))
    p /= p.sum(1, keepdims=True)
    loss = -(_log_softmax(x) * p).sum(1)
    expect = {"none": loss, "sum": loss.sum(), "mean": loss.mean()}[reduction]
    np.testing.assert_allclose(np_(F.cross_entropy(xt, torch.tensor(p), reduction=reduction)), expect, rtol=1e-10)


def test_cross_entropy_gradient_and_shapes():
    rng = np.random.default_rng(1)
    x = torch.tensor(rng.standard_normal((4, 3)), requires_grad=True)
    t = torch.tensor([0, 2, 1, 2])
    loss = nn.CrossEntropyLoss()(x, t)
    loss.backward()
    sm = np.exp(_log_softmax(np_(x)))
    onehot = np.eye(3)[[0, 2, 1, 2]]
    np.testing.assert_allclose(np_(x.grad), (sm - onehot) / 4, rtol=1e-10)
    assert torch.autograd.gradcheck(lambda a: F.cross_entropy(a, t, label_smoothing=0.1), (x,))
    img = torch.randn(2, 3, 4, 5)
    assert F.cross_entropy(img, torch.randint(0, 3, (2, 4, 5)), reduction="none").shape == (2, 4, 5)
    assert F.cross_entropy(torch.randn(5), torch.tensor(2)).shape == ()
    with pytest.raises(IndexError, match="Target 7 is out of bounds."):
        F.cross_entropy(torch.randn(2, 3), torch.tensor([0, 7]))
    with pytest.raises(ValueError, match="Expected input batch_size \\(2\\) to match target batch_size \\(3\\)"):
        F.cross_entropy(torch.randn(2, 3), torch.tensor([0, 1, 2]))
    with pytest.raises(ValueError, match="bogus is not a valid value for reduction"):
        F.mse_loss(torch.ones(2), torch.ones(2), reduction="bogus")


@pytest.mark.filterwarnings("ignore:reduction. 'mean' divides")
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_regression_and_binary_losses(reduction):
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    red = {"mean": np.mean, "sum": np.sum, "none": lambda v: v}[reduction]
    at, bt = torch.tensor(a), torch.tensor(b)
    d = a - b
    np.testing.assert_allclose(np_(nn.MSELoss(reduction=reduction)(at, bt)), red(d * d), rtol=1e-12)
    np.testing.assert_allclose(np_(nn.L1Loss(reduction=reduction)(at, bt)), red(np.abs(d)), rtol=1e-12)
    beta = 0.7
    sl1 = np.where(np.abs(d) < beta, 0.5 * d * d / beta, np.abs(d) - 0.5 * beta)
    np.testing.assert_allclose(np_(nn.SmoothL1Loss(reduction=reduction, beta=beta)(at, bt)), red(sl1), rtol=1e-12)
    delta = 0.6
    hub = np.where(np.abs(d) < delta, 0.5 * d * d, delta * (np.abs(d) - 0.5 * delta))
    np.testing.assert_allclose(np_(nn.HuberLoss(reduction=reduction, delta=delta)(at, bt)), red(hub), rtol=1e-12)
    p, y = rng.random((3, 4)), rng.random((3, 4))
    bce = -(y * np.log(p) + (1 - y) * np.log(1 - p))
    np.testing.assert_allclose(np_(nn.BCELoss(reduction=reduction)(torch.tensor(p), torch.tensor(y))), red(bce),
                               rtol=1e-12)
    pw = rng.random(4) + 0.5
    logits = a * 3
    sig = 1 / (1 + np.exp(-logits))
    bcel = -(pw * y * np.log(sig) + (1 - y) * np.log(1 - sig))
    got = nn.BCEWithLogitsLoss(reduction=reduction, pos_weight=torch.tensor(pw))(torch.tensor(logits),
                                                                                 torch.tensor(y))
    np.testing.assert_allclose(np_(got), red(bcel), rtol=1e-10)
    lp = np.log(rng.random((3, 4)))
    q = rng.random((3, 4))
    q[0, 0] = 0.0
    kl = np.where(q > 0, q * np.log(np.where(q > 0, q, 1)), 0) - q * lp
    np.testing.assert_allclose(np_(F.kl_div(torch.tensor(lp), torch.tensor(q), reduction=reduction)), red(kl),
                               rtol=1e-12)
    klt = np.exp(b) * (b - lp)
    np.testing.assert_allclose(np_(nn.KLDivLoss(reduction=reduction, log_target=True)(torch.tensor(lp), bt)),
                               red(klt), rtol=1e-12)


def test_binary_losses_edges_and_gradients():
    # log is clamped at -100 as in PyTorch, so p = 0 or 1 gives a finite loss
    loss = F.binary_cross_entropy(torch.tensor([0.0, 1.0]), torch.tensor([1.0, 0.0]), reduction="none")
    assert np_(loss).tolist() == [100.0, 100.0]
    with pytest.raises(RuntimeError, match="all elements of input should be between 0 and 1"):
        F.binary_cross_entropy(torch.tensor([1.5]), torch.tensor([1.0]))
    with pytest.raises(ValueError, match="must be the same as input size"):
        F.binary_cross_entropy_with_logits(torch.ones(2), torch.ones(3))
    big = F.binary_cross_entropy_with_logits(torch.tensor([-200.0, 200.0]), torch.tensor([1.0, 0.0]),
                                             reduction="none")
    np.testing.assert_allclose(np_(big), [200.0, 200.0])               # stable for large logits
    x = torch.tensor(np.random.default_rng(3).random((2, 3)) * 0.8 + 0.1, requires_grad=True)
    y = torch.tensor(np.random.default_rng(4).random((2, 3)))
    assert torch.autograd.gradcheck(lambda a: F.binary_cross_entropy(a, y), (x,))
    assert torch.autograd.gradcheck(lambda a: F.binary_cross_entropy_with_logits(a, y, pos_weight=y[0]), (x,))
    with pytest.warns(UserWarning, match="reduction: 'mean' divides the total loss"):
        F.kl_div(torch.zeros(2), torch.ones(2))
    np.testing.assert_allclose(float(F.kl_div(torch.zeros(2, 2), torch.ones(2, 2), reduction="batchmean")), 0.0)


def test_other_losses_run():
    x1, x2 = torch.randn(5, 3), torch.randn(5, 3)
    y = torch.tensor([1.0, -1.0, 1.0, 1.0, -1.0])
    for loss in (nn.CosineEmbeddingLoss()(x1, x2, y), nn.MarginRankingLoss(0.1)(x1[:, 0], x2[:, 0], y),
                 nn.HingeEmbeddingLoss()(x1[:, 0], y), nn.SoftMarginLoss()(x1[:, 0], y),
                 nn.TripletMarginLoss()(x1, x2, x2 + 1), nn.MultiMarginLoss()(x1, torch.tensor([0, 1, 2, 0, 1])),
                 nn.MultiLabelSoftMarginLoss()(x1, (x2 > 0).float()), nn.PoissonNLLLoss()(x1, x2.abs()),
                 nn.GaussianNLLLoss()(x1, x2, torch.ones(5, 3))):
        assert loss.shape == () and np.isfinite(float(loss))
    # margin ranking: max(0, -y (x1 - x2) + margin)
    a, b = np_(x1[:, 0]), np_(x2[:, 0])
    ref = np.maximum(0, -np_(y) * (a - b) + 0.1).mean()
    np.testing.assert_allclose(float(nn.MarginRankingLoss(0.1)(x1[:, 0], x2[:, 0], y)), ref, rtol=1e-5)


def test_clip_grad_value_clamps_both_sides_and_keeps_nan():
    p = nn.Parameter(torch.zeros(5))
    p.grad = torch.tensor([-3.0, -0.5, 0.5, 3.0, float("nan")])
    nn.utils.clip_grad_value_([p], 1.0)
    np.testing.assert_array_equal(p.grad.numpy(), np.array([-1.0, -0.5, 0.5, 1.0, np.nan], np.float32))
