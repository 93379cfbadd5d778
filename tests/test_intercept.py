"""The interceptors' one place (reftorch/_intercept.py): a profiler hook wraps every out-of-place op call, sees its
result, and leaves autograd's recording as it is; with every interceptor off the check says so."""
import math

import reftorch as torch
from reftorch import _intercept


def test_profiler_hook_wraps_each_op_call():
    seen = []

    def profiler(spec, run, tensors, scalars):
        out = run(spec, tensors, scalars)
        seen.append((spec.name, tuple(out.shape)))
        return out

    a = torch.tensor([1.0, 2.0], requires_grad=True)
    _intercept.profiler = profiler
    try:
        assert _intercept.active()
        r = (a * 3).exp().sum()
    finally:
        _intercept.profiler = None
    assert not _intercept.active()
    assert seen == [("mul", (2,)), ("exp", (2,)), ("sum", ())]
    assert math.isclose(r.item(), math.exp(3) + math.exp(6), rel_tol=1e-6)
    r.backward()        # recorded as without the hook
    assert [round(g, 3) for g in a.grad.tolist()] == [round(3 * math.exp(3), 3), round(3 * math.exp(6), 3)]
