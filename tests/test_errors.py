"""The catalogue of user mistakes (issue 10): each raises PyTorch's exception type with a message that
names the problem the way PyTorch's does, and leaves every input, output, `.grad`, module and
optimizer state exactly as it was (nothing half-written).

A case is one row: (id, setup, expected exception type, regex on the message). `setup()` builds
fresh objects and returns (thunk, watched): the thunk makes the mistake, `watched` lists the
tensors / modules / optimizers / files whose state must be unchanged afterwards.
"""
import copy
import os
import re
import pickle
import subprocess
import sys
import warnings

import numpy as np
import pytest
import yaml
from hypothesis import given, strategies as st

import reftorch as rt
import reftorch.nn as nn
from codegen import model

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OPS_YAML = os.path.join(REPO, "reftorch", "ops.yaml")


# ------------------------------------------------------------------ state snapshots

def _tensor_state(t):
    g = t.grad
    return ("tensor", t.detach().numpy().copy(), tuple(t.shape), tuple(t.stride()), t.dtype, t._version,
            t.requires_grad, None if g is None else g.detach().numpy().copy())


def snapshot(obj):
    if isinstance(obj, rt.Tensor):
        return _tensor_state(obj)
    if isinstance(obj, nn.Module):
        return ("module", {k: _tensor_state(v) for k, v in obj.state_dict().items()},
                [_tensor_state(p) for p in obj.parameters()], obj.training)
    if isinstance(obj, rt.optim.Optimizer):
        sd = obj.state_dict()
        state = {k: {n: (_tensor_state(v) if isinstance(v, rt.Tensor) else v) for n, v in s.items()}
                 for k, s in sd["state"].items()}
        return ("optim", state, copy.deepcopy(sd["param_groups"]), len(obj.param_groups))
    if isinstance(obj, str):                                    # a file path
        if not os.path.exists(obj):
            return ("nofile",)
        with open(obj, "rb") as f:
            return ("file", f.read())
    raise TypeError(obj)


def same(a, b):
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.shape == b.shape and a.dtype == b.dtype and \
            np.array_equal(a, b, equal_nan=a.dtype.kind == "f")
    if isinstance(a, (tuple, list)):
        return type(a) is type(b) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return a == b


CASES = []


def case(id, exc, regex):
    def deco(setup):
        CASES.append(pytest.param(setup, exc, regex, id=id))
        return setup
    return deco


def _run_case(setup, exc, regex):
    thunk, watched = setup()
    before = [snapshot(w) for w in watched]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(exc, match=regex):
            thunk()
    for w, b in zip(watched, before):
        assert same(snapshot(w), b), f"state of {type(w).__name__} changed by a failing call"


def T(*shape, dtype=None, rg=False):
    n = int(np.prod(shape)) if shape else 1
    x = rt.arange(n, dtype=dtype or rt.float32).reshape(*shape) if shape else rt.tensor(1.0)
    return x.requires_grad_() if rg else x


# ------------------------------------------------------------------ shapes

@case("broadcast-mismatch", RuntimeError,
      r"The size of tensor a \(2\) must match the size of tensor b \(4\) at non-singleton dimension 0")
def _():
    a, b = T(2, 3), T(4, 3)
    return (lambda: a + b), [a, b]


@case("broadcast-mismatch-inplace", RuntimeError, r"The size of tensor a \(2\) must match the size of tensor b \(4\)")
def _():
    a, b = T(2, 3), T(4, 3)
    return (lambda: a.add_(b)), [a, b]


@case("inplace-output-cannot-grow", RuntimeError,
      r"output with shape \[3\] doesn't match the broadcast shape \[2, 3\]")
def _():
    a, b = T(3), T(2, 3)
    return (lambda: a.mul_(b)), [a, b]


@case("copy_-unbroadcastable", RuntimeError, r"The size of tensor a \(2\) must match the size of tensor b \(4\)")
def _():
    a, b = T(2, 3), T(4, 3)
    return (lambda: a.copy_(b)), [a, b]


@case("matmul-inner-dim", RuntimeError, r"mat1 and mat2 shapes cannot be multiplied \(2x3 and 4x5\)")
def _():
    a, b = T(2, 3), T(4, 5)
    return (lambda: a @ b), [a, b]


@case("bmm-batch", RuntimeError, r"Expected size for first two dimensions of batch2 tensor to be: \[2, 4\]")
def _():
    a, b = T(2, 3, 4), T(3, 4, 5)
    return (lambda: rt.bmm(a, b)), [a, b]


@case("matmul-0d", RuntimeError, r"both arguments to matmul need to be at least 1D, but they are 0D and 1D")
def _():
    a, b = T(), T(3)
    return (lambda: rt.matmul(a, b)), [a, b]


@case("dot-sizes", RuntimeError, r"inconsistent tensor size, expected tensor \[3\] and src \[4\]")
def _():
    a, b = T(3), T(4)
    return (lambda: rt.dot(a, b)), [a, b]


@case("cat-size-mismatch", RuntimeError,
      r"Sizes of tensors must match except in dimension 0\. Expected size 3 but got size 5 for tensor number 1")
def _():
    a, b = T(2, 3), T(4, 5)
    return (lambda: rt.cat([a, b])), [a, b]


@case("cat-empty-list", ValueError, r"expected a non-empty list of Tensors")
def _():
    return (lambda: rt.cat([])), []


@case("stack-size-mismatch", RuntimeError,
      r"stack expects each tensor to be equal size, but got \[2, 3\] at entry 0 and \[4, 5\] at entry 1")
def _():
    a, b = T(2, 3), T(4, 5)
    return (lambda: rt.stack([a, b])), [a, b]


@case("view-incompatible-strides", RuntimeError,
      r"view size is not compatible with input tensor's size and stride.*Use \.reshape\(\.\.\.\) instead")
def _():
    a = T(2, 3)
    return (lambda: a.t().view(6)), [a]


@case("reshape-wrong-size", RuntimeError, r"shape '\[5\]' is invalid for input of size 6")
def _():
    a = T(2, 3)
    return (lambda: a.reshape(5)), [a]


@case("view-wrong-size", RuntimeError, r"shape '\[4, 2\]' is invalid for input of size 6")
def _():
    a = T(2, 3)
    return (lambda: a.view(4, 2)), [a]


@case("reshape-minus-one-twice", RuntimeError, r"only one dimension can be inferred")
def _():
    a = T(2, 3)
    return (lambda: a.reshape(-1, -1)), [a]


@case("expand-smaller", RuntimeError,
      r"The expanded size of the tensor \(1\) must match the existing size \(2\) at non-singleton dimension 0")
def _():
    a = T(2, 3)
    return (lambda: a.expand(1, 3)), [a]


@case("expand-fewer-dims", RuntimeError,
      r"the number of sizes provided \(1\) must be greater or equal to the number of dimensions in the tensor \(2\)")
def _():
    a = T(2, 3)
    return (lambda: a.expand(3)), [a]


@case("permute-repeated-dims", RuntimeError, r"permute\(\): duplicate dims are not allowed")
def _():
    a = T(2, 3)
    return (lambda: a.permute(0, 0)), [a]


@case("permute-wrong-length", RuntimeError, r"input\.dim\(\) = 2 is not equal to len\(dims\) = 1")
def _():
    a = T(2, 3)
    return (lambda: a.permute(0)), [a]


@case("split-sizes-dont-sum", RuntimeError,
      r"split_with_sizes expects split_sizes to sum exactly to 3 .*but got split_sizes=\[1, 1\]")
def _():
    a = T(2, 3)
    return (lambda: a.split([1, 1], dim=1)), [a]


@case("chunk-zero", RuntimeError, r"chunk expects `chunks` to be greater than 0, got: 0")
def _():
    a = T(2, 3)
    return (lambda: a.chunk(0)), [a]


@case("narrow-past-end", RuntimeError, r"start \(2\) \+ length \(2\) exceeds dimension size \(3\)")
def _():
    a = T(2, 3)
    return (lambda: a.narrow(1, 2, 2)), [a]


@case("select-index", IndexError, r"select\(\): index 2 out of range for tensor of size \[2, 3\] at dimension 0")
def _():
    a = T(2, 3)
    return (lambda: a.select(0, 2)), [a]


@case("flatten-start-after-end", RuntimeError, r"flatten\(\) has invalid args: start_dim cannot come after end_dim")
def _():
    a = T(2, 3)
    return (lambda: a.flatten(1, 0)), [a]


@case("repeat-fewer-dims", RuntimeError,
      r"Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor")
def _():
    a = T(2, 3)
    return (lambda: a.repeat(2)), [a]


@case("negative-size", RuntimeError, r"Trying to create tensor with negative dimension -1: \[-1\]")
def _():
    return (lambda: rt.zeros(-1)), []


@case("max-of-empty", RuntimeError, r"max\(\): Expected reduction dim to be specified for input\.numel\(\) == 0")
def _():
    return (lambda: rt.zeros(0).max()), []


@case("where-broadcast", RuntimeError, r"The size of tensor a \(2\) must match the size of tensor b \(3\)")
def _():
    c, a, b = rt.tensor([True, False]), T(3), T(3)
    return (lambda: rt.where(c, a, b)), [c, a, b]


@case("item-of-many", RuntimeError, r"a Tensor with 6 elements cannot be converted to Scalar")
def _():
    a = T(2, 3)
    return (lambda: a.item()), [a]


@case("bool-of-many", RuntimeError, r"Boolean value of Tensor with more than one value is ambiguous")
def _():
    a = T(2, 3)
    return (lambda: bool(a)), [a]


@case("unsqueeze-dim", IndexError, r"Dimension out of range \(expected to be in range of \[-3, 2\], but got 3\)")
def _():
    a = T(2, 3)
    return (lambda: a.unsqueeze(3)), [a]


# ------------------------------------------------------------------ dtypes

@case("int-mean", RuntimeError, r"mean\(\): could not infer output dtype\. .*floating point .* Got: Long")
def _():
    a = T(3, dtype=rt.int64)
    return (lambda: a.mean()), [a]


@case("int-std", RuntimeError, r"std and var only support floating point and complex dtypes")
def _():
    a = T(3, dtype=rt.int64)
    return (lambda: a.std()), [a]


@case("int-softmax", RuntimeError, r"\"_?softmax\w*\" not implemented for 'Long'")
def _():
    a = T(3, dtype=rt.int64)
    return (lambda: a.softmax(0)), [a]


@case("int-norm", RuntimeError, r"linalg\.vector_norm: Expected a floating point or complex tensor as input\. Got Long")
def _():
    a = T(3, dtype=rt.int64)
    return (lambda: a.norm()), [a]


@case("int-rand", RuntimeError, r"\"check_uniform_bounds\" not implemented for 'Long'")
def _():
    return (lambda: rt.rand(3, dtype=rt.int64)), []


@case("int-randn", RuntimeError, r"\"normal_kernel_cpu\" not implemented for 'Long'")
def _():
    return (lambda: rt.randn(3, dtype=rt.int64)), []


@case("bitwise-and-float", RuntimeError, r"\"bitwise_and_cpu\" not implemented for 'Float'")
def _():
    a = T(3)
    return (lambda: a & a), [a]


@case("bitwise-not-float", RuntimeError, r"\"bitwise_not_cpu\" not implemented for 'Float'")
def _():
    a = T(3)
    return (lambda: ~a), [a]


@case("shift-float", RuntimeError, r"\"lshift_cpu\" not implemented for 'Float'")
def _():
    a = T(3)
    return (lambda: a << 1), [a]


@case("add_-float-into-int", RuntimeError, r"result type Float can't be cast to the desired output type Long")
def _():
    a, b = T(3, dtype=rt.int64), rt.ones(3)
    return (lambda: a.add_(b)), [a, b]


@case("mul_-python-float-into-int", RuntimeError, r"result type Float can't be cast to the desired output type Long")
def _():
    a = T(3, dtype=rt.int64)
    return (lambda: a.mul_(1.5)), [a]


@case("div_-int", RuntimeError, r"result type Float can't be cast to the desired output type Long")
def _():
    a = T(3, dtype=rt.int64)
    return (lambda: a.div_(2)), [a]


# PyTorch's exact texts, from the `rejects` field of the sub and neg entries in ops.yaml
@case("bool-subtraction", RuntimeError, r"^Subtraction, the `-` operator, with two bool tensors is not supported\. "
                                        r"Use the `\^` or `logical_xor\(\)` operator instead\.$")
def _():
    a, b = rt.tensor([True, False]), rt.tensor([False, False])
    return (lambda: a - b), [a, b]


@case("bool-rsub-scalar", RuntimeError, r"^Subtraction, the `-` operator, with a bool tensor is not supported\. If you "
                                        r"are trying to invert a mask, use the `~` or `logical_not\(\)` operator")
def _():
    a = rt.tensor([True, False])
    return (lambda: 1 - a), [a]


@case("bool-sub-inplace-into-int", RuntimeError, r"^Subtraction, the `-` operator, with a bool tensor")
def _():
    a, b = rt.tensor([3, 4]), rt.tensor([True, False])
    return (lambda: a.sub_(b)), [a, b]


@case("scalar-arg-overflows-integer-dtype", RuntimeError, r"^value cannot be converted to type uint8_t without overflow$")
def _():
    a = rt.tensor([1, 2, 3], dtype=rt.uint8)
    return (lambda: rt.nn.functional.threshold(a, 1, -1)), [a]


@case("alpha-overflows-integer-dtype-inplace", RuntimeError, r"^value cannot be converted to type int8_t without overflow$")
def _():
    a = rt.tensor([1, 2], dtype=rt.int8)
    return (lambda: a.add_(a, alpha=1000)), [a]


@case("bool-negation", RuntimeError, r"^Negation, the `-` operator, on a bool tensor is not supported\. If you are "
                                     r"trying to invert a mask, use the `~` or `logical_not\(\)` operator instead\.$")
def _():
    a = rt.tensor([True, False])
    return (lambda: -a), [a]


@case("float-index-tensor", IndexError, r"tensors used as indices must be long, int, byte or bool tensors")
def _():
    a, i = T(2, 3), rt.tensor([0.0])
    return (lambda: a[i]), [a, i]


@case("float-index-tensor-setitem", IndexError, r"tensors used as indices must be long, int, byte or bool tensors")
def _():
    a, i = T(2, 3), rt.tensor([0.0])
    return (lambda: a.__setitem__(i, 1.0)), [a, i]


@case("python-float-index", IndexError, r"only integers, slices .* are valid indices")
def _():
    a = T(2, 3)
    return (lambda: a[1.5]), [a]


# ------------------------------------------------------------------ indexing

@case("int-index-out-of-range", IndexError, r"index 5 is out of bounds for dimension 0 with size 2")
def _():
    a = T(2, 3)
    return (lambda: a[5]), [a]


@case("negative-index-out-of-range", IndexError, r"index -3 is out of bounds for dimension 0 with size 2")
def _():
    a = T(2, 3)
    return (lambda: a[-3]), [a]


@case("tensor-index-out-of-range", IndexError, r"index 5 is out of bounds for dimension 0 with size 2")
def _():
    a, i = T(2, 3), rt.tensor([5])
    return (lambda: a[i]), [a, i]


@case("setitem-partly-out-of-range", IndexError, r"index 5 is out of bounds for dimension 0 with size 2")
def _():
    a, i = T(2, 3), rt.tensor([0, 5])           # index 0 is valid: it must not be written either
    return (lambda: a.__setitem__(i, -1.0)), [a, i]


@case("index_put_-out-of-range", IndexError, r"index 7 is out of bounds for dimension 0 with size 2")
def _():
    a, i, v = T(2, 3), rt.tensor([0, 7]), rt.tensor(-1.0)
    return (lambda: a.index_put_((i,), v)), [a, i, v]


@case("bool-mask-wrong-shape", IndexError,
      r"The shape of the mask \[3\] at index 0 does not match the shape of the indexed tensor \[2, 3\] at index 0")
def _():
    a, m = T(2, 3), rt.tensor([True, False, True])
    return (lambda: a[m]), [a, m]


@case("bool-mask-wrong-shape-setitem", IndexError, r"The shape of the mask \[3\] at index 0 does not match")
def _():
    a, m = T(2, 3), rt.tensor([True, False, True])
    return (lambda: a.__setitem__(m, 0.0)), [a, m]


@case("too-many-indices", IndexError, r"too many indices for tensor of dimension 2")
def _():
    a = T(2, 3)
    return (lambda: a[0, 0, 0]), [a]


@case("setitem-unbroadcastable-value", RuntimeError,
      r"The expanded size of the tensor \(3\) must match the existing size \(4\) at non-singleton dimension 0")
def _():
    a, v = T(2, 3), rt.ones(4)
    return (lambda: a.__setitem__(0, v)), [a, v]


@case("gather-index-out-of-range", RuntimeError, r"index 9 is out of bounds for dimension 0 with size 2")
def _():
    a, i = T(2, 3), rt.tensor([[0, 9, 0]])
    return (lambda: a.gather(0, i)), [a, i]


@case("index_select-out-of-range", IndexError, r"index out of range in self")
def _():
    a, i = T(2, 3), rt.tensor([0, 9])
    return (lambda: a.index_select(0, i)), [a, i]


@case("embedding-out-of-range", IndexError, r"index out of range in self")
def _():
    m, i = nn.Embedding(3, 2), rt.tensor([5])
    return (lambda: m(i)), [m, i]


# ------------------------------------------------------------------ autograd

@case("backward-twice", RuntimeError, r"Trying to backward through the graph a second time")
def _():
    x = T(3, rg=True)
    y = (x * x).sum()
    y.backward()
    return (lambda: y.backward()), [x]


@case("non-scalar-backward", RuntimeError, r"grad can be implicitly created only for scalar outputs")
def _():
    x = T(3, rg=True)
    return (lambda: (x * 2).backward()), [x]


@case("backward-without-grad", RuntimeError, r"element 0 of tensors does not require grad and does not have a grad_fn")
def _():
    x = T(3)
    return (lambda: x.sum().backward()), [x]


@case("grad-of-input-not-requiring-grad", RuntimeError, r"One of the differentiated Tensors does not require grad")
def _():
    x, z = T(3, rg=True), T(3)
    y = (x * z).sum()
    return (lambda: rt.autograd.grad(y, [z])), [x, z]


@case("gradient-shape-mismatch", RuntimeError,
      r"Mismatch in shape: grad_output\[0\] has a shape of torch\.Size\(\[4\]\) and output\[0\] has a shape of "
      r"torch\.Size\(\[3\]\)")
def _():
    x = T(3, rg=True)
    return (lambda: (x * 2).backward(rt.ones(4))), [x]


@case("requires_grad-on-int", RuntimeError, r"only Tensors of floating point dtype can require gradients")
def _():
    a = T(3, dtype=rt.int64)
    return (lambda: a.requires_grad_()), [a]


@case("requires_grad-on-int-factory", RuntimeError, r"Only Tensors of floating point and complex dtype can require")
def _():
    return (lambda: rt.zeros(3, dtype=rt.int64, requires_grad=True)), []


@case("backward-in-no_grad-graphless", RuntimeError, r"element 0 of tensors does not require grad")
def _():
    x = T(3, rg=True)

    def go():
        with rt.no_grad():
            (x * 2).sum().backward()
    return go, [x]


@case("inplace-on-leaf-requiring-grad", RuntimeError,
      r"a leaf Variable that requires grad is being used in an in-place operation")
def _():
    x = T(3, rg=True)
    return (lambda: x.add_(1)), [x]


@case("modified-saved-tensor", RuntimeError,
      r"one of the variables needed for gradient computation has been modified by an inplace operation: "
      r"\[torch\.FloatTensor \[3\]\], which is output 0 of \w+, is at version 1; expected version 0 instead")
def _():
    x = T(3, rg=True)
    z = x * 1
    w = z * z
    z.add_(1)
    return (lambda: w.sum().backward()), [x]


@case("modified-saved-result", RuntimeError, r"which is output 0 of Exp\w*, is at version 1; expected version 0")
def _():
    x = T(3, rg=True)
    w = (x * 1).exp()
    w.add_(1)
    return (lambda: w.sum().backward()), [x]


@case("assigned-grad-wrong-size", RuntimeError, r"assigned grad has data of a different size")
def _():
    x = T(3, rg=True)

    def go():
        x.grad = rt.ones(4)
    return go, [x]


# ------------------------------------------------------------------ devices

@case("cuda-unavailable", (RuntimeError, AssertionError), r"Torch not compiled with CUDA enabled|CUDA")
def _():
    if rt.cuda.is_available():
        pytest.skip("a CUDA device is present")
    return (lambda: rt.zeros(2, device="cuda")), []


@case("to-cuda-unavailable", (RuntimeError, AssertionError), r"Torch not compiled with CUDA enabled|CUDA")
def _():
    if rt.cuda.is_available():
        pytest.skip("a CUDA device is present")
    a = T(2)
    return (lambda: a.to("cuda")), [a]


@case("unknown-device-type", RuntimeError, r"Expected one of cpu, cuda.* device type at start of device string: tpu")
def _():
    return (lambda: rt.zeros(2, device="tpu")), []


@case("bad-device-index", RuntimeError, r"Invalid device string: 'cuda:x'")
def _():
    return (lambda: rt.device("cuda:x")), []


@case("cpu-cuda-mixing", RuntimeError, r"Expected all tensors to be on the same device, but .*cuda.*cpu|cpu.*cuda")
def _():
    if not rt.cuda.is_available():
        pytest.skip("needs a CUDA device")
    a, b = rt.ones(2), rt.ones(2, device="cuda")
    return (lambda: a + b), [a]


# ------------------------------------------------------------------ modules / optim

def _linear():
    rt.manual_seed(0)
    return nn.Linear(3, 2)


@case("load_state_dict-missing-key", RuntimeError,
      r"Error\(s\) in loading state_dict for Linear:\s+Missing key\(s\) in state_dict: \"bias\"")
def _():
    m = _linear()
    return (lambda: m.load_state_dict({"weight": rt.zeros(2, 3)})), [m]


@case("load_state_dict-unexpected-key", RuntimeError,
      r"Error\(s\) in loading state_dict for Linear:\s+Unexpected key\(s\) in state_dict: \"foo\"")
def _():
    m = _linear()
    return (lambda: m.load_state_dict({"weight": rt.zeros(2, 3), "bias": rt.zeros(2), "foo": rt.zeros(1)})), [m]


@case("load_state_dict-wrong-shape", RuntimeError,
      r"size mismatch for weight: copying a param with shape torch\.Size\(\[3, 3\]\) from checkpoint, "
      r"the shape in current model is torch\.Size\(\[2, 3\]\)")
def _():
    m = _linear()
    return (lambda: m.load_state_dict({"weight": rt.zeros(3, 3), "bias": rt.zeros(2)})), [m]


@case("load_state_dict-nested-wrong-shape", RuntimeError, r"size mismatch for 1\.bias")
def _():
    rt.manual_seed(0)
    m = nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 2))
    sd = {k: v.clone() + 1 for k, v in m.state_dict().items()}
    sd["1.bias"] = rt.zeros(5)                  # every other entry valid: none may be loaded
    return (lambda: m.load_state_dict(sd)), [m]


@case("optimizer-non-leaf", ValueError, r"can't optimize a non-leaf Tensor")
def _():
    x = T(3, rg=True)
    return (lambda: rt.optim.SGD([x * 2], lr=0.1)), [x]


@case("optimizer-param-in-two-groups", ValueError, r"some parameters appear in more than one parameter group")
def _():
    m = _linear()
    opt = rt.optim.SGD(m.parameters(), lr=0.1)
    return (lambda: opt.add_param_group({"params": [m.weight]})), [m, opt]


@case("optimizer-load_state_dict-group-mismatch", ValueError,
      r"loaded state dict contains a parameter group that doesn't match the size of optimizer's group")
def _():
    m = _linear()
    opt = rt.optim.Adam(m.parameters(), lr=0.1)
    m(rt.ones(1, 3)).sum().backward()
    opt.step()
    other = rt.optim.Adam([m.weight], lr=0.5)
    return (lambda: opt.load_state_dict(other.state_dict())), [m, opt]


@case("linear-wrong-features", RuntimeError, r"mat1 and mat2 shapes cannot be multiplied \(2x4 and 3x2\)")
def _():
    m, x = _linear(), T(2, 4)
    return (lambda: m(x)), [m, x]


@case("linear-0d-input", RuntimeError, r"both arguments to linear need to be at least 1D, but they are 0D and 2D")
def _():
    m, x = _linear(), T()
    return (lambda: m(x)), [m, x]


@case("conv2d-wrong-rank", RuntimeError,
      r"Expected 3D \(unbatched\) or 4D \(batched\) input to conv2d, but got input of size: \[3, 5\]")
def _():
    rt.manual_seed(0)
    m, x = nn.Conv2d(3, 4, 3), T(3, 5)
    return (lambda: m(x)), [m, x]


@case("conv2d-wrong-channels", RuntimeError,
      r"Given groups=1, weight of size \[4, 3, 3, 3\], expected input\[1, 2, 5, 5\] to have 3 channels, "
      r"but got 2 channels instead")
def _():
    rt.manual_seed(0)
    m, x = nn.Conv2d(3, 4, 3), T(1, 2, 5, 5)
    return (lambda: m(x)), [m, x]


@case("conv2d-kernel-larger-than-input", RuntimeError, r"Kernel size can't be greater than actual input size")
def _():
    rt.manual_seed(0)
    m, x = nn.Conv2d(3, 4, 3), T(1, 3, 2, 2)
    return (lambda: m(x)), [m, x]


@case("cross_entropy-batch-mismatch", ValueError, r"Expected input batch_size \(2\) to match target batch_size \(3\)")
def _():
    x, t = T(2, 3), rt.tensor([0, 1, 2])
    return (lambda: nn.functional.cross_entropy(x, t)), [x, t]


@case("cross_entropy-target-out-of-range", IndexError, r"Target 5 is out of bounds")
def _():
    x, t = T(2, 3), rt.tensor([0, 5])
    return (lambda: nn.functional.cross_entropy(x, t)), [x, t]


# ------------------------------------------------------------------ files

def _file_case(id, exc, regex, make):
    @case(id, exc, regex)
    def _():
        import tempfile
        d = tempfile.mkdtemp()
        good = os.path.join(d, "good.pt")
        rt.save({"w": rt.arange(6.0).reshape(2, 3), "b": rt.ones(2)}, good)
        return make(d, good)


def _write(path, data):
    with open(path, "wb") as f:
        f.write(data)
    return path


def _truncated(d, good):
    p = _write(os.path.join(d, "t.pt"), open(good, "rb").read()[:-7])
    return (lambda: rt.load(p)), [p]


def _truncated_header(d, good):
    p = _write(os.path.join(d, "t.pt"), open(good, "rb").read()[:20])
    return (lambda: rt.load(p)), [p]


def _corrupted(d, good):
    data = bytearray(open(good, "rb").read())
    data[8:12] = b"\xff\x00{["                      # garble the JSON header
    p = _write(os.path.join(d, "c.pt"), bytes(data))
    return (lambda: rt.load(p)), [p]


def _wrong_format(d, good):
    import pickle
    p = _write(os.path.join(d, "pickle.pt"), pickle.dumps({"w": [1, 2, 3]}))
    return (lambda: rt.load(p)), [p]


def _empty_file(d, good):
    p = _write(os.path.join(d, "empty.pt"), b"")
    return (lambda: rt.load(p)), [p]


def _missing(d, good):
    p = os.path.join(d, "nope", "missing.pt")
    return (lambda: rt.load(p)), [p]


def _write_into_file_path(d, good):
    # the parent "directory" is a regular file: unwritable even for root
    target = os.path.join(good, "x.pt")
    return (lambda: rt.save({"a": rt.ones(2)}, target)), [good]


def _write_fails_midway(d, good):
    # a value that cannot be serialized: the old checkpoint must survive, and no temp file is left
    def go():
        try:
            rt.save({"w": rt.ones(3), "bad": lambda: 0}, good)     # a lambda cannot be pickled
        finally:
            assert sorted(os.listdir(d)) == ["good.pt"]
    return go, [good]


_file_case("load-truncated", RuntimeError, r"good|t\.pt.*(truncated|not a valid)", _truncated)
_file_case("load-truncated-header", RuntimeError, r"t\.pt.*(truncated|not a valid)", _truncated_header)
_file_case("load-corrupted", RuntimeError, r"c\.pt.*(corrupt|not a valid)", _corrupted)
_file_case("load-wrong-format", RuntimeError, r"Unsupported operand 149[\s\S]*pickle\.pt", _wrong_format)
_file_case("load-empty-file", RuntimeError, r"empty\.pt.*(truncated|not a valid)", _empty_file)
_file_case("load-missing-path", FileNotFoundError, r"No such file or directory.*missing\.pt", _missing)
_file_case("save-unwritable-dir-keeps-old", OSError, r"Not a directory|cannot create", _write_into_file_path)
_file_case("save-failing-midway-keeps-old", (TypeError, ValueError, RuntimeError, pickle.PicklingError),
           r"object|serializ|save|pickle",
           _write_fails_midway)


# ------------------------------------------------------------------ dim out of range, from the registry

# values for the non-tensor required arguments of ops whose registry test values depend on the input
_DIM_ARGS = {"unflatten": {"sizes": (1, -1)}, "narrow": {"start": 0, "length": 1}, "select": {"index": 0},
             "unfold": {"size": 1, "step": 1}, "split": {"split_size_or_sections": 1}, "chunk": {"chunks": 2},
             "topk": {"k": 1}, "split_with_sizes": {"split_sizes": [1, 1]},
             "unsafe_split_with_sizes": {"split_sizes": [1, 1]}, "split_with_sizes_copy": {"split_sizes": [1, 1]},
             "unsafe_chunk": {"chunks": 2}, "repeat_interleave": {"repeats": 2}, "scatter_reduce": {"reduce": "sum"},
             "index_reduce": {"reduce": "prod"}, "renorm": {"p": 2, "maxnorm": 1.0}}
# ops whose dim indexes the result, one dimension more than the input's
_EXTRA_DIM = {"stack": 1}


def _dim_ops():
    out = []
    for op in model.load(OPS_YAML):
        if not (op.variants.function or op.variants.method):
            continue
        for a in op.signature.args:
            if a.type in ("dim", "dim?", "dim[]?"):
                out.append(pytest.param(op, a.name, id=f"{op.name}-{a.name}"))
    return out


DIM_OPS = _dim_ops()


def _dim_call(op, bad_arg, bad):
    kw, varargs = {}, []
    watched = []
    for a in op.signature.args:
        if a.type in ("Tensor", "Tensor?"):
            kw[a.name] = T(2, 3)
            watched.append(kw[a.name])
        elif a.type == "Index":
            kw[a.name] = rt.zeros(2, 3, dtype=rt.int64)
        elif a.type == "Tensor[]":
            kw[a.name] = [T(2, 3), T(2, 3)]
            watched += kw[a.name]
        elif a.name in _DIM_ARGS.get(op.name, {}):
            kw[a.name] = _DIM_ARGS[op.name][a.name]
        elif a.type.startswith("dim"):
            kw[a.name] = 0
        elif a.default is None:
            kw[a.name] = False if a.type == "bool" else 0
    kw[bad_arg] = bad
    for a in op.signature.args:
        if a.varargs:
            varargs = [kw.pop(a.name)]
    fn = getattr(rt, op.name) if op.variants.function else getattr(kw.pop("self"), op.name)
    return (lambda: fn(*varargs, **kw)), watched


def test_dim_ops_cover_the_registry():
    names = {p.values[0].name for p in DIM_OPS}
    assert len(DIM_OPS) >= 30 and {"sum", "cumsum", "softmax", "gather", "transpose", "sort"} <= names


@pytest.mark.parametrize("op,arg", DIM_OPS)
@pytest.mark.parametrize("bad", [5, -6])
def test_dim_out_of_range(op, arg, bad):
    n = 2 + _EXTRA_DIM.get(op.name, 0)

    def setup():
        return _dim_call(op, arg, bad)
    if op.name == "narrow_copy" and bad > 0:    # torch's narrow_copy checks a positive dim with TORCH_CHECK
        _run_case(setup, RuntimeError, r"Expected dim < static_cast<int64_t>\(self_sizes.size\(\)\) to be true")
        return
    _run_case(setup, IndexError,
              rf"Dimension out of range \(expected to be in range of \[{-n}, {n - 1}\], but got {bad}\)")


# ------------------------------------------------------------------ the table

@pytest.mark.parametrize("setup,exc,regex", CASES)
def test_error_case(setup, exc, regex):
    _run_case(setup, exc, regex)


def test_catalogue_size():
    assert len(CASES) >= 60


def test_duplicate_param_in_one_group_warns_like_pytorch():
    m = _linear()
    with pytest.warns(UserWarning, match="duplicate parameters"):
        rt.optim.SGD([m.weight, m.weight], lr=0.1)


# ------------------------------------------------------------------ registry: broken entries

with open(OPS_YAML) as _f:
    _RAW = yaml.safe_load(_f)
_PICK = [i for i, e in enumerate(_RAW) if e["name"] in
         ("add", "sum", "argmax", "cumsum", "matmul", "mean", "transpose", "gather", "softmax", "exp")]

_values = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.floats(allow_nan=False, width=16),
                    st.text(max_size=6), st.lists(st.one_of(st.integers(-2, 2), st.text(max_size=3)), max_size=3),
                    st.dictionaries(st.text(max_size=4), st.one_of(st.integers(), st.text(max_size=3)), max_size=2))
_keys = st.one_of(st.sampled_from(model.OP_FIELDS + model.TEST_KEYS + model.REDUCE_KEYS + model.VARIANT_KEYS),
                  st.text(min_size=1, max_size=6))


def _paths(entry, prefix=()):
    for k, v in entry.items():
        yield prefix + (k,)
        if isinstance(v, dict):
            yield from _paths(v, prefix + (k,))


@st.composite
def broken_registry(draw):
    idx = draw(st.sampled_from(_PICK))
    entry = copy.deepcopy(_RAW[idx])
    for _ in range(draw(st.integers(1, 3))):
        paths = list(_paths(entry))
        path = draw(st.sampled_from(paths))
        parent = entry
        for k in path[:-1]:
            parent = parent[k]
        action = draw(st.sampled_from(("delete", "insert", "retype")))
        if action == "delete":
            parent.pop(path[-1], None)
        elif action == "insert":
            parent[draw(_keys)] = draw(_values)
        else:
            old = parent[path[-1]]
            parent[path[-1]] = draw(_values.filter(lambda v: type(v) is not type(old)))
        if not isinstance(entry, dict) or not entry:
            break
    now = entry.get("name") if isinstance(entry.get("name"), str) else "<unnamed>"
    return now, _with_stubs(entry, _RAW[idx]["name"])


def _with_stubs(entry, name):
    # the entry among one-line stand-ins for every other op name and alias (bodies and formulas may name
    # them): parsing the whole registry each example would take seconds
    text = yaml.safe_dump([entry], sort_keys=False)
    return text + "".join(
        f"- {{name: {n}, kind: composite, signature: '(Tensor self)', body: self, test: {{fuzz: false}}}}\n"
        for n in sorted((_NAMES & set(re.findall(r"[A-Za-z_]\w*", text))) - {name}))


_NAMES = {e["name"] for e in _RAW} | {a for e in _RAW for a in (e.get("variants") or {}).get("aliases", [])}


def test_unbroken_entries_load_among_stubs():
    for i in _PICK:
        (op, *_) = model.load("ops.yaml", text=_with_stubs(_RAW[i], _RAW[i]["name"]))
        assert op.name == _RAW[i]["name"]


@given(broken_registry())
def test_broken_registry_entry_gives_registry_error(case):
    name, text = case
    try:
        model.load("ops.yaml", text=text)
    except model.RegistryError as err:
        msg = str(err)
        assert "ops.yaml" in msg
        assert re.search(r"op '.*', field '[^']+': ", msg), msg
        assert f"op '{name}', field '" in msg or "defined twice" in msg, msg


def test_registry_error_names_op_and_field():
    entry = copy.deepcopy(next(e for e in _RAW if e["name"] == "add"))
    entry["kind"] = "unary-ish"
    with pytest.raises(model.RegistryError, match=r"ops\.yaml:\d+: op 'add', field 'kind': unknown kind 'unary-ish'"):
        model.load("ops.yaml", text=_with_stubs(entry, "add"))


# ------------------------------------------------------------------ environment

@pytest.mark.parametrize("env", [
    {"NUMBA_CACHE_DIR": "/etc/hostname/numba"},                           # below a regular file
    {"HOME": "/etc/hostname", "XDG_CACHE_HOME": "/etc/hostname/cache"},
], ids=["numba-cache-dir", "home-and-xdg"])
def test_import_without_writable_cache(env):
    if not os.path.isfile("/etc/hostname"):
        pytest.skip("needs /etc/hostname as a regular file")
    full = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "XDG_CACHE_HOME")}
    full.update(env)
    full["PYTHONPATH"] = REPO + os.pathsep + full.get("PYTHONPATH", "")
    code = ("import reftorch as rt, reftorch.kernels._cache as c\n"
            "x = rt.arange(4.0, requires_grad=True)\n"
            "y = (x.exp() * 2).sum(); y.backward()\n"
            "print(c.CACHE, round(y.item(), 4), x.grad.sum().item() > 0)\n")
    r = subprocess.run([sys.executable, "-c", code], env=full, capture_output=True, text=True, timeout=300, cwd="/")
    assert r.returncode == 0, r.stderr[-3000:]
    cached, value, ok = r.stdout.split()
    if "NUMBA_CACHE_DIR" in env:
        assert cached == "False"
    assert abs(float(value) - 2 * np.exp(np.arange(4.0)).sum()) < 1e-3
    assert ok == "True"



# entries the random mutations above rarely reach: list elements and nested values of the wrong type
_TARGETED = [
    ("exp", ("test", "domain"), {"self": [1, "x"]}, "domain"),
    ("exp", ("test", "domain"), {"self": [None, 1]}, "domain"),
    ("exp", ("variants", "operators"), [{"a": 1}], "operators"),
    ("exp", ("variants", "aliases"), [["a"]], "aliases"),
    ("exp", ("derivatives",), {5: "grad"}, "derivatives"),
    ("exp", ("signature",), "(Tensor self, int x=)", "signature"),
    ("exp", ("scalar",), "exp(self", "scalar"),
    ("sum", ("reduce", "identity"), [0], "identity"),
    ("sum", ("reduce", "accumulate"), 5, "accumulate"),
    ("exp", ("test", "atol"), "1e-3", "atol"),
    ("exp", ("dtypes",), [["x"]], "dtypes"),
    ("exp", ("name",), ["exp"], "name"),
]


@pytest.mark.parametrize("op,path,value,field", _TARGETED, ids=[f"{t[0]}-{t[3]}-{i}" for i, t in enumerate(_TARGETED)])
def test_registry_targeted_breakage(op, path, value, field):
    entry = copy.deepcopy(next(e for e in _RAW if e["name"] == op))
    parent = entry
    for k in path[:-1]:
        parent = parent[k]
    parent[path[-1]] = value
    shown = op if path != ("name",) else "<unnamed>"
    with pytest.raises(model.RegistryError, match=rf"ops\.yaml:\d+: op '{shown}', field '{field}': "):
        model.load("ops.yaml", text=_with_stubs(entry, op))
