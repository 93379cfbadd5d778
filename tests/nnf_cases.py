"""Cases of tests/test_nnf_functional.py: each runs on a torch-like module (reftorch, or PyTorch in
tests/gen_nnf_expected.py) and returns plain values (nested lists, strings for errors).

The expected values in tests/nnf_expected.json were computed by running these same cases with PyTorch 2.13
(`python tests/gen_nnf_expected.py` in an environment with torch); CI runs them on reftorch only."""
import json
import warnings
import zlib

import numpy as np

CASES = {}


def case(fn):
    CASES[fn.__name__] = fn
    return fn


def _rng(name):
    return np.random.default_rng(zlib.crc32(name.encode()))


def _t(torch, rng, *shape):
    return torch.tensor(rng.standard_normal(shape))


def _err(f):
    try:
        f()
    except Exception as e:      # the class and message are what the test compares
        return [type(e).__name__, str(e)]
    return "no error"


def _grads(torch, y, *xs, rng=None):
    w = torch.tensor(rng.standard_normal(tuple(y.shape))) if rng is not None else 1.0
    (y * w).sum().backward()
    return [y.tolist()] + [None if x.grad is None else x.grad.tolist() for x in xs]


# ------------------------------------------------------------------ pooling

@case
def pool_with_indices(torch, F):
    rng = _rng("pool_with_indices")
    x = _t(torch, rng, 2, 2, 7, 6)
    return [[t.tolist() for t in F.max_pool2d_with_indices(x, 3, 2, 1)],
            [t.tolist() for t in F.max_pool1d_with_indices(x[0], 3, 2, 1, ceil_mode=True)],
            [t.tolist() for t in F.max_pool3d_with_indices(x.unsqueeze(0), 2)],
            [t.tolist() for t in F.adaptive_max_pool1d_with_indices(x[0], 4)],
            [t.tolist() for t in F.adaptive_max_pool2d_with_indices(x, (2, 4))],
            [t.tolist() for t in F.adaptive_max_pool3d_with_indices(x, (2, 3, 4))],
            F.adaptive_max_pool3d(x.unsqueeze(0), (1, 4, 3)).tolist()]


@case
def lp_pool3d(torch, F):
    rng = _rng("lp_pool3d")
    x = _t(torch, rng, 1, 2, 3, 4, 5).abs().requires_grad_(True)
    out = _grads(torch, F.lp_pool3d(x, 2, (1, 2, 3), ceil_mode=True), x, rng=rng)
    return out + [F.lp_pool3d(x.detach(), float("inf"), 2).tolist(), F.lp_pool3d(x.detach(), 3.0, 2, 1).tolist()]


@case
def max_unpool(torch, F):
    rng = _rng("max_unpool")
    x = _t(torch, rng, 2, 2, 6, 6).requires_grad_(True)
    v, i = F.max_pool2d(x, 2, return_indices=True)
    y = F.max_unpool2d(v, i, 2)
    out = _grads(torch, y, x, rng=rng)
    v1, i1 = F.max_pool1d(x.detach()[0], 3, 2, return_indices=True)
    v3, i3 = F.max_pool3d(x.detach().unsqueeze(0), 2, return_indices=True)
    return out + [F.max_unpool2d(v.detach(), i, 2, output_size=(7, 7)).tolist(),
                  F.max_unpool1d(v1, i1, 3, 2).tolist(), F.max_unpool3d(v3, i3, 2).tolist(),
                  torch.nn.MaxUnpool2d(2)(v.detach(), i).tolist(),
                  _err(lambda: F.max_unpool2d(v, i, 2, output_size=(3, 3))),
                  _err(lambda: F.max_unpool2d(v, i.float(), 2))]


@case
def fractional_max_pool(torch, F):
    rng = _rng("fractional_max_pool")
    x = _t(torch, rng, 2, 3, 9, 8).requires_grad_(True)
    s = torch.tensor(rng.random((2, 3, 2)))
    y, i = F.fractional_max_pool2d(x, 2, output_size=(4, 5), return_indices=True, _random_samples=s)
    out = _grads(torch, y, x, rng=rng) + [i.tolist()]
    y, i = F.fractional_max_pool2d(x.detach().float(), (3, 2), output_ratio=(0.5, 0.7), return_indices=True,
                                   _random_samples=s.float())
    out += [y.tolist(), i.tolist()]
    x3 = _t(torch, rng, 1, 2, 5, 6, 8)
    s3 = torch.tensor(rng.random((1, 2, 3)))
    out += [[t.tolist() for t in F.fractional_max_pool3d(x3, (2, 2, 3), output_size=(3, 4, 3), return_indices=True,
                                                          _random_samples=s3)],
            F.fractional_max_pool3d(x3[0], 2, output_size=3, _random_samples=s3).tolist(),
            torch.nn.FractionalMaxPool2d(2, output_size=(4, 5), _random_samples=s)(x.detach()).tolist(),
            list(F.fractional_max_pool2d(x, 3, output_ratio=(0.5, 0.5)).shape),
            _err(lambda: F.fractional_max_pool2d(x, 2)),
            _err(lambda: F.fractional_max_pool2d(x, (4, 3), output_size=(7, 3))),
            _err(lambda: F.fractional_max_pool3d(x3, (2, 2, 3), output_size=(3, 4, 7))),
            _err(lambda: torch.nn.FractionalMaxPool2d(2, output_ratio=1.5))]
    return out


@case
def max_pool_integers(torch, F):
    x = torch.arange(25).reshape(1, 1, 5, 5)
    return [F.max_pool2d(x, 2, padding=1).tolist(), F.max_pool2d(x, 3, stride=2, ceil_mode=True).tolist(),
            F.max_pool2d(x.to(torch.uint8), 2, padding=1).tolist(), str(F.max_pool2d(x.to(torch.int8), 2).dtype),
            F.max_pool3d(torch.arange(27).reshape(1, 1, 3, 3, 3), 2, ceil_mode=True).tolist(),
            [t.tolist() for t in F.max_pool1d(-torch.arange(7).reshape(1, 7), 2, padding=1, return_indices=True)],
            _err(lambda: F.max_pool1d(torch.arange(7).reshape(1, 7), 2))]


# ------------------------------------------------------------------ grids

@case
def affine_grid(torch, F):
    rng = _rng("affine_grid")
    theta, theta3 = _t(torch, rng, 2, 2, 3), _t(torch, rng, 1, 3, 4)
    return [F.affine_grid(theta, (2, 3, 3, 4), align_corners=False).tolist(),
            F.affine_grid(theta, (2, 3, 3, 4), align_corners=True).tolist(),
            F.affine_grid(theta3, (1, 1, 2, 3, 2), align_corners=False).tolist(),
            _err(lambda: F.affine_grid(theta.long(), (2, 3, 4, 5), align_corners=False)),
            _err(lambda: F.affine_grid(theta, (2, 3, 4, 5, 6), align_corners=False)),
            _err(lambda: F.affine_grid(theta, (2, 3, 4), align_corners=False))]


def _grid_case(name, mode, padding_mode, nd):
    def run(torch, F):
        rng = _rng(name)
        x = _t(torch, rng, *((2, 2, 4, 5) if nd == 2 else (1, 2, 3, 4, 3))).requires_grad_(True)
        g = torch.tensor(rng.uniform(-1.3, 1.3, (2, 3, 4, 2) if nd == 2 else (1, 2, 3, 2, 3))).requires_grad_(True)
        out = []
        for ac in (False, True):
            x.grad = g.grad = None
            y = F.grid_sample(x, g, mode=mode, padding_mode=padding_mode, align_corners=ac)
            out.append(_grads(torch, y, x, g, rng=rng) if mode != "nearest" else _grads(torch, y, x, rng=rng))
        return out
    run.__name__ = name
    return run


for _mode in ("bilinear", "nearest", "bicubic"):
    for _pm in ("zeros", "border", "reflection"):
        for _nd in ((2, 3) if _mode != "bicubic" else (2,)):
            _n = f"grid_sample_{_mode}_{_pm}_{_nd}d"
            CASES[_n] = _grid_case(_n, _mode, _pm, _nd)


@case
def grid_sample_misc(torch, F):
    rng = _rng("grid_sample_misc")
    x = _t(torch, rng, 2, 3, 5, 6)
    theta = _t(torch, rng, 2, 2, 3).requires_grad_(True)
    y = F.grid_sample(x, F.affine_grid(theta, (2, 3, 4, 4), align_corners=False), align_corners=False)
    y.sum().backward()
    g = torch.zeros(2, 2, 2, 2, dtype=torch.float64)
    return [theta.grad.tolist(), torch.grid_sampler(x, g, 0, 0, False).tolist(),
            torch.affine_grid_generator(theta.detach(), [2, 3, 2, 2], True).tolist(),
            _err(lambda: F.grid_sample(x, g, mode="area", align_corners=False)),
            _err(lambda: F.grid_sample(x, g, padding_mode="wrap", align_corners=False)),
            _err(lambda: F.grid_sample(x.float(), g, align_corners=False)),
            _err(lambda: F.grid_sample(x, g[..., :1], align_corners=False)),
            _err(lambda: F.grid_sample(x, g[:1], align_corners=False)),
            _err(lambda: F.grid_sample(x.unsqueeze(2), g.unsqueeze(1).expand(2, 1, 2, 2, 2)[..., :1].expand(
                2, 1, 2, 2, 3), mode="bicubic", align_corners=False))]


# ------------------------------------------------------------------ embedding bags

@case
def embedding_bag(torch, F):
    rng = _rng("embedding_bag")
    wn = rng.standard_normal((10, 3))
    idx = torch.tensor([1, 2, 4, 5, 4, 3, 2, 9, 0, 4])
    off = torch.tensor([0, 4, 4, 7])
    out = {}
    for mode in ("sum", "mean", "max"):
        for pi in (None, 4, -6):
            for last in (False, True):
                for freq in ((False, True) if mode != "max" else (False,)):
                    w = torch.tensor(wn, requires_grad=True)
                    y = F.embedding_bag(idx, w, off, mode=mode, padding_idx=pi, include_last_offset=last,
                                        scale_grad_by_freq=freq)
                    out[f"{mode}{pi}{last}{freq}"] = _grads(torch, y, w, rng=rng)
    w = torch.tensor(wn, requires_grad=True)
    psw = torch.tensor(rng.random(10), requires_grad=True)
    out["psw"] = _grads(torch, F.embedding_bag(idx, w, off, mode="sum", per_sample_weights=psw), w, psw, rng=rng)
    w = torch.tensor(wn, requires_grad=True)
    out["2d"] = _grads(torch, F.embedding_bag(idx.reshape(2, 5), w, mode="max"), w, rng=rng)
    for mode in (0, 1, 2):
        for pi in (None, 4):
            out[f"aten{mode}{pi}"] = [t.tolist() for t in torch.embedding_bag(torch.tensor(wn), idx, off, False, mode,
                                                                               False, None, False, pi)]
    bag = torch.nn.EmbeddingBag.from_pretrained(torch.tensor(wn), mode="sum")
    out["module"] = [bag(idx, off).tolist(), repr(bag)]
    out["errors"] = [_err(lambda: F.embedding_bag(idx, torch.tensor(wn), torch.tensor([1, 4]))),
                     _err(lambda: F.embedding_bag(idx, torch.tensor(wn), torch.tensor([0, 4, 12]))),
                     _err(lambda: F.embedding_bag(idx, torch.tensor(wn), off, per_sample_weights=torch.ones(10))),
                     _err(lambda: F.embedding_bag(idx, torch.tensor(wn), off, mode="min")),
                     _err(lambda: F.embedding_bag(idx, torch.tensor(wn))),
                     _err(lambda: F.embedding_bag(idx + 5, torch.tensor(wn), off))]
    return out


@case
def embedding_scale_grad_by_freq(torch, F):
    w = torch.ones(6, 2, dtype=torch.float64, requires_grad=True)
    F.embedding(torch.tensor([[1, 2, 2], [5, 2, 1]]), w, scale_grad_by_freq=True).sum().backward()
    return w.grad.tolist()


# ------------------------------------------------------------------ ctc, conv_tbc, cdist, losses

@case
def ctc_loss(torch, F):
    rng = _rng("ctc_loss")
    logits = _t(torch, rng, 12, 3, 5)
    targets = torch.tensor([[1, 2, 2, 3], [4, 1, 1, 1], [2, 3, 4, 4]])
    il, tl = torch.tensor([12, 10, 7]), torch.tensor([4, 2, 3])
    out = {}
    for red in ("none", "mean", "sum"):
        for zi in (False, True):
            lg = logits.clone().requires_grad_(True)
            loss = F.ctc_loss(lg.log_softmax(2), targets, il, tl, reduction=red, zero_infinity=zi)
            out[f"{red}{zi}"] = _grads(torch, loss, lg, rng=rng)
    lp = logits.log_softmax(2).detach().requires_grad_(True)
    loss = F.ctc_loss(lp, targets.clamp(1, 3), il, tl, blank=4)
    loss.backward()
    out["log_probs_grad"] = [loss.tolist(), lp.grad.tolist()]
    flat = torch.tensor([1, 2, 2, 3, 4, 1, 2, 3, 4])
    out["flat"] = F.ctc_loss(logits.log_softmax(2), flat, (12, 10, 7), (4, 2, 3), reduction="none").tolist()
    short = torch.tensor([[1, 2, 2, 3, 3, 3, 3, 3]])
    out["inf"] = [F.ctc_loss(logits[:4, :1].log_softmax(2), short, [4], [8], reduction="none").tolist(),
                  F.ctc_loss(logits[:4, :1].log_softmax(2), short, [4], [8], reduction="none",
                             zero_infinity=True).tolist()]
    out["unbatched"] = F.ctc_loss(logits[:, 0].log_softmax(1), targets[0], torch.tensor(12), torch.tensor(4)).tolist()
    out["aten"] = torch.ctc_loss(logits.log_softmax(2), targets, il, tl, 0, 2, False).tolist()
    out["module"] = torch.nn.CTCLoss(reduction="sum")(logits.log_softmax(2), targets, il, tl).tolist()
    out["errors"] = [_err(lambda: F.ctc_loss(logits.log_softmax(2), targets, il, tl, blank=7)),
                     _err(lambda: F.ctc_loss(logits.log_softmax(2), targets, torch.tensor([13, 1, 1]), tl))]
    return out


@case
def conv_tbc_cdist(torch, F):
    rng = _rng("conv_tbc_cdist")
    x, w, b = _t(torch, rng, 5, 2, 4).requires_grad_(True), _t(torch, rng, 3, 4, 6), _t(torch, rng, 6)
    out = _grads(torch, torch.conv_tbc(x, w, b, 1), x, rng=rng) + [F.conv_tbc(x.detach(), w, b).tolist()]
    a, c = _t(torch, rng, 2, 5, 3), _t(torch, rng, 2, 4, 3)
    for p in (0, 1, 2, 3, float("inf")):
        ag = a.clone().requires_grad_(True)
        out.append(_grads(torch, torch.cdist(ag, c, p), ag, rng=rng))
    out += [torch.cdist(_t(torch, rng, 4, 3), _t(torch, rng, 2, 1, 3)).tolist(),
            _err(lambda: torch.cdist(_t(torch, rng, 3), _t(torch, rng, 3))),
            _err(lambda: torch.cdist(_t(torch, rng, 2, 3), _t(torch, rng, 2, 4))),
            _err(lambda: torch.cdist(a, c, -1.0)), _err(lambda: torch.conv_tbc(x, w, b.unsqueeze(0)))]
    return out


@case
def triplet_and_linear_cross_entropy(torch, F):
    rng = _rng("triplet_and_linear_cross_entropy")
    an, po, ne = _t(torch, rng, 4, 3), _t(torch, rng, 4, 3), _t(torch, rng, 4, 3)
    inp, lw, lb = _t(torch, rng, 6, 4), _t(torch, rng, 5, 4), _t(torch, rng, 5)
    tg = torch.tensor([0, 3, 4, 1, -100, 2])
    cw = torch.tensor([1.0, 2, 3, 4, 5], dtype=torch.float64)
    return [F.triplet_margin_with_distance_loss(an, po, ne).tolist(),
            F.triplet_margin_with_distance_loss(an, po, ne, distance_function=lambda u, v: (u - v).abs().sum(-1),
                                                swap=True, reduction="none").tolist(),
            torch.nn.TripletMarginWithDistanceLoss(margin=2.0, swap=True)(an, po, ne).tolist(),
            _err(lambda: F.triplet_margin_with_distance_loss(an, po, ne, margin=0)),
            _err(lambda: F.triplet_margin_with_distance_loss(an, po, ne[0])),
            F.linear_cross_entropy(inp, lw, tg, linear_bias=lb).tolist(),
            F.linear_cross_entropy(inp, lw, tg, weight=cw, reduction="sum", label_smoothing=0.1).tolist(),
            F.linear_cross_entropy(inp, lw, tg, weight=cw, reduction="none").tolist()]


@case
def margin_losses_edges(torch, F):
    x = torch.tensor(0.5, requires_grad=True)
    out = []
    for fn in (F.multi_margin_loss, F.multilabel_margin_loss):
        y = fn(x, torch.tensor(0))
        y.backward()
        out += [y.tolist(), x.grad.tolist(), _err(lambda: fn(x, torch.tensor(1)))]
        x.grad = None
    out += [F.multi_margin_loss(torch.tensor([0.5]), torch.tensor([0]), reduction="none").tolist(),
            F.multi_margin_loss(torch.tensor([0.5, 0.1, 0.3]), torch.tensor(2), reduction="none").tolist(),
            F.multilabel_margin_loss(torch.tensor([0.5, 0.1, 0.3]), torch.tensor([2, -1, 0]), reduction="none").tolist(),
            F.hinge_embedding_loss(torch.tensor([0.3, 2.0, -1.0, 0.5]), torch.tensor([0.0, 2.0, 1.0, -1.0]),
                                   reduction="none").tolist()]
    return out


@case
def empty_inputs(torch, F):
    x = torch.ones(0, 4, 2, requires_grad=True)
    w = torch.ones(4, requires_grad=True)
    y = F.group_norm(x, 2, w, w)
    y.sum().backward()
    return [list(y.shape), w.grad.tolist(), list(F.local_response_norm(torch.ones(0, 3, 4), 2).shape),
            list(F.local_response_norm(torch.ones(2, 3, 0), 2).shape), list(F.group_norm(torch.ones(2, 4, 0), 2).shape),
            list(F.batch_norm(torch.ones(0, 3), torch.zeros(3), torch.ones(3), training=True).shape)]


# ------------------------------------------------------------------ padding, resizing, dropout, norms

@case
def pad_negative(torch, F):
    x = torch.arange(6.0).reshape(1, 1, 6).requires_grad_(True)
    out = []
    for mode in ("reflect", "replicate", "circular"):
        for p in ((-1, 2), (2, -1), (-2, -1), (-1, 3), (3, -2)):
            x.grad = None
            out.append(_grads(torch, F.pad(x, p, mode=mode), x, rng=_rng(f"pad{mode}{p}")))
    x2 = torch.arange(12.0).reshape(1, 3, 4)
    return out + [F.pad(x2, (-1, 2, 1, -1), mode="reflect").tolist(), F.pad(x2, (-1, 2, 1, -1), mode="circular").tolist()]


@case
def interpolate_uint8_bicubic(torch, F):
    x = (torch.arange(2 * 3 * 4 * 5) * 7 % 256).to(torch.uint8).reshape(2, 3, 4, 5)
    out = [F.interpolate(x, size=(7, 3), mode="bilinear", align_corners=ac).tolist() for ac in (False, True)]
    out += [F.interpolate(x, scale_factor=1.7, mode="bilinear").tolist(),
            F.interpolate(x, size=(7, 3), mode="bicubic").tolist(),
            _err(lambda: F.interpolate(x[:, :, 0], size=8, mode="linear"))]
    xf = torch.arange(1 * 2 * 4 * 5, dtype=torch.float64).reshape(1, 2, 4, 5).sin().requires_grad_(True)
    for ac in (False, True):
        xf.grad = None
        out.append(_grads(torch, F.interpolate(xf, size=(6, 7), mode="bicubic", align_corners=ac), xf,
                          rng=_rng(f"bicubic{ac}")))
    return out + [F.interpolate(xf.detach(), scale_factor=0.6, mode="bicubic").tolist()]


@case
def dropout_ranks(torch, F):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        shapes = [list(F.dropout2d(torch.ones(3, 4), 0.5, training=True).shape),
                  list(F.dropout2d(torch.ones(3, 4), 0.5, training=False).shape),
                  list(torch.nn.Dropout2d(0.5)(torch.ones(3, 4)).shape),
                  list(F.dropout3d(torch.ones(2, 3, 4, 5), 0.5).shape),
                  list(F.dropout2d(torch.ones(2, 3, 4), 0.5).shape)]
    return [shapes, [str(w.message) for w in caught],
            _err(lambda: F.dropout1d(torch.ones(3), 0.5)), list(F.dropout1d(torch.ones(3, 4), 0.5).shape),
            F.dropout2d(torch.ones(2, 3, 4, 4), 1.0).tolist(), torch.feature_dropout(torch.ones(2, 3), 0.5, False).tolist()]


@case
def normalize_p0(torch, F):
    x = torch.tensor([[1.0, 0.0, 2.0], [0.0, 0.0, 0.0]], requires_grad=True)
    y = F.normalize(x, p=0, dim=1)
    y.sum().backward()
    z = torch.tensor([[1.0, 0, 2], [0, 3, 0], [1, 1, 1]], requires_grad=True)
    d = F.pdist(z, p=0)
    d.sum().backward()
    return [y.tolist(), x.grad.tolist(), d.tolist(), z.grad.tolist(), F.pdist(z.detach(), p=0.5).tolist()]


# ------------------------------------------------------------------ torch.* under ATen's signatures

@case
def torch_nn_names(torch, F):
    rng = _rng("torch_nn_names")
    x4, wt = _t(torch, rng, 2, 3, 6, 6), _t(torch, rng, 4, 3, 3, 3)
    rm, rv = torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)
    y = _t(torch, rng, 4)
    sign = torch.tensor([1.0, -1, 1, -1], dtype=torch.float64)
    out = [torch.convolution(x4, wt, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1).tolist(),
           torch.convolution(x4, _t(torch, rng, 3, 2, 3, 3), None, [2, 2], [1, 1], [1, 1], True, [1, 1], 1).tolist(),
           torch.batch_norm(x4, _t(torch, rng, 3), _t(torch, rng, 3), rm, rv, True, 0.1, 1e-5, False).tolist(),
           rm.tolist(), torch.instance_norm(x4, None, None, None, None, True, 0.1, 1e-5, False).tolist(),
           torch.layer_norm(x4, [6, 6]).tolist(), torch.group_norm(x4, 3).tolist(),
           torch.constant_pad_nd(x4, [1, -1, 2, 0], 1.5).tolist(),
           torch.embedding(_t(torch, rng, 5, 2), torch.tensor([0, 3, 4])).tolist(),
           torch.binary_cross_entropy_with_logits(y, torch.tensor([0.0, 1, 1, 0], dtype=torch.float64), None, None,
                                                  2).tolist(),
           torch.kl_div(y, y.abs(), 0).tolist(), torch.margin_ranking_loss(y, y.flip(0), sign, 0.5, 0).tolist(),
           torch.hinge_embedding_loss(y, sign, 1.0, 1).tolist(),
           torch.cosine_embedding_loss(x4[0, 0, :3], x4[0, 1, :3], sign[:3], 0.1, 2).tolist(),
           torch.poisson_nll_loss(y, y.abs(), True, False, 1e-8, 1).tolist(),
           torch.triplet_margin_loss(x4[0, 0], x4[0, 1], x4[0, 2], 1.0, 2.0, 1e-6, False, 0).tolist(),
           torch.max_pool2d(x4, [2, 2]).tolist(), [t.tolist() for t in torch.max_pool1d_with_indices(x4[0], [2])],
           [t.tolist() for t in torch.adaptive_max_pool1d(x4[0], [4])], torch.avg_pool1d(x4[0], 3, 2).tolist(),
           torch.adaptive_avg_pool1d(x4[0], 4).tolist(), torch.dropout(x4, 0.5, False).tolist(),
           torch.pixel_shuffle(x4[:, :, :2, :2].repeat(1, 4, 1, 1)[:, :8], 2).tolist(),
           torch.channel_shuffle(x4[:, :2].repeat(1, 2, 1, 1), 2).tolist()]
    return out


@case
def torch_recurrent(torch, F):
    rng = _rng("torch_recurrent")
    h, cx, xi = _t(torch, rng, 3, 5), _t(torch, rng, 3, 5), _t(torch, rng, 3, 4)
    wih, whh, bih, bhh = _t(torch, rng, 20, 4), _t(torch, rng, 20, 5), _t(torch, rng, 20), _t(torch, rng, 20)
    seq, h0, c0 = _t(torch, rng, 6, 3, 4), _t(torch, rng, 4, 3, 5), _t(torch, rng, 4, 3, 5)
    shapes = [(20, 4), (20, 5), (20,), (20,), (20, 4), (20, 5), (20,), (20,), (20, 10), (20, 5), (20,), (20,),
              (20, 10), (20, 5), (20,), (20,)]
    params = [_t(torch, rng, *s) for s in shapes]
    gru_params = [p[:15] for p in params]
    rnn_params = [p[:5] for p in params[:2] + params[4:6]]
    return [[t.tolist() for t in torch.lstm_cell(xi, [h, cx], wih, whh, bih, bhh)],
            torch.gru_cell(xi, h, wih[:15], whh[:15], bih[:15], bhh[:15]).tolist(),
            torch.rnn_tanh_cell(xi, h, wih[:5], whh[:5]).tolist(),
            torch.rnn_relu_cell(xi, h, wih[:5], whh[:5], bih[:5], bhh[:5]).tolist(),
            [t.tolist() for t in torch.lstm(seq, [h0, c0], params, True, 2, 0.0, False, True, False)],
            [t.tolist() for t in torch.gru(seq.transpose(0, 1), h0, gru_params, True, 2, 0.0, False, True, True)],
            [t.tolist() for t in torch.rnn_tanh(seq, h0[:2], rnn_params, False, 1, 0.0, False, True, False)],
            [t.tolist() for t in torch.rnn_relu(seq, h0[:1], rnn_params[:2], False, 1, 0.0, False, False, False)]]


# ------------------------------------------------------------------ graph names and errors of issue 16 point 8

@case
def grad_fn_names(torch, F):
    x = torch.ones(3, 4, dtype=torch.float64, requires_grad=True)
    w = torch.ones(5, 4, dtype=torch.float64, requires_grad=True)
    b = torch.ones(5, dtype=torch.float64, requires_grad=True)
    v = torch.ones(4, dtype=torch.float64, requires_grad=True)

    def edges(y):
        return [y.grad_fn.name(), [None if n is None else n.name() for n, _ in y.grad_fn.next_functions]]
    return [edges(2 * x), edges(x * 2), edges(1 + x), edges(x + 1), edges(x @ w.T), edges(torch.mm(x, w.t())),
            edges(x @ v), edges(v @ v), edges(F.linear(x, w, b))[0], edges(F.linear(x, w))[0],
            edges(F.linear(x.unsqueeze(0), w, b))[0], edges(x.sum()), edges(x.view(12)), edges(x.reshape(12)),
            edges(x.t()), edges(v.expand(3, 4)), edges(x[:, 1:]), edges(x.narrow(1, 0, 2)), edges(F.gelu(x)),
            edges(x.clamp(0, 1))[0], edges(x.unsqueeze(0).flatten()), edges(x.sum(1)), edges(x.sum((0, 1)))]


@case
def errors_of_ops(torch, F):
    return [_err(lambda: torch.einsum("ij,jk->ik", torch.ones(2, 3), torch.ones(4, 5))),
            _err(lambda: torch.einsum("ii->i", torch.ones(2, 3))),
            _err(lambda: torch.ones(2, 3).flip((0, 0))), _err(lambda: torch.ones(2, 3).flip((0, -2))),
            _err(lambda: torch.arange(6).reshape(2, 3).roll((1, 2))),
            torch.arange(6).reshape(2, 3).roll((1,)).tolist(),
            _err(lambda: torch.linspace(0, 1, 5, dtype=torch.bool)),
            _err(lambda: torch.logspace(0, 1, 5, dtype=torch.bool))]


@case
def einsum_grads(torch, F):
    rng = _rng("einsum_grads")
    a, b = _t(torch, rng, 2, 3, 4).requires_grad_(True), _t(torch, rng, 4, 2, 3).requires_grad_(True)
    c, d = _t(torch, rng, 1, 2, 3).requires_grad_(True), _t(torch, rng, 1, 4).requires_grad_(True)
    return [_grads(torch, torch.einsum("i...j,ji...->...", a, b), a, b, rng=rng),
            _grads(torch, torch.einsum("...ik,...j->ij", c, d), c, d, rng=rng)]


def run_all(torch, F):
    return {name: fn(torch, F) for name, fn in CASES.items()}


def dumps(values):
    return json.dumps(values, sort_keys=True)
