"""Layers against NumPy references computed here (explicit loops on small inputs), gradients by finite
differences (gradcheck, float64), and a small end-to-end training run."""
import math

import numpy as np
import pytest

import reftorch as torch
import reftorch.nn as nn
import reftorch.nn.functional as F
from reftorch.autograd import gradcheck, gradgradcheck

RNG = np.random.default_rng(1234)


def R(*shape):
    return RNG.standard_normal(shape)


def T(a, grad=False):
    return torch.tensor(a, requires_grad=grad)


def np_(t):
    return t.detach().numpy()


# ------------------------------------------------------------------ references

def conv2d_ref(x, w, b, stride=(1, 1), pad=(0, 0, 0, 0), dil=(1, 1), groups=1):
    """pad = (top, bottom, left, right)."""
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    xp = np.pad(x, [(0, 0), (0, 0), (pad[0], pad[1]), (pad[2], pad[3])])
    oh = (xp.shape[2] - dil[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (xp.shape[3] - dil[1] * (kw - 1) - 1) // stride[1] + 1
    out = np.zeros((n, o, oh, ow))
    og = o // groups
    for b_ in range(n):
        for oc in range(o):
            g = oc // og
            for i in range(oh):
                for j in range(ow):
                    acc = 0.0
                    for ic in range(cg):
                        for p in range(kh):
                            for q in range(kw):
                                acc += w[oc, ic, p, q] * xp[b_, g * cg + ic, i * stride[0] + p * dil[0],
                                                            j * stride[1] + q * dil[1]]
                    out[b_, oc, i, j] = acc + (b[oc] if b is not None else 0)
    return out


def conv_transpose2d_ref(x, w, stride, pad, out_pad, groups=1):
    n, cin, h, wd = x.shape
    _, cog, kh, kw = w.shape
    full_h = (h - 1) * stride + kh
    full_w = (wd - 1) * stride + kw
    out = np.zeros((n, cog * groups, full_h + out_pad, full_w + out_pad))
    cig = cin // groups
    for b_ in range(n):
        for ic in range(cin):
            g = ic // cig
            for oc in range(cog):
                for i in range(h):
                    for j in range(wd):
                        out[b_, g * cog + oc, i * stride:i * stride + kh, j * stride:j * stride + kw] += \
                            x[b_, ic, i, j] * w[ic, oc]
    return out[:, :, pad:pad + (h - 1) * stride - 2 * pad + kh + out_pad, pad:pad + (wd - 1) * stride - 2 * pad + kw
               + out_pad]


def pool_ref(x, k, s, p, reduce, ceil=False, count_include_pad=True):
    n, c, h, w = x.shape

    def size(L):
        num = L + 2 * p - k
        o = (-(-num // s) if ceil else num // s) + 1
        if ceil and (o - 1) * s >= L + p:
            o -= 1
        return o

    oh, ow = size(h), size(w)
    out = np.zeros((n, c, oh, ow))
    arg = np.zeros((n, c, oh, ow), dtype=np.int64)
    for i in range(oh):
        for j in range(ow):
            h0, w0 = i * s - p, j * s - p
            h1, w1 = min(h0 + k, h + p), min(w0 + k, w + p)
            area = (h1 - h0) * (w1 - w0)
            hs, ws = max(h0, 0), max(w0, 0)
            he, we = min(h0 + k, h), min(w0 + k, w)
            win = x[:, :, hs:he, ws:we]
            if reduce == "max":
                flat = win.reshape(n, c, -1)
                out[:, :, i, j] = flat.max(-1)
                a = flat.argmax(-1)
                arg[:, :, i, j] = (hs + a // (we - ws)) * w + ws + a % (we - ws)
            else:
                out[:, :, i, j] = win.sum((2, 3)) / (area if count_include_pad else (he - hs) * (we - ws))
    return out, arg


# ------------------------------------------------------------------ convolution

@pytest.mark.parametrize("case", [
    dict(),
    dict(stride=(2, 1), padding=(1, 2), dilation=(2, 1)),
    dict(groups=2, padding=1),
    dict(padding="same"),
    dict(padding="same", dilation=2),
    dict(padding="valid", bias=False),
])
def test_conv2d_matches_loops(case):
    x = R(2, 4, 7, 6)
    groups = case.get("groups", 1)
    kernel = (4, 2) if case.get("padding") == "same" and "dilation" not in case else (3, 3)
    w = R(6, 4 // groups, *kernel)
    b = R(6) if case.pop("bias", True) else None
    got = F.conv2d(T(x), T(w), T(b) if b is not None else None, **case)
    stride = case.get("stride", (1, 1))
    dil = case.get("dilation", 1)
    dil = dil if isinstance(dil, tuple) else (dil, dil)
    pad = case.get("padding", 0)
    if pad == "valid":
        pads = (0, 0, 0, 0)
    elif pad == "same":
        th, tw = dil[0] * (kernel[0] - 1), dil[1] * (kernel[1] - 1)
        pads = (th // 2, th - th // 2, tw // 2, tw - tw // 2)
    else:
        ph, pw = pad if isinstance(pad, tuple) else (pad, pad)
        pads = (ph, ph, pw, pw)
    np.testing.assert_allclose(np_(got), conv2d_ref(x, w, b, stride, pads, dil, groups), rtol=1e-10, atol=1e-12)


def test_conv1d_and_module_forms():
    x, w, b = R(2, 3, 9), R(5, 3, 3), R(5)
    got = F.conv1d(T(x), T(w), T(b), stride=2, padding=1)
    ref = conv2d_ref(x[:, :, None], w[:, :, None], b, (1, 2), (0, 0, 1, 1))[:, :, 0]
    np.testing.assert_allclose(np_(got), ref, rtol=1e-10)
    conv = nn.Conv2d(3, 4, 3, padding=1, bias=False).double()
    img = R(3, 5, 5)                                          # unbatched input
    np.testing.assert_allclose(np_(conv(T(img))), conv2d_ref(img[None], np_(conv.weight), None,
                                                             pad=(1, 1, 1, 1))[0], rtol=1e-10)
    reflect = nn.Conv2d(3, 2, 3, padding=1, padding_mode="reflect").double()
    xr = R(1, 3, 5, 5)
    xp = np.pad(xr, [(0, 0), (0, 0), (1, 1), (1, 1)], mode="reflect")
    np.testing.assert_allclose(np_(reflect(T(xr))), conv2d_ref(xp, np_(reflect.weight), np_(reflect.bias)),
                               rtol=1e-10)
    with pytest.raises(RuntimeError, match=r"Given groups=1, weight of size \[4, 3, 3, 3\], expected input"
                                           r"\[1, 2, 5, 5\] to have 3 channels, but got 2 channels instead"):
        conv(torch.randn(1, 2, 5, 5, dtype=torch.float64))
    with pytest.raises(ValueError, match="padding='same' is not supported for strided convolutions"):
        nn.Conv2d(1, 1, 3, stride=2, padding="same")
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        nn.Conv2d(3, 4, 3, groups=2)


@pytest.mark.parametrize("stride,pad,out_pad,groups", [(1, 0, 0, 1), (2, 1, 1, 1), (3, 0, 2, 2)])
def test_conv_transpose2d_matches_scatter(stride, pad, out_pad, groups):
    x, w, b = R(2, 4, 3, 4), R(4, 3, 3, 3), R(3 * groups)
    got = F.conv_transpose2d(T(x), T(w), T(b), stride=stride, padding=pad, output_padding=out_pad, groups=groups)
    ref = conv_transpose2d_ref(x, w, stride, pad, out_pad, groups) + b[None, :, None, None]
    np.testing.assert_allclose(np_(got), ref, rtol=1e-10, atol=1e-12)
    m = nn.ConvTranspose2d(4, 2, 3, stride=2, padding=1).double()
    assert m(T(x), output_size=[6, 8]).shape == (2, 2, 6, 8)
    with pytest.raises(ValueError, match="requested an output size of \\[9, 9\\]"):
        m(T(x), output_size=[9, 9])


def test_conv_transpose_is_the_gradient_of_conv():
    x, w, g = R(2, 3, 7, 7), R(4, 3, 3, 3), R(2, 4, 3, 3)
    xt = T(x, True)
    F.conv2d(xt, T(w), stride=2).backward(T(g))
    np.testing.assert_allclose(np_(xt.grad), np_(F.conv_transpose2d(T(g), T(w), stride=2)), rtol=1e-10)


def test_conv_gradients():
    x, w, b = T(R(1, 2, 5, 4), True), T(R(4, 1, 2, 3), True), T(R(4), True)
    assert gradcheck(lambda x, w, b: F.conv2d(x, w, b, stride=(2, 1), padding=1, dilation=(1, 2), groups=2),
                     (x, w, b))
    assert gradgradcheck(lambda x, w: F.conv2d(x, w, groups=2), (x, w))
    wt = T(R(2, 3, 2, 2), True)
    assert gradcheck(lambda x, w: F.conv_transpose2d(x, w, stride=2, padding=1, output_padding=1), (x, wt))
    x1, w1 = T(R(2, 2, 6), True), T(R(3, 2, 3), True)
    assert gradcheck(lambda x, w: F.conv1d(x, w, padding="same"), (x1, w1))


def test_unfold_fold():
    x = R(2, 3, 5, 6)
    cols = F.unfold(T(x), (2, 3), dilation=(1, 2), padding=1, stride=(2, 1))
    xp = np.pad(x, [(0, 0), (0, 0), (1, 1), (1, 1)])
    blocks = []
    for i in range(0, xp.shape[2] - 1, 2):
        for j in range(0, xp.shape[3] - 4):
            blocks.append(xp[:, :, i:i + 2, j:j + 5:2].reshape(2, -1))
    np.testing.assert_allclose(np_(cols), np.stack(blocks, -1), rtol=0, atol=0)
    # fold is the adjoint of unfold: <unfold(x), y> == <x, fold(y)>
    y = R(*cols.shape)
    back = F.fold(T(y), (5, 6), (2, 3), dilation=(1, 2), padding=1, stride=(2, 1))
    np.testing.assert_allclose((np_(cols) * y).sum(), (x * np_(back)).sum(), rtol=1e-10)
    # fold(unfold(ones)) counts how many blocks cover each pixel
    counts = F.fold(F.unfold(torch.ones(1, 1, 4, 4), 2), (4, 4), 2)
    assert np_(counts)[0, 0].tolist() == [[1, 2, 2, 1], [2, 4, 4, 2], [2, 4, 4, 2], [1, 2, 2, 1]]
    xt = T(R(1, 2, 4, 4), True)
    assert gradcheck(lambda a: F.unfold(a, 2, padding=1, stride=2), (xt,))
    ct = T(R(1, 8, 9), True)
    assert gradcheck(lambda a: F.fold(a, (4, 4), 2, padding=1, stride=2), (ct,))
    assert gradgradcheck(lambda a: F.unfold(a, 3, padding=1) * F.unfold(a, 3, padding=1), (xt,))


# ------------------------------------------------------------------ pooling

@pytest.mark.parametrize("k,s,p,ceil", [(2, 2, 0, False), (3, 2, 1, False), (3, 2, 1, True), (2, 2, 0, True)])
def test_max_and_avg_pool_match_loops(k, s, p, ceil):
    x = R(2, 3, 7, 6)
    out, idx = F.max_pool2d(T(x), k, s, p, ceil_mode=ceil, return_indices=True)
    ref, ref_idx = pool_ref(x, k, s, p, "max", ceil)
    np.testing.assert_array_equal(np_(out), ref)
    np.testing.assert_array_equal(np_(idx), ref_idx)
    for count in (True, False):
        got = F.avg_pool2d(T(x), k, s, p, ceil_mode=ceil, count_include_pad=count)
        np.testing.assert_allclose(np_(got), pool_ref(x, k, s, p, "avg", ceil, count)[0], rtol=1e-12)


def test_max_pool_gradient_goes_to_first_maximum():
    x = T(np.array([[[[1.0, 3.0, 3.0, 0.0], [3.0, 2.0, 0.0, 0.0]]]]), True)
    F.max_pool2d(x, 2).sum().backward()
    assert np_(x.grad)[0, 0].tolist() == [[0, 1, 1, 0], [0, 0, 0, 0]]     # the first maximum of each window
    # an all-zero window (e.g. after ReLU) still sends its gradient to one element only
    z = T(np.zeros((1, 1, 2, 2)), True)
    F.max_pool2d(z, 2).sum().backward()
    assert np_(z.grad).sum() == 1.0
    y = T(R(1, 2, 5, 5), True)
    assert gradcheck(lambda a: F.max_pool2d(a, 3, 2, 1, ceil_mode=True), (y,))
    assert gradcheck(lambda a: F.avg_pool2d(a, 3, 2, 1, count_include_pad=False), (y,))
    assert gradcheck(lambda a: F.adaptive_avg_pool2d(a, (2, 3)), (y,))


def test_pool1d_adaptive_and_modules():
    x = R(2, 3, 10)
    ref = np.stack([x[:, :, max(0, 2 * i - 1):2 * i + 2].max(-1) for i in range(5)], -1)
    np.testing.assert_array_equal(np_(nn.MaxPool1d(3, 2, 1)(T(x))), ref)
    np.testing.assert_allclose(np_(nn.AvgPool1d(2)(T(x))), x.reshape(2, 3, 5, 2).mean(-1), rtol=1e-12)
    img = R(2, 3, 7, 5)
    got = nn.AdaptiveAvgPool2d((3, 2))(T(img))
    ref = np.zeros((2, 3, 3, 2))
    for i in range(3):
        for j in range(2):
            h0, h1 = (i * 7) // 3, -(-((i + 1) * 7) // 3)
            w0, w1 = (j * 5) // 2, -(-((j + 1) * 5) // 2)
            ref[:, :, i, j] = img[:, :, h0:h1, w0:w1].mean((2, 3))
    np.testing.assert_allclose(np_(got), ref, rtol=1e-12)
    np.testing.assert_allclose(np_(nn.AdaptiveAvgPool2d(1)(T(img)))[..., 0, 0], img.mean((2, 3)), rtol=1e-12)
    gmax = nn.AdaptiveMaxPool2d((3, 2))(T(img))
    ref_max = np.zeros((2, 3, 3, 2))
    for i in range(3):
        for j in range(2):
            h0, h1 = (i * 7) // 3, -(-((i + 1) * 7) // 3)
            w0, w1 = (j * 5) // 2, -(-((j + 1) * 5) // 2)
            ref_max[:, :, i, j] = img[:, :, h0:h1, w0:w1].max((2, 3))
    np.testing.assert_array_equal(np_(gmax), ref_max)
    with pytest.raises(RuntimeError, match="pad should be at most half of effective kernel size"):
        F.max_pool2d(T(img), 2, padding=2)


# ------------------------------------------------------------------ resizing, padding

def _linear_weights(n_in, n_out, align):
    m = np.zeros((n_out, n_in))
    for d in range(n_out):
        if align:
            src = d * (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
        else:
            src = max((d + 0.5) * n_in / n_out - 0.5, 0.0)
        i0 = min(int(math.floor(src)), n_in - 1)
        i1 = min(i0 + 1, n_in - 1)
        lam = src - i0
        m[d, i0] += 1 - lam
        m[d, i1] += lam
    return m


def test_interpolate():
    x = R(2, 3, 4, 5)
    near = F.interpolate(T(x), scale_factor=2)
    np.testing.assert_array_equal(np_(near), x.repeat(2, 2).repeat(2, 3))
    near = F.interpolate(T(x), size=(6, 3))
    rows = np.minimum(np.floor(np.arange(6) * np.float32(4 / 6)).astype(int), 3)
    cols = np.minimum(np.floor(np.arange(3) * np.float32(5 / 3)).astype(int), 4)
    np.testing.assert_array_equal(np_(near), x[:, :, rows][:, :, :, cols])
    for align in (False, True):
        got = F.interpolate(T(x), size=(7, 9), mode="bilinear", align_corners=align)
        ref = np.einsum("oh,nchw,pw->ncop", _linear_weights(4, 7, align), x, _linear_weights(5, 9, align))
        np.testing.assert_allclose(np_(got), ref, rtol=1e-10, atol=1e-12)
    xt = T(R(1, 1, 3, 3), True)
    assert gradcheck(lambda a: F.interpolate(a, scale_factor=1.5, mode="bilinear"), (xt,))
    with pytest.raises(ValueError, match="align_corners option can only be set with the interpolating modes"):
        F.interpolate(T(x), scale_factor=2, align_corners=True)


def test_pad_modes():
    x = R(1, 2, 3, 4)
    np.testing.assert_array_equal(np_(F.pad(T(x), (1, 2, 0, 1), value=3.0)),
                                  np.pad(x, [(0, 0), (0, 0), (0, 1), (1, 2)], constant_values=3.0))
    np.testing.assert_array_equal(np_(F.pad(T(x), (2, 1, 1, 2), mode="reflect")),
                                  np.pad(x, [(0, 0), (0, 0), (1, 2), (2, 1)], mode="reflect"))
    np.testing.assert_array_equal(np_(F.pad(T(x[0]), (1, 1), mode="replicate")),
                                  np.pad(x[0], [(0, 0), (0, 0), (1, 1)], mode="edge"))
    np.testing.assert_array_equal(np_(F.pad(T(x), (1, 2, 2, 1), mode="circular")),
                                  np.pad(x, [(0, 0), (0, 0), (2, 1), (1, 2)], mode="wrap"))
    with pytest.raises(RuntimeError, match="Padding size should be less than the corresponding input dimension"):
        F.pad(T(x), (4, 0, 0, 0), mode="reflect")


# ------------------------------------------------------------------ normalization

def test_batchnorm_training_and_running_stats():
    bn = nn.BatchNorm2d(3, momentum=0.3).double()
    with torch.no_grad():
        bn.weight.copy_(torch.tensor([1.0, 2.0, 0.5]))
        bn.bias.copy_(torch.tensor([0.0, -1.0, 1.0]))
    xs = [R(4, 3, 2, 5), R(4, 3, 2, 5) * 2 + 1]
    rm, rv = np.zeros(3), np.ones(3)
    for x in xs:
        out = bn(T(x))
        mean = x.mean((0, 2, 3))
        var = x.var((0, 2, 3))
        ref = (x - mean[None, :, None, None]) / np.sqrt(var[None, :, None, None] + 1e-5)
        ref = ref * np.array([1, 2, 0.5])[None, :, None, None] + np.array([0, -1, 1])[None, :, None, None]
        np.testing.assert_allclose(np_(out), ref, rtol=1e-10, atol=1e-12)
        rm = 0.7 * rm + 0.3 * mean
        rv = 0.7 * rv + 0.3 * x.var((0, 2, 3), ddof=1)            # running variance is unbiased
    np.testing.assert_allclose(np_(bn.running_mean), rm, rtol=1e-12)
    np.testing.assert_allclose(np_(bn.running_var), rv, rtol=1e-12)
    assert int(bn.num_batches_tracked) == 2
    bn.eval()
    x = R(2, 3, 2, 2)
    ref = (x - rm[None, :, None, None]) / np.sqrt(rv[None, :, None, None] + 1e-5)
    ref = ref * np.array([1, 2, 0.5])[None, :, None, None] + np.array([0, -1, 1])[None, :, None, None]
    np.testing.assert_allclose(np_(bn(T(x))), ref, rtol=1e-10)
    assert int(bn.num_batches_tracked) == 2


def test_batchnorm_variants():
    cma = nn.BatchNorm1d(2, momentum=None).double()            # cumulative moving average
    xs = [R(5, 2), R(5, 2) + 3, R(5, 2) - 1]
    for x in xs:
        cma(T(x))
    np.testing.assert_allclose(np_(cma.running_mean), np.mean([x.mean(0) for x in xs], 0), rtol=1e-12)
    plain = nn.BatchNorm1d(2, affine=False, track_running_stats=False).double()
    assert plain.running_mean is None and len(list(plain.parameters())) == 0
    x = R(6, 2, 3)
    plain.eval()                                              # no running stats: batch statistics in eval too
    ref = (x - x.mean((0, 2), keepdims=True)) / np.sqrt(x.var((0, 2), keepdims=True) + 1e-5)
    np.testing.assert_allclose(np_(plain(T(x))), ref, rtol=1e-10)
    with pytest.raises(ValueError, match="Expected more than 1 value per channel when training"):
        nn.BatchNorm1d(2)(torch.randn(1, 2))
    with pytest.raises(ValueError, match="expected 4D input \\(got 2D input\\)"):
        nn.BatchNorm2d(2)(torch.randn(3, 2))
    xt = T(R(4, 3, 2), True)
    w, b = T(R(3), True), T(R(3), True)
    assert gradcheck(lambda a, w, b: F.batch_norm(a, None, None, w, b, training=True), (xt, w, b))


def test_layer_group_instance_norm():
    x = R(2, 6, 3, 4)
    ln = nn.LayerNorm((3, 4)).double()
    with torch.no_grad():
        ln.weight.copy_(T(R(3, 4)))
        ln.bias.copy_(T(R(3, 4)))
    mean = x.mean((2, 3), keepdims=True)
    var = x.var((2, 3), keepdims=True)
    ref = (x - mean) / np.sqrt(var + 1e-5) * np_(ln.weight) + np_(ln.bias)
    np.testing.assert_allclose(np_(ln(T(x))), ref, rtol=1e-10, atol=1e-12)
    gn = nn.GroupNorm(3, 6).double()
    g = x.reshape(2, 3, -1)
    ref = ((g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + 1e-5)).reshape(x.shape)
    np.testing.assert_allclose(np_(gn(T(x))), ref, rtol=1e-10, atol=1e-12)
    inorm = nn.InstanceNorm2d(6)
    ref = (x - x.mean((2, 3), keepdims=True)) / np.sqrt(x.var((2, 3), keepdims=True) + 1e-5)
    np.testing.assert_allclose(np_(inorm(T(x))), ref, rtol=1e-10, atol=1e-12)
    with pytest.raises(RuntimeError, match=r"Given normalized_shape=\[5\], expected input with shape \[\*, 5\], "
                                           r"but got input of size\[2, 6, 3, 4\]"):
        F.layer_norm(T(x), (5,))
    xt = T(R(2, 4, 3), True)
    assert gradcheck(lambda a: F.layer_norm(a, (3,)), (xt,))
    assert gradcheck(lambda a: F.group_norm(a, 2), (xt,))


# ------------------------------------------------------------------ embedding, dropout

def test_embedding():
    emb = nn.Embedding(6, 3, padding_idx=2).double()
    idx = torch.tensor([[0, 2, 5], [2, 2, 1]])
    out = emb(idx)
    np.testing.assert_array_equal(np_(out), np_(emb.weight)[np_(idx)])
    out.sum().backward()
    counts = np.bincount(np_(idx).ravel(), minlength=6).astype(float)
    counts[2] = 0                                   # the padding row gets no gradient
    np.testing.assert_array_equal(np_(emb.weight.grad), np.repeat(counts[:, None], 3, 1))
    pre = nn.Embedding.from_pretrained(torch.eye(3))
    assert not pre.weight.requires_grad and np_(pre(torch.tensor([1])))[0].tolist() == [0, 1, 0]
    with pytest.raises(RuntimeError, match="Expected tensor for argument #1 'indices'"):
        emb(torch.ones(2))


def test_dropout():
    torch.manual_seed(0)
    x = torch.ones(200, 100)
    y = np_(F.dropout(x, 0.3))
    kept = y != 0
    assert abs(kept.mean() - 0.7) < 0.02
    np.testing.assert_allclose(y[kept], 1 / 0.7, rtol=1e-6)
    assert F.dropout(x, 0.3, training=False) is x
    assert np_(F.dropout(x, 1.0)).sum() == 0
    ch = np_(F.dropout2d(torch.ones(4, 50, 3, 3), 0.5))
    assert np.all((ch == 0).all((2, 3)) | (ch == 2).all((2, 3)))          # whole channels dropped
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got 1.5"):
        nn.Dropout(1.5)


# ------------------------------------------------------------------ recurrent layers

def _sig(v):
    return 1 / (1 + np.exp(-v))


def test_lstm_gru_rnn_match_numpy_steps():
    x = R(2, 5, 3)                                             # batch_first
    lstm = nn.LSTM(3, 4, batch_first=True).double()
    out, (h, c) = lstm(T(x))
    wi, wh = np_(lstm.weight_ih_l0), np_(lstm.weight_hh_l0)
    bi, bh = np_(lstm.bias_ih_l0), np_(lstm.bias_hh_l0)
    hs, cs, outs = np.zeros((2, 4)), np.zeros((2, 4)), []
    for t in range(5):
        gates = x[:, t] @ wi.T + bi + hs @ wh.T + bh
        i, f, g, o = np.split(gates, 4, 1)
        cs = _sig(f) * cs + _sig(i) * np.tanh(g)
        hs = _sig(o) * np.tanh(cs)
        outs.append(hs)
    np.testing.assert_allclose(np_(out), np.stack(outs, 1), rtol=1e-10)
    np.testing.assert_allclose(np_(h)[0], hs, rtol=1e-10)
    np.testing.assert_allclose(np_(c)[0], cs, rtol=1e-10)

    gru = nn.GRU(3, 4, batch_first=True).double()
    h0 = R(1, 2, 4)
    out, hn = gru(T(x), T(h0))
    wi, wh = np_(gru.weight_ih_l0), np_(gru.weight_hh_l0)
    bi, bh = np_(gru.bias_ih_l0), np_(gru.bias_hh_l0)
    hs = h0[0]
    for t in range(5):
        xr, xz, xn = np.split(x[:, t] @ wi.T + bi, 3, 1)
        hr, hz, hn_ = np.split(hs @ wh.T + bh, 3, 1)
        r, z = _sig(xr + hr), _sig(xz + hz)
        hs = (1 - z) * np.tanh(xn + r * hn_) + z * hs
    np.testing.assert_allclose(np_(hn)[0], hs, rtol=1e-10)
    np.testing.assert_allclose(np_(out)[:, -1], hs, rtol=1e-10)

    rnn = nn.RNN(3, 4, nonlinearity="relu").double()           # sequence first
    out, hn = rnn(T(x.transpose(1, 0, 2)))
    hs = np.zeros((2, 4))
    for t in range(5):
        hs = np.maximum(x[:, t] @ np_(rnn.weight_ih_l0).T + np_(rnn.bias_ih_l0) + hs @ np_(rnn.weight_hh_l0).T
                        + np_(rnn.bias_hh_l0), 0)
    np.testing.assert_allclose(np_(hn)[0], hs, rtol=1e-10)
    assert out.shape == (5, 2, 4)


def test_recurrent_shapes_cells_and_gradients():
    bi = nn.LSTM(3, 4, num_layers=2, bidirectional=True, batch_first=True)
    out, (h, c) = bi(torch.randn(2, 5, 3))
    assert out.shape == (2, 5, 8) and h.shape == (4, 2, 4) and c.shape == (4, 2, 4)
    assert [n for n, _ in bi.named_parameters()][:5] == ["weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0",
                                                         "weight_ih_l0_reverse"]
    out, h = nn.GRU(3, 4)(torch.randn(5, 3))                     # unbatched
    assert out.shape == (5, 4) and h.shape == (1, 4)
    cell = nn.LSTMCell(3, 4).double()
    h, c = cell(T(R(2, 3)))
    assert h.shape == (2, 4)
    gcell = nn.GRUCell(3, 4).double()
    x, h0 = T(R(2, 3), True), T(R(2, 4), True)
    assert gradcheck(lambda a, b: gcell(a, b), (x, h0))
    rcell = nn.RNNCell(3, 4).double()
    assert gradcheck(lambda a, b: rcell(a, b), (x, h0))
    small = nn.LSTM(2, 3, batch_first=True).double()
    xs = T(R(1, 3, 2), True)
    assert gradcheck(lambda a: small(a)[0], (xs,))
    with pytest.raises(RuntimeError, match="input.size\\(-1\\) must be equal to input_size. Expected 3, got 2"):
        nn.RNN(3, 4)(torch.randn(5, 2, 2))
    with pytest.raises(RuntimeError, match="Expected hidden size \\(1, 2, 4\\), got \\[1, 3, 4\\]"):
        nn.RNN(3, 4)(torch.randn(5, 2, 3), torch.zeros(1, 3, 4))


# ------------------------------------------------------------------ attention

def _softmax(v):
    e = np.exp(v - v.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def test_scaled_dot_product_attention():
    q, k, v = R(2, 3, 4, 8), R(2, 3, 6, 8), R(2, 3, 6, 5)
    got = F.scaled_dot_product_attention(T(q), T(k), T(v))
    ref = _softmax(q @ k.swapaxes(-1, -2) / math.sqrt(8)) @ v
    np.testing.assert_allclose(np_(got), ref, rtol=1e-10)
    got = F.scaled_dot_product_attention(T(q), T(k), T(v), is_causal=True)
    mask = np.tril(np.ones((4, 6), bool))
    ref = _softmax(np.where(mask, q @ k.swapaxes(-1, -2) / math.sqrt(8), -np.inf)) @ v
    np.testing.assert_allclose(np_(got), ref, rtol=1e-10)
    qt = T(R(1, 2, 3, 4), True)
    assert gradcheck(lambda a: F.scaled_dot_product_attention(a, a, a), (qt,))


def test_multihead_attention_matches_numpy():
    mha = nn.MultiheadAttention(8, 2, batch_first=True).double()
    with torch.no_grad():
        mha.in_proj_bias.copy_(T(R(24)))
    q, kv = R(3, 4, 8), R(3, 5, 8)
    kpm = np.zeros((3, 5), bool)
    kpm[1, 3:] = True
    out, weights = mha(T(q), T(kv), T(kv), key_padding_mask=torch.tensor(kpm))
    w, b = np_(mha.in_proj_weight), np_(mha.in_proj_bias)
    qp, kp, vp = q @ w[:8].T + b[:8], kv @ w[8:16].T + b[8:16], kv @ w[16:].T + b[16:]
    heads = lambda a: a.reshape(a.shape[0], a.shape[1], 2, 4).transpose(0, 2, 1, 3)   # noqa: E731
    scores = heads(qp) @ heads(kp).swapaxes(-1, -2) / 2.0
    scores = np.where(kpm[:, None, None, :], -np.inf, scores)
    att = _softmax(scores)
    ctx = (att @ heads(vp)).transpose(0, 2, 1, 3).reshape(3, 4, 8)
    ref = ctx @ np_(mha.out_proj.weight).T + np_(mha.out_proj.bias)
    np.testing.assert_allclose(np_(out), ref, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(np_(weights), att.mean(1), rtol=1e-10, atol=1e-12)
    out, none = mha(T(q), T(kv), T(kv), need_weights=False)
    assert none is None and out.shape == (3, 4, 8)
    assert np.abs(np_(mha.in_proj_weight)).max() <= math.sqrt(6 / (24 + 8))        # xavier_uniform_


# ------------------------------------------------------------------ activation modules

def test_activation_modules_against_numpy():
    x = R(3, 7) * 3
    checks = {
        nn.ReLU(): np.maximum(x, 0),
        nn.ReLU6(): np.clip(x, 0, 6),
        nn.LeakyReLU(0.2): np.where(x > 0, x, 0.2 * x),
        nn.ELU(0.5): np.where(x > 0, x, 0.5 * np.expm1(x)),
        nn.SELU(): 1.0507009873554805 * np.where(x > 0, x, 1.6732632423543772 * np.expm1(x)),
        nn.CELU(2.0): np.where(x > 0, x, 2.0 * np.expm1(x / 2.0)),
        nn.GELU(): 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2))),
        nn.GELU("tanh"): 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3))),
        nn.SiLU(): x / (1 + np.exp(-x)),
        nn.Mish(): x * np.tanh(np.log1p(np.exp(x))),
        nn.Softplus(2.0, 5.0): np.where(2 * x > 5, x, np.log1p(np.exp(2 * x)) / 2),
        nn.Hardtanh(-2.0, 1.5): np.clip(x, -2, 1.5),
        nn.Hardsigmoid(): np.clip(x / 6 + 0.5, 0, 1),
        nn.Hardswish(): x * np.clip(x + 3, 0, 6) / 6,
        nn.Sigmoid(): 1 / (1 + np.exp(-x)),
        nn.Tanh(): np.tanh(x),
        nn.LogSigmoid(): -np.log1p(np.exp(-x)),
        nn.Softsign(): x / (1 + np.abs(x)),
        nn.Tanhshrink(): x - np.tanh(x),
        nn.Hardshrink(1.0): np.where(np.abs(x) > 1.0, x, 0),
        nn.Softshrink(1.0): np.where(x > 1, x - 1, np.where(x < -1, x + 1, 0)),
        nn.Threshold(0.5, -3.0): np.where(x > 0.5, x, -3.0),
        nn.Softmax(dim=1): _softmax(x),
        nn.LogSoftmax(dim=1): np.log(_softmax(x)),
        nn.Softmin(dim=1): _softmax(-x),
    }
    for module, ref in checks.items():
        np.testing.assert_allclose(np_(module(T(x))), ref, rtol=1e-9, atol=1e-12, err_msg=repr(module))
    g = R(3, 8)
    np.testing.assert_allclose(np_(nn.GLU()(T(g))), g[:, :4] / (1 + np.exp(-g[:, 4:])), rtol=1e-12)
    prelu = nn.PReLU(3).double()
    img = R(2, 3, 4)
    np.testing.assert_allclose(np_(prelu(T(img))), np.where(img > 0, img, 0.25 * img), rtol=1e-12)
    xt = T(R(4, 5), True)
    # every activation op is gradchecked and gradgradchecked by tests/test_registry_grad.py; here the
    # nn.functional entry points once
    assert gradgradcheck(F.gelu, (xt,))
    assert gradcheck(lambda a: F.softplus(a, 2.0, 1.0) + F.hardswish(a) + F.selu(a), (xt,))
    # in-place flavours write into their input and keep autograd working
    y = T(R(2, 3), True) * 1
    out = F.elu(y, inplace=True)
    assert out is y
    out.sum().backward()


# ------------------------------------------------------------------ end to end

def test_small_cnn_and_mlp_train():
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 1, 6, 6)).astype(np.float32)
    y = (x[:, 0, :3].sum((1, 2)) > x[:, 0, 3:].sum((1, 2))).astype(np.int64)
    model = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Flatten(), nn.Linear(36, 16), nn.GELU(), nn.Dropout(0.1), nn.Linear(16, 2))
    xt, yt = torch.tensor(x), torch.tensor(y)
    params = list(model.parameters())
    first = None
    for step in range(60):
        loss = F.cross_entropy(model(xt), yt)
        if first is None:
            first = float(loss)
        model.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(params, 5.0)
        with torch.no_grad():
            for p in params:
                p.sub_(0.1 * p.grad)
    assert float(loss) < 0.5 * first
    model.eval()
    acc = (np_(model(xt)).argmax(1) == y).mean()
    assert acc > 0.85
    state = model.state_dict()
    clone = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Flatten(), nn.Linear(36, 16), nn.GELU(), nn.Dropout(0.1), nn.Linear(16, 2))
    clone.load_state_dict(state)
    clone.eval()
    np.testing.assert_array_equal(np_(clone(xt)), np_(model(xt)))


def test_transformer_shapes_and_causality():
    torch.manual_seed(3)
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True)
    enc = nn.TransformerEncoder(layer, 2).double()
    assert len(enc.layers) == 2 and enc.layers[0] is not layer
    x = R(2, 5, 8)
    mask = nn.Transformer.generate_square_subsequent_mask(5, dtype=torch.float64)
    assert np_(mask)[1].tolist() == [0, 0, -np.inf, -np.inf, -np.inf]
    out1 = enc(T(x), mask=mask)
    x2 = x.copy()
    x2[:, 3:] = R(2, 2, 8)                       # changing the future does not change the past
    out2 = enc(T(x2), mask=mask)
    np.testing.assert_allclose(np_(out1)[:, :3], np_(out2)[:, :3], rtol=1e-10)
    assert np.abs(np_(out1)[:, 3:] - np_(out2)[:, 3:]).max() > 1e-3
    model = nn.Transformer(8, 2, 1, 1, 16, dropout=0.0, batch_first=True).double()
    out = model(T(x), T(R(2, 3, 8)), tgt_mask=nn.Transformer.generate_square_subsequent_mask(3, dtype=torch.float64))
    assert out.shape == (2, 3, 8)
    out.sum().backward()
    assert all(p.grad is not None for p in model.parameters())
