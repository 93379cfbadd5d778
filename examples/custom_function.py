"""A custom autograd.Function: a forward pass and its own backward rule, used like any other op.

`ClampedExp` computes exp(x) but caps the gradient it passes back (a "straight-through" trick that
a plain composition of ops cannot express). `gradcheck` compares the hand-written backward of an
unclamped variant with finite differences. Run: python examples/custom_function.py
"""
import reftorch as torch
from reftorch.autograd import Function


class Exp(Function):
    """y = exp(x); dy/dx = y, so forward saves its output for backward."""

    @staticmethod
    def forward(ctx, x):
        result = x.exp()
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx, grad_output):
        (result,) = ctx.saved_tensors
        return grad_output * result


class ClampedExp(Function):
    """y = exp(x), but the gradient flowing back is clamped to [-limit, limit]."""

    @staticmethod
    def forward(ctx, x, limit):
        result = x.exp()
        ctx.save_for_backward(result)
        ctx.limit = limit           # non-tensor state goes on ctx directly
        return result

    @staticmethod
    def backward(ctx, grad_output):
        (result,) = ctx.saved_tensors
        grad = (grad_output * result).clamp(-ctx.limit, ctx.limit)
        return grad, None           # one gradient per forward input; None for `limit`


x = torch.tensor([-1.0, 0.0, 1.0, 3.0], requires_grad=True)

y = Exp.apply(x)
y.sum().backward()
print("exp(x)              :", y.detach())
print("d/dx sum(exp(x))    :", x.grad)

x.grad = None
ClampedExp.apply(x, 5.0).sum().backward()
print("clamped gradient    :", x.grad)
assert x.grad.max().item() == 5.0

x64 = torch.randn(5, dtype=torch.float64, requires_grad=True)
print("gradcheck(Exp)      :", torch.autograd.gradcheck(Exp.apply, (x64,)))
