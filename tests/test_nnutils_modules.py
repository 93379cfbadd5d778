"""AdaptiveLogSoftmaxWithLoss (and other nn modules of issue 22) against values checked with torch 2.13."""
import numpy as np
import pytest

import reftorch as torch
from reftorch import nn

_REPR = """AdaptiveLogSoftmaxWithLoss(
  (head): Linear(in_features=8, out_features=5, bias=False)
  (tail): ModuleList(
    (0): Sequential(
      (0): Linear(in_features=8, out_features=4, bias=False)
      (1): Linear(in_features=4, out_features=3, bias=False)
    )
    (1): Sequential(
      (0): Linear(in_features=8, out_features=2, bias=False)
      (1): Linear(in_features=2, out_features=4, bias=False)
    )
  )
)"""


def _asm():
    rng = np.random.RandomState(0)
    m = nn.AdaptiveLogSoftmaxWithLoss(8, 10, [3, 6], div_value=2.0)
    with torch.no_grad():
        for p in m.parameters():
            p.copy_(torch.tensor(rng.uniform(-1, 1, tuple(p.shape)).astype(np.float32)))
    x = torch.tensor(rng.randn(5, 8).astype(np.float32)).requires_grad_(True)
    return m, x


def test_adaptive_log_softmax_structure():
    m, _ = _asm()
    assert repr(m) == _REPR
    assert [(n, tuple(p.shape)) for n, p in m.named_parameters()] == [
        ("head.weight", (5, 8)), ("tail.0.0.weight", (4, 8)), ("tail.0.1.weight", (3, 4)),
        ("tail.1.0.weight", (2, 8)), ("tail.1.1.weight", (4, 2))]


def test_adaptive_log_softmax_forward_backward_log_prob_predict():
    m, x = _asm()
    out, loss = m(x, torch.tensor([0, 4, 9, 2, 7]))
    loss.backward()
    np.testing.assert_allclose(out.detach().numpy(), [-1.6199, -2.9457, -3.2564, -2.9514, -5.3737], atol=1e-4)
    np.testing.assert_allclose(float(loss.detach()), 3.2294, atol=1e-4)
    np.testing.assert_allclose(x.grad.numpy().sum(1), [-0.1308, 0.2992, -0.0861, -0.4101, 0.4928], atol=1e-4)
    np.testing.assert_allclose(float(m.tail[1][0].weight.grad.sum()), -0.6256, atol=1e-4)
    lp = m.log_prob(x).detach().numpy()
    np.testing.assert_allclose(lp[:, [0, 5, 9]], [[-1.6199, -6.7462, -3.061], [-3.0805, -3.8327, -2.7048],
                                                  [-3.6673, -1.8929, -3.2564], [-2.158, -7.5567, -2.4547],
                                                  [-1.9877, -6.6381, -5.1155]], atol=1e-4)
    np.testing.assert_allclose(np.exp(lp).sum(1), np.ones(5), atol=1e-5)
    assert m.predict(x).tolist() == [6, 8, 8, 8, 1]
    assert m.predict(x[1:2]).tolist() == [8] and m.predict(x[:1]).tolist() == [6]
    o1 = m(x[0], torch.tensor(0))
    assert tuple(o1.output.shape) == () and abs(float(o1.loss.detach()) - 1.6199) < 1e-4


def test_adaptive_log_softmax_errors():
    msg = ("^cutoffs should be a sequence of unique, positive integers sorted in an increasing order, where each "
           "value is between 1 and n_classes-1$")
    with pytest.raises(ValueError, match="^cutoffs should be a sequence of length larger than 0$"):
        nn.AdaptiveLogSoftmaxWithLoss(8, 10, [])
    for bad in ([3, 3], [0, 4], [4, 10]):
        with pytest.raises(ValueError, match=msg):
            nn.AdaptiveLogSoftmaxWithLoss(8, 10, bad)
    m, x = _asm()
    with pytest.raises(RuntimeError, match=r"^Target values should be in \[0, 9\], but values in range \[0, 12\] "
                                           r"were found. $"):
        m(x, torch.tensor([0, 4, 12, 2, 7]))
    with pytest.raises(RuntimeError, match="^0D or 1D target tensor expected, multi-target not supported$"):
        m(x, torch.tensor([[0]]))
    with pytest.raises(RuntimeError, match="^Input and target should have the same size in the batch dimension.$"):
        m(x, torch.tensor([0, 1]))


# ------------------------------------------------------------------ lazy modules

def test_lazy_linear_uninitialized_then_materialized():
    from reftorch.nn.parameter import UninitializedParameter, is_lazy
    m = nn.LazyLinear(4)
    assert repr(m) == "LazyLinear(in_features=0, out_features=4, bias=True)"
    assert isinstance(m.weight, UninitializedParameter) and repr(m.weight) == "<UninitializedParameter>"
    assert is_lazy(m.weight) and m.has_uninitialized_params()
    assert {k: type(v).__name__ for k, v in m.state_dict().items()} == {"weight": "UninitializedParameter",
                                                                         "bias": "UninitializedParameter"}
    with pytest.raises(RuntimeError, match="^Can't access the shape of an uninitialized parameter or buffer"):
        m.weight.shape
    y = m(torch.ones(2, 3))
    assert type(m) is nn.Linear and repr(m) == "Linear(in_features=3, out_features=4, bias=True)"
    assert tuple(m.weight.shape) == (4, 3) and tuple(y.shape) == (2, 4)
    assert type(m.weight) is nn.Parameter and len(m._forward_pre_hooks) == 0


def test_lazy_linear_load_state_dict_materializes():
    m = nn.LazyLinear(4)
    sd = nn.Linear(5, 4).state_dict()
    m.load_state_dict(sd)
    assert type(m).__name__ == "LazyLinear" and tuple(m.weight.shape) == (4, 5) and m.in_features == 0
    m(torch.ones(1, 5))
    assert type(m) is nn.Linear and m.in_features == 5 and bool((m.weight == sd["weight"]).all())


_CONV = [(nn.LazyConv1d, (2, 3, 8), "LazyConv1d(0, 6, kernel_size=(3,), stride=(1,))",
          "Conv1d(3, 6, kernel_size=(3,), stride=(1,))", (6, 3, 3), (2, 6, 6)),
         (nn.LazyConv2d, (2, 3, 6, 6), "LazyConv2d(0, 6, kernel_size=(3, 3), stride=(1, 1))",
          "Conv2d(3, 6, kernel_size=(3, 3), stride=(1, 1))", (6, 3, 3, 3), (2, 6, 4, 4)),
         (nn.LazyConv3d, (1, 2, 4, 4, 4), "LazyConv3d(0, 6, kernel_size=(3, 3, 3), stride=(1, 1, 1))",
          "Conv3d(2, 6, kernel_size=(3, 3, 3), stride=(1, 1, 1))", (6, 2, 3, 3, 3), (1, 6, 2, 2, 2)),
         (nn.LazyConvTranspose1d, (2, 3, 5), "LazyConvTranspose1d(0, 6, kernel_size=(3,), stride=(1,))",
          "ConvTranspose1d(3, 6, kernel_size=(3,), stride=(1,))", (3, 6, 3), (2, 6, 7)),
         (nn.LazyConvTranspose2d, (3, 5, 5), "LazyConvTranspose2d(0, 6, kernel_size=(3, 3), stride=(1, 1))",
          "ConvTranspose2d(3, 6, kernel_size=(3, 3), stride=(1, 1))", (3, 6, 3, 3), (6, 7, 7)),
         (nn.LazyConvTranspose3d, (1, 2, 3, 3, 3), "LazyConvTranspose3d(0, 6, kernel_size=(3, 3, 3), stride=(1, 1, 1))",
          "ConvTranspose3d(2, 6, kernel_size=(3, 3, 3), stride=(1, 1, 1))", (2, 6, 3, 3, 3), (1, 6, 5, 5, 5))]


@pytest.mark.parametrize("cls,shape,r0,r1,wshape,yshape", _CONV)
def test_lazy_conv(cls, shape, r0, r1, wshape, yshape):
    c = cls(6, 3)
    assert repr(c) == r0
    y = c(torch.ones(*shape))
    assert repr(c) == r1 and type(c).__name__ == r1.split("(")[0]
    assert tuple(c.weight.shape) == wshape and tuple(y.shape) == yshape


def test_lazy_conv_errors():
    with pytest.raises(ValueError, match="^in_channels must be divisible by groups$"):
        nn.LazyConv2d(4, 3, groups=2)(torch.ones(1, 3, 5, 5))
    with pytest.raises(RuntimeError, match=r"^Expected 3D \(unbatched\) or 4D \(batched\) input to LazyConv2d, but "
                                           r"got input of size: torch.Size\(\[5, 5\]\)$"):
        nn.LazyConv2d(4, 3)(torch.ones(5, 5))


_NORM = [(nn.LazyBatchNorm1d, (4, 3), [0.45, 0.55, 0.65]), (nn.LazyBatchNorm2d, (2, 3, 2, 2), [0.75, 1.15, 1.55]),
         (nn.LazyBatchNorm3d, (2, 3, 1, 2, 2), [0.75, 1.15, 1.55]),
         (nn.LazyInstanceNorm1d, (2, 3, 4), [0.75, 1.15, 1.55]),
         (nn.LazyInstanceNorm2d, (2, 3, 2, 2), [0.75, 1.15, 1.55]),
         (nn.LazyInstanceNorm3d, (2, 3, 2, 2, 2), [1.55, 2.35, 3.15])]


@pytest.mark.parametrize("cls,shape,running_mean", _NORM)
def test_lazy_norm(cls, shape, running_mean):
    b = cls()
    name = cls.__name__[4:]
    # torch's lazy norms (the InstanceNorm ones too) default to affine=True, track_running_stats=True
    tail = ", eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)"
    assert repr(b) == f"{cls.__name__}(0{tail}"
    keys = ["bias", "num_batches_tracked", "running_mean", "running_var", "weight"]
    assert sorted(b.state_dict()) == keys
    y = b(torch.arange(float(np.prod(shape))).reshape(*shape))
    assert type(b).__name__ == name and repr(b) == f"{name}(3{tail}" and sorted(b.state_dict()) == keys
    np.testing.assert_allclose(b.running_mean.tolist(), running_mean, atol=1e-5)
    assert abs(float(y.sum().detach())) < 1e-4


def test_lazy_misc_dtype_copy_state_dict_sequential():
    import copy
    m = nn.LazyLinear(4, device="cpu", dtype=torch.float64)
    assert m(torch.ones(2, 3, dtype=torch.float64)).dtype == torch.float64 and m.weight.dtype == torch.float64
    assert type(copy.deepcopy(nn.LazyLinear(4)).weight).__name__ == "UninitializedParameter"
    m = nn.LazyLinear(4)
    m.load_state_dict(nn.LazyLinear(4).state_dict())              # uninitialized into uninitialized
    assert type(m.weight).__name__ == "UninitializedParameter"
    with pytest.raises(RuntimeError, match="^Can't access the shape of an uninitialized parameter or buffer"):
        nn.Linear(3, 4).load_state_dict(nn.LazyLinear(4).state_dict())
    s = nn.Sequential(nn.LazyLinear(5), nn.ReLU(), nn.LazyLinear(2))
    s(torch.ones(1, 7))
    assert repr(s) == ("Sequential(\n  (0): Linear(in_features=7, out_features=5, bias=True)\n  (1): ReLU()\n"
                       "  (2): Linear(in_features=5, out_features=2, bias=True)\n)")
    assert sum(p.numel() for p in s.parameters()) == 52
    b = nn.LazyBatchNorm1d(affine=False, track_running_stats=False)
    b(torch.ones(4, 3))
    assert repr(b) == ("BatchNorm1d(0, eps=1e-05, momentum=0.1, affine=False, bias=False, "
                       "track_running_stats=False)") and sorted(b.state_dict()) == []
    m = nn.LazyLinear(3, bias=False)
    m(torch.ones(2, 2))
    assert m.bias is None and tuple(m.weight.shape) == (3, 2)
