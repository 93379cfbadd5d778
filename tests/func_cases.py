"""Cases of tests/test_func.py: function transforms (torch.func, torch.autograd.functional, forward_ad) on a
battery of functions -- an MLP, attention, layer norm, cross_entropy -- run on a torch-like module (reftorch, or
PyTorch in tests/gen_func_expected.py), returning nested lists of float64 values.

tests/func_expected.json holds what PyTorch 2.13 gives (`python tests/gen_func_expected.py` where torch is
installed); CI runs the cases on reftorch only."""
import json
import zlib

import numpy as np

CASES = {}


def case(fn):
    CASES[fn.__name__] = fn
    return fn


def _rng(name):
    return np.random.default_rng(zlib.crc32(name.encode()))


def _t(torch, rng, *shape):
    return torch.tensor(rng.standard_normal(shape))      # float64


def values(x):
    """Tensors (nested in tuples, lists, dicts) as nested lists of floats."""
    if isinstance(x, dict):
        return {k: values(v) for k, v in sorted(x.items())}
    if isinstance(x, (tuple, list)):
        return [values(v) for v in x]
    if hasattr(x, "detach"):
        return np.asarray(x.detach().numpy(), dtype=np.float64).tolist()
    return x


# ------------------------------------------------------------------------------------ the functions

def _mlp(torch, rng):
    params = {"w1": _t(torch, rng, 5, 3), "b1": _t(torch, rng, 5), "w2": _t(torch, rng, 2, 5), "b2": _t(torch, rng, 2)}

    def f(p, x):
        h = torch.tanh(x @ p["w1"].T + p["b1"])
        return h @ p["w2"].T + p["b2"]
    return params, f


def _attention(torch, rng):
    q, k, v = _t(torch, rng, 4, 3), _t(torch, rng, 4, 3), _t(torch, rng, 4, 3)

    def f(q, k, v):
        w = torch.softmax(q @ k.transpose(0, 1) / 3 ** 0.5, dim=-1)
        return w @ v
    return (q, k, v), f


def _layer_norm(torch, rng):
    x, w, b = _t(torch, rng, 2, 4), _t(torch, rng, 4), _t(torch, rng, 4)

    def f(x, w, b):
        return torch.nn.functional.layer_norm(x, (4,), w, b)
    return (x, w, b), f


def _xent(torch, rng):
    logits = _t(torch, rng, 3, 5)
    target = torch.tensor([1, 0, 4])

    def f(z):
        return torch.nn.functional.cross_entropy(z, target)
    return logits, f


# ------------------------------------------------------------------------------------ torch.func

@case
def mlp_grad_params(torch):
    params, f = _mlp(torch, _rng("mlp"))
    x = _t(torch, _rng("mlp-x"), 3)
    g, value = torch.func.grad_and_value(lambda p: (f(p, x) ** 2).sum())(params)
    return values([g, value])


@case
def mlp_per_sample_grads(torch):
    params, f = _mlp(torch, _rng("mlp"))
    xs, ys = _t(torch, _rng("mlp-xs"), 6, 3), _t(torch, _rng("mlp-ys"), 6, 2)

    def loss(p, x, y):
        return ((f(p, x) - y) ** 2).mean()
    return values(torch.func.vmap(torch.func.grad(loss), in_dims=(None, 0, 0))(params, xs, ys))


@case
def mlp_functional_call_ensemble(torch):
    torch.manual_seed(0)
    rng = _rng("ens")
    models = [torch.nn.Linear(3, 2).double() for _ in range(3)]
    with torch.no_grad():
        for m in models:
            m.weight.copy_(_t(torch, rng, 2, 3))
            m.bias.copy_(_t(torch, rng, 2))
    params, buffers = torch.func.stack_module_state(models)
    x = _t(torch, rng, 4, 3)

    def run(p, b):
        return torch.func.functional_call(models[0], (p, b), (x,))
    return values([torch.func.vmap(run)(params, buffers), params])


@case
def attention_jacrev_jacfwd(torch):
    (q, k, v), f = _attention(torch, _rng("attn"))
    jr = torch.func.jacrev(f, argnums=(0, 2))(q, k, v)
    jf = torch.func.jacfwd(f, argnums=(0, 2))(q, k, v)
    return values([jr, jf])


@case
def attention_vjp_jvp(torch):
    (q, k, v), f = _attention(torch, _rng("attn"))
    rng = _rng("attn-ct")
    out, fn = torch.func.vjp(f, q, k, v)
    ct = _t(torch, rng, 4, 3)
    tq, tk, tv = _t(torch, rng, 4, 3), _t(torch, rng, 4, 3), _t(torch, rng, 4, 3)
    _, jv = torch.func.jvp(f, (q, k, v), (tq, tk, tv))
    _, lin = torch.func.linearize(f, q, k, v)
    return values([out, fn(ct), jv, lin(tq, tk, tv)])


@case
def layer_norm_hessian(torch):
    (x, w, b), f = _layer_norm(torch, _rng("ln"))
    return values(torch.func.hessian(lambda x: (f(x, w, b) ** 3).sum())(x))


@case
def layer_norm_vmap_jacrev(torch):
    (x, w, b), f = _layer_norm(torch, _rng("ln"))
    return values(torch.func.vmap(torch.func.jacrev(lambda r: f(r, w, b)))(x))


@case
def xent_jacfwd_jacrev(torch):
    z, f = _xent(torch, _rng("xent"))
    return values([torch.func.jacfwd(torch.func.jacrev(f))(z), torch.func.grad(f)(z)])


@case
def composed_vmap_grad_nested(torch):
    x = _t(torch, _rng("nest"), 3, 2, 4)

    def f(r):
        return (r.sin() * r.exp()).sum()
    inner = torch.func.vmap(torch.func.vmap(torch.func.grad(f)))(x)
    gg = torch.func.vmap(torch.func.grad(torch.func.grad(lambda s: s.sin() * s ** 3)))(x.reshape(-1))
    jj = torch.func.jacfwd(torch.func.jacfwd(lambda r: (r ** 3).sum()))(x[0, 0])
    return values([inner, gg, jj])


@case
def vmap_dims_and_chunks(torch):
    x, y = _t(torch, _rng("vm"), 3, 4, 5), _t(torch, _rng("vm-y"), 5)
    a = torch.func.vmap(lambda r: r.sum(0) * y, in_dims=1, out_dims=1)(x)
    b = torch.func.vmap(lambda r, s: (r @ s).cumsum(0), in_dims=(0, None), chunk_size=2)(x, y)
    c = torch.func.vmap(lambda r: torch.softmax(r.transpose(0, 1), -1).amax(dim=1))(x)
    return values([a, b, c])


@case
def xent_per_sample_grads(torch):
    params, f = _mlp(torch, _rng("mlp"))
    xs, ys = _t(torch, _rng("xent-xs"), 5, 3), torch.tensor([0, 1, 1, 0, 1])
    w = torch.tensor([0.3, 1.7], dtype=torch.float64)

    def loss(p, x, y):      # (the ops.yaml `vmap:` forms of _linear and _nll_loss)
        z = f(p, x).unsqueeze(0)
        return torch.nn.functional.cross_entropy(z, y.unsqueeze(0)) + \
            torch.nn.functional.nll_loss(torch.log_softmax(z, 1), y.unsqueeze(0), weight=w, reduction="sum")
    return values(torch.func.vmap(torch.func.grad(loss), in_dims=(None, 0, 0))(params, xs, ys))


@case
def vmap_loop_fallback(torch):
    x = _t(torch, _rng("loop"), 4, 3, 2)
    idx = torch.tensor([[1, 0], [2, 2]])

    def f(r):               # flip, gather, movedim: no kind rule, a loop over the samples
        return torch.gather(r.flip(0), 0, idx).movedim(0, 1) * r.sum()
    return values([torch.func.vmap(f)(x), torch.func.vmap(torch.func.jacrev(f))(x)])


# ------------------------------------------------------------------------------------ forward_ad

@case
def forward_ad_mlp(torch):
    params, f = _mlp(torch, _rng("mlp"))
    x, t = _t(torch, _rng("mlp-x"), 3), _t(torch, _rng("mlp-t"), 3)
    fwAD = torch.autograd.forward_ad
    with fwAD.dual_level():
        out = f(params, fwAD.make_dual(x, t))
        p, tangent = fwAD.unpack_dual(out)
    return values([p, tangent])


@case
def forward_ad_writes(torch):
    x, t = _t(torch, _rng("fw-w"), 4), _t(torch, _rng("fw-wt"), 4)
    fwAD = torch.autograd.forward_ad

    def f(a):               # an indexed write, copy_ and an in-place op: the tangent follows each
        b = a * 1
        b[1:3] = a[1:3].sin()
        c = torch.zeros(4, dtype=torch.float64)
        c.copy_(a.exp())
        c.mul_(a)
        return b * c
    with fwAD.dual_level():
        return values(fwAD.unpack_dual(f(fwAD.make_dual(x, t))).tangent)


# ------------------------------------------------------------------------------------ autograd.functional

@case
def functional_battery(torch):
    AF = torch.autograd.functional
    (q, k, v), f = _attention(torch, _rng("attn"))
    (x, w, b), ln = _layer_norm(torch, _rng("ln"))
    z, xent = _xent(torch, _rng("xent"))
    rng = _rng("af")
    u = _t(torch, rng, 5)
    return values([
        AF.jacobian(f, (q, k, v)),
        AF.jacobian(lambda r: ln(r, w, b), x, strategy="forward-mode", vectorize=True),
        AF.hessian(xent, z),
        AF.vjp(lambda r: ln(r, w, b), x, _t(torch, rng, 2, 4)),
        AF.jvp(lambda r: ln(r, w, b), x, _t(torch, rng, 2, 4)),
        AF.hvp(lambda r: xent(r.reshape(1, 5).expand(3, 5)), u, _t(torch, rng, 5)),
        AF.vhp(lambda r: xent(r.reshape(1, 5).expand(3, 5)), u, _t(torch, rng, 5)),
        AF.hessian(lambda a, c: (a.sin() * c).sum(), (u, u.cos()), outer_jacobian_strategy="forward-mode",
                   vectorize=True),
    ])


def dumps(out):
    return json.dumps(out, sort_keys=True)
