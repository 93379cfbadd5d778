"""L-BFGS with an optional strong-Wolfe line search, as PyTorch's LBFGS (itself after minFunc).

Scalars that PyTorch keeps as 0-d tensors (directional derivatives, step lengths from the cubic
interpolation, the Hessian diagonal) stay 0-d tensors here too, so the iterates agree bit for bit in
float32 arithmetic rather than only approximately.
"""
from __future__ import annotations

import reftorch as torch

from .optimizer import Optimizer, _check_lr


def _scalar(x):
    """A step length or coefficient as a Python number (alpha= wants one; 0-d tensors give their value)."""
    return x.item() if isinstance(x, torch.Tensor) else x


def _cubic_interpolate(x1, f1, g1, x2, f2, g2, bounds=None):
    """The minimiser of the cubic through (x1, f1, g1) and (x2, f2, g2), clamped to bounds (default [x1, x2])."""
    if bounds is not None:
        lo, hi = bounds
    else:
        lo, hi = (x1, x2) if x1 <= x2 else (x2, x1)
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1 ** 2 - g1 * g2
    if d2_square >= 0:
        d2 = d2_square.sqrt()
        if x1 <= x2:
            min_pos = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
        else:
            min_pos = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
        return min(max(min_pos, lo), hi)
    return (lo + hi) / 2.0


class _Bracket:
    """The interval [t_a, t_b] of the zoom phase, with f, g and g.d at each end."""

    def __init__(self, t, f, g, gtd):
        self.t, self.f, self.g, self.gtd = t, f, g, gtd


def _bracket_phase(obj_func, x, t, d, f, g, gtd, c1, c2, max_ls):
    """Grow the step until it brackets a point that satisfies the strong Wolfe conditions (or hits one)."""
    f_new, g_new = obj_func(x, t, d)
    evals = 1
    gtd_new = g_new.dot(d)
    t_prev, f_prev, g_prev, gtd_prev = 0, f, g, gtd
    ls_iter = 0
    while ls_iter < max_ls:
        if f_new > (f + c1 * t * gtd) or (ls_iter > 1 and f_new >= f_prev):
            return _Bracket([t_prev, t], [f_prev, f_new], [g_prev, g_new.clone()], [gtd_prev, gtd_new]), \
                False, ls_iter, evals
        if abs(gtd_new) <= -c2 * gtd:
            return _Bracket([t], [f_new], [g_new], None), True, ls_iter, evals
        if gtd_new >= 0:
            return _Bracket([t_prev, t], [f_prev, f_new], [g_prev, g_new.clone()], [gtd_prev, gtd_new]), \
                False, ls_iter, evals
        # extrapolate between 1.01 t and 10 t
        min_step = t + 0.01 * (t - t_prev)
        max_step = t * 10
        t_prev, t = t, _cubic_interpolate(t_prev, f_prev, gtd_prev, t, f_new, gtd_new, bounds=(min_step, max_step))
        f_prev, g_prev, gtd_prev = f_new, g_new.clone(), gtd_new
        f_new, g_new = obj_func(x, t, d)
        evals += 1
        gtd_new = g_new.dot(d)
        ls_iter += 1
    # no bracket within max_ls evaluations: the zoom below does not run, and the best end is taken
    return _Bracket([0, t], [f, f_new], [g, g_new], None), False, ls_iter, evals


def _zoom_phase(obj_func, x, d, f, gtd, b, done, ls_iter, evals, c1, c2, tolerance_change, max_ls):
    """Shrink the bracket by cubic interpolation until a point satisfies the strong Wolfe conditions."""
    d_norm = d.abs().max()
    insuf_progress = False
    low, high = (0, 1) if b.f[0] <= b.f[-1] else (1, 0)
    while not done and ls_iter < max_ls:
        if abs(b.t[1] - b.t[0]) * d_norm < tolerance_change:
            break
        t = _cubic_interpolate(b.t[0], b.f[0], b.gtd[0], b.t[1], b.f[1], b.gtd[1])
        # keep t at least 10% of the interval away from its ends (twice in a row close: move it there)
        eps = 0.1 * (max(b.t) - min(b.t))
        if min(max(b.t) - t, t - min(b.t)) < eps:
            if insuf_progress or t >= max(b.t) or t <= min(b.t):
                t = max(b.t) - eps if abs(t - max(b.t)) < abs(t - min(b.t)) else min(b.t) + eps
                insuf_progress = False
            else:
                insuf_progress = True
        else:
            insuf_progress = False
        f_new, g_new = obj_func(x, t, d)
        evals += 1
        gtd_new = g_new.dot(d)
        ls_iter += 1
        if f_new > (f + c1 * t * gtd) or f_new >= b.f[low]:
            b.t[high], b.f[high], b.g[high], b.gtd[high] = t, f_new, g_new.clone(), gtd_new
            low, high = (0, 1) if b.f[0] <= b.f[1] else (1, 0)
            continue
        if abs(gtd_new) <= -c2 * gtd:
            done = True
        elif gtd_new * (b.t[high] - b.t[low]) >= 0:
            b.t[high], b.f[high], b.g[high], b.gtd[high] = b.t[low], b.f[low], b.g[low], b.gtd[low]
        b.t[low], b.f[low], b.g[low], b.gtd[low] = t, f_new, g_new.clone(), gtd_new
    return b.f[low], b.g[low], b.t[low], evals


def _strong_wolfe(obj_func, x, t, d, f, g, gtd, c1=1e-4, c2=0.9, tolerance_change=1e-9, max_ls=25):
    """A line search along d from x for a step t meeting the strong Wolfe conditions (More & Thuente's
    bracketing and zoom, as in minFunc). Returns (f, flat gradient, t, number of evaluations)."""
    g = g.clone()
    bracket, done, ls_iter, evals = _bracket_phase(obj_func, x, t, d, f, g, gtd, c1, c2, max_ls)
    if len(bracket.t) == 1:
        return bracket.f[0], bracket.g[0], bracket.t[0], evals
    return _zoom_phase(obj_func, x, d, f, gtd, bracket, done, ls_iter, evals, c1, c2, tolerance_change, max_ls)


class LBFGS(Optimizer):
    """Limited-memory BFGS. `step(closure)` runs up to max_iter iterations (max_eval closure calls).

    One parameter group only; all parameters are treated as one flat vector. history_size pairs of
    (gradient change, step) approximate the inverse Hessian by the two-loop recursion.
    """

    def __init__(self, params, lr=1, max_iter=20, max_eval=None, tolerance_grad=1e-7, tolerance_change=1e-9,
                 history_size=100, line_search_fn=None):
        lr = _check_lr(lr)
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        defaults = dict(lr=lr, max_iter=max_iter, max_eval=max_eval, tolerance_grad=tolerance_grad,
                        tolerance_change=tolerance_change, history_size=history_size, line_search_fn=line_search_fn)
        super().__init__(params, defaults)
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]

    def _gather_flat_grad(self):
        views = [p.new_zeros(p.numel()) if p.grad is None else p.grad.reshape(-1) for p in self._params]
        return torch.cat(views, 0)

    def _add_grad(self, step_size, update):
        offset = 0
        step_size = _scalar(step_size)
        for p in self._params:
            numel = p.numel()
            p.add_(update[offset:offset + numel].view_as(p), alpha=step_size)
            offset += numel

    def _directional_evaluate(self, closure, x, t, d):
        """Loss and flat gradient at x + t d; the parameters are put back to x afterwards."""
        self._add_grad(t, d)
        loss = float(closure())
        flat_grad = self._gather_flat_grad()
        for p, saved in zip(self._params, x):
            p.copy_(saved)
        return loss, flat_grad

    @staticmethod
    def _direction(state, flat_grad, history_size):
        """The new search direction: -H g, with H from the curvature pairs (two-loop recursion)."""
        y = flat_grad.sub(state["prev_flat_grad"])
        s = state["d"].mul(_scalar(state["t"]))
        ys = y.dot(s)
        old_dirs, old_stps, ro = state["old_dirs"], state["old_stps"], state["ro"]
        if ys > 1e-10:      # keep the pair only when it carries positive curvature
            if len(old_dirs) == history_size:
                old_dirs.pop(0)
                old_stps.pop(0)
                ro.pop(0)
            old_dirs.append(y)
            old_stps.append(s)
            ro.append(1.0 / ys)
            state["H_diag"] = ys / y.dot(y)
        if "al" not in state:
            state["al"] = [None] * history_size
        al = state["al"]
        q = flat_grad.neg()
        for i in range(len(old_dirs) - 1, -1, -1):
            al[i] = old_stps[i].dot(q) * ro[i]
            q.add_(old_dirs[i], alpha=-_scalar(al[i]))
        r = torch.mul(q, state["H_diag"])
        for i in range(len(old_dirs)):
            be_i = old_dirs[i].dot(r) * ro[i]
            r.add_(old_stps[i], alpha=_scalar(al[i] - be_i))
        return r

    @torch.no_grad()
    def step(self, closure):
        """Minimise closure() (which recomputes the loss and its gradients) for up to max_iter iterations."""
        group = self.param_groups[0]
        closure = torch.enable_grad()(closure)
        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)
        orig_loss = closure()
        loss = float(orig_loss)
        state["func_evals"] += 1
        flat_grad = self._gather_flat_grad()
        if flat_grad.abs().max() <= group["tolerance_grad"]:
            return orig_loss
        self._iterate(closure, group, state, loss, flat_grad)
        return orig_loss

    def _iterate(self, closure, group, state, loss, flat_grad):
        lr, max_iter, max_eval = _scalar(group["lr"]), group["max_iter"], group["max_eval"]
        tolerance_grad, tolerance_change = group["tolerance_grad"], group["tolerance_change"]
        line_search_fn, history_size = group["line_search_fn"], group["history_size"]
        current_evals = 1
        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1
            if state["n_iter"] == 1:
                d = flat_grad.neg()
                state.update(old_dirs=[], old_stps=[], ro=[], H_diag=1)
            else:
                d = self._direction(state, flat_grad, history_size)
            if state.get("prev_flat_grad") is None:
                state["prev_flat_grad"] = flat_grad.clone()
            else:
                state["prev_flat_grad"].copy_(flat_grad)
            state["prev_loss"] = prev_loss = loss
            # the first step is scaled down by the gradient's l1 norm: no curvature is known yet
            t = min(1.0, 1.0 / flat_grad.abs().sum()) * lr if state["n_iter"] == 1 else lr
            state["d"], state["t"] = d, t
            gtd = flat_grad.dot(d)
            if gtd > -tolerance_change:     # not a descent direction (to tolerance): stop
                break
            ls_func_evals = 0
            if line_search_fn is not None:
                if line_search_fn != "strong_wolfe":
                    raise RuntimeError("only 'strong_wolfe' is supported")
                x_init = [p.clone() for p in self._params]

                def obj_func(x, t, d):
                    return self._directional_evaluate(closure, x, t, d)

                loss, flat_grad, t, ls_func_evals = _strong_wolfe(obj_func, x_init, t, d, loss, flat_grad, gtd,
                                                                  max_ls=max_eval - current_evals)
                state["t"] = t
                self._add_grad(t, d)
                opt_cond = flat_grad.abs().max() <= tolerance_grad
            else:
                self._add_grad(t, d)
                opt_cond = False
                if n_iter != max_iter:
                    # re-evaluate for the next iteration (the last one's is left for the next step())
                    loss = float(closure())
                    flat_grad = self._gather_flat_grad()
                    opt_cond = flat_grad.abs().max() <= tolerance_grad
                    ls_func_evals = 1
            current_evals += ls_func_evals
            state["func_evals"] += ls_func_evals
            if n_iter == max_iter or current_evals >= max_eval or opt_cond:
                break
            if d.mul(_scalar(t)).abs().max() <= tolerance_change:
                break
            if abs(loss - prev_loss) < tolerance_change:
                break
