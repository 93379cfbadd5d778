"""Every lr_scheduler (and SWA's) against torch 2.13's learning-rate sequences (issue 22, branch optim2).

The traces come from a side-by-side run of torch 2.13 and reftorch (two parameter groups, lr 1.0 and 0.5);
CI has no torch, so they are written out below.
"""
import pickle
import warnings

import pytest

import reftorch as torch
from reftorch.optim import lr_scheduler as S

# torch 2.13 results: for each scheduler, the 14 steps' [lr of group 0, lr of group 1, momentum or beta1]
TORCH_TRACES = [['LambdaLR', 'SGD', None,
  [[0.9, 0.45, 0.9], [0.81, 0.405, 0.9], [0.729, 0.3645, 0.9], [0.6561, 0.32805, 0.9], [0.59049, 0.295245, 0.9],
   [0.531441, 0.2657205, 0.9], [0.4782969, 0.23914845, 0.9], [0.43046721, 0.215233605, 0.9],
   [0.387420489, 0.1937102445, 0.9], [0.3486784401, 0.17433922005, 0.9], [0.31381059609, 0.156905298045, 0.9],
   [0.282429536481, 0.141214768241, 0.9], [0.254186582833, 0.127093291416, 0.9],
   [0.22876792455, 0.114383962275, 0.9]]],
 ['MultiplicativeLR', 'SGD', None,
  [[0.8, 0.4, 0.9], [0.64, 0.32, 0.9], [0.512, 0.256, 0.9], [0.4096, 0.2048, 0.9], [0.32768, 0.16384, 0.9],
   [0.262144, 0.131072, 0.9], [0.2097152, 0.1048576, 0.9], [0.16777216, 0.08388608, 0.9],
   [0.134217728, 0.067108864, 0.9], [0.1073741824, 0.0536870912, 0.9], [0.08589934592, 0.04294967296, 0.9],
   [0.068719476736, 0.034359738368, 0.9], [0.054975581389, 0.027487790694, 0.9],
   [0.043980465111, 0.021990232556, 0.9]]],
 ['StepLR', 'SGD', None,
  [[1.0, 0.5, 0.9], [1.0, 0.5, 0.9], [0.5, 0.25, 0.9], [0.5, 0.25, 0.9], [0.5, 0.25, 0.9], [0.25, 0.125, 0.9],
   [0.25, 0.125, 0.9], [0.25, 0.125, 0.9], [0.125, 0.0625, 0.9], [0.125, 0.0625, 0.9], [0.125, 0.0625, 0.9],
   [0.0625, 0.03125, 0.9], [0.0625, 0.03125, 0.9], [0.0625, 0.03125, 0.9]]],
 ['MultiStepLR', 'SGD', None,
  [[1.0, 0.5, 0.9], [0.5, 0.25, 0.9], [0.5, 0.25, 0.9], [0.5, 0.25, 0.9], [0.125, 0.0625, 0.9], [0.125, 0.0625, 0.9],
   [0.125, 0.0625, 0.9], [0.125, 0.0625, 0.9], [0.125, 0.0625, 0.9], [0.125, 0.0625, 0.9], [0.125, 0.0625, 0.9],
   [0.125, 0.0625, 0.9], [0.125, 0.0625, 0.9], [0.125, 0.0625, 0.9]]],
 ['ConstantLR', 'SGD', None,
  [[0.5, 0.25, 0.9], [0.5, 0.25, 0.9], [0.5, 0.25, 0.9], [1.0, 0.5, 0.9], [1.0, 0.5, 0.9], [1.0, 0.5, 0.9],
   [1.0, 0.5, 0.9], [1.0, 0.5, 0.9], [1.0, 0.5, 0.9], [1.0, 0.5, 0.9], [1.0, 0.5, 0.9], [1.0, 0.5, 0.9],
   [1.0, 0.5, 0.9], [1.0, 0.5, 0.9]]],
 ['LinearLR', 'SGD', None,
  [[0.316666666667, 0.158333333333, 0.9], [0.433333333333, 0.216666666667, 0.9], [0.55, 0.275, 0.9],
   [0.666666666667, 0.333333333333, 0.9], [0.783333333333, 0.391666666667, 0.9], [0.9, 0.45, 0.9], [0.9, 0.45, 0.9],
   [0.9, 0.45, 0.9], [0.9, 0.45, 0.9], [0.9, 0.45, 0.9], [0.9, 0.45, 0.9], [0.9, 0.45, 0.9], [0.9, 0.45, 0.9],
   [0.9, 0.45, 0.9]]],
 ['ExponentialLR', 'SGD', None,
  [[0.9, 0.45, 0.9], [0.81, 0.405, 0.9], [0.729, 0.3645, 0.9], [0.6561, 0.32805, 0.9], [0.59049, 0.295245, 0.9],
   [0.531441, 0.2657205, 0.9], [0.4782969, 0.23914845, 0.9], [0.43046721, 0.215233605, 0.9],
   [0.387420489, 0.1937102445, 0.9], [0.3486784401, 0.17433922005, 0.9], [0.31381059609, 0.156905298045, 0.9],
   [0.282429536481, 0.141214768241, 0.9], [0.254186582833, 0.127093291416, 0.9],
   [0.22876792455, 0.114383962275, 0.9]]],
 ['PolynomialLR', 'SGD', None,
  [[0.734693877551, 0.367346938776, 0.9], [0.510204081633, 0.255102040816, 0.9],
   [0.326530612245, 0.163265306122, 0.9], [0.183673469388, 0.091836734694, 0.9],
   [0.081632653061, 0.040816326531, 0.9], [0.020408163265, 0.010204081633, 0.9], [0.0, 0.0, 0.9], [0.0, 0.0, 0.9],
   [0.0, 0.0, 0.9], [0.0, 0.0, 0.9], [0.0, 0.0, 0.9], [0.0, 0.0, 0.9], [0.0, 0.0, 0.9], [0.0, 0.0, 0.9]]],
 ['CosineAnnealingLR', 'SGD', None,
  [[0.905463412216, 0.453209163622, 0.9], [0.657963412216, 0.330709163622, 0.9],
   [0.352036587784, 0.179290836378, 0.9], [0.104536587784, 0.056790836378, 0.9], [0.01, 0.01, 0.9],
   [0.104536587784, 0.056790836378, 0.9], [0.352036587784, 0.179290836378, 0.9],
   [0.657963412216, 0.330709163622, 0.9], [0.905463412216, 0.453209163622, 0.9], [1.0, 0.5, 0.9],
   [0.905463412216, 0.453209163622, 0.9], [0.657963412216, 0.330709163622, 0.9],
   [0.352036587784, 0.179290836378, 0.9], [0.104536587784, 0.056790836378, 0.9]]],
 ['SequentialLR', 'SGD', None,
  [[0.4, 0.2, 0.9], [0.7, 0.35, 0.9], [1.0, 0.5, 0.9], [0.8, 0.4, 0.9], [0.64, 0.32, 0.9], [0.512, 0.256, 0.9],
   [1.0, 0.5, 0.9], [1.0, 0.5, 0.9], [0.5, 0.25, 0.9], [0.5, 0.25, 0.9], [0.25, 0.125, 0.9], [0.25, 0.125, 0.9],
   [0.125, 0.0625, 0.9], [0.125, 0.0625, 0.9]]],
 ['ChainedScheduler', 'SGD', None,
  [[0.45, 0.225, 0.9], [0.405, 0.2025, 0.9], [0.3645, 0.18225, 0.9], [0.6561, 0.32805, 0.9], [0.59049, 0.295245, 0.9],
   [0.531441, 0.2657205, 0.9], [0.4782969, 0.23914845, 0.9], [0.43046721, 0.215233605, 0.9],
   [0.387420489, 0.1937102445, 0.9], [0.3486784401, 0.17433922005, 0.9], [0.31381059609, 0.156905298045, 0.9],
   [0.282429536481, 0.141214768241, 0.9], [0.254186582833, 0.127093291416, 0.9],
   [0.22876792455, 0.114383962275, 0.9]]],
 ['CyclicLR_tri', 'SGD', None,
  [[0.4, 0.4, 0.866666666667], [0.7, 0.7, 0.833333333333], [1.0, 1.0, 0.8], [0.55, 0.55, 0.85], [0.1, 0.1, 0.9],
   [0.4, 0.4, 0.866666666667], [0.7, 0.7, 0.833333333333], [1.0, 1.0, 0.8], [0.55, 0.55, 0.85], [0.1, 0.1, 0.9],
   [0.4, 0.4, 0.866666666667], [0.7, 0.7, 0.833333333333], [1.0, 1.0, 0.8], [0.55, 0.55, 0.85]]],
 ['CyclicLR_tri2', 'SGD', None,
  [[0.55, 0.225, 0.85], [1.0, 0.4, 0.8], [0.55, 0.225, 0.85], [0.1, 0.05, 0.9], [0.325, 0.1375, 0.875],
   [0.55, 0.225, 0.85], [0.325, 0.1375, 0.875], [0.1, 0.05, 0.9], [0.2125, 0.09375, 0.8875], [0.325, 0.1375, 0.875],
   [0.2125, 0.09375, 0.8875], [0.1, 0.05, 0.9], [0.15625, 0.071875, 0.89375], [0.2125, 0.09375, 0.8875]]],
 ['CyclicLR_exp', 'SGD', None,
  [[0.505, 0.505, 0.855], [0.829, 0.829, 0.819], [0.42805, 0.42805, 0.86355], [0.1, 0.1, 0.9],
   [0.3657205, 0.3657205, 0.8704755], [0.5782969, 0.5782969, 0.8468559], [0.315233605, 0.315233605, 0.876085155],
   [0.1, 0.1, 0.9], [0.27433922005, 0.27433922005, 0.88062897555], [0.41381059609, 0.41381059609, 0.86513215599],
   [0.241214768241, 0.241214768241, 0.884309470195], [0.1, 0.1, 0.9],
   [0.214383962275, 0.214383962275, 0.887290670858], [0.305891132095, 0.305891132095, 0.877123207545]]],
 ['CyclicLR_custom', 'SGD', None,
  [[0.325, 0.325, 0.9], [0.325, 0.325, 0.9], [0.15625, 0.15625, 0.9], [0.1, 0.1, 0.9], [0.1140625, 0.1140625, 0.9],
   [0.1140625, 0.1140625, 0.9], [0.103515625, 0.103515625, 0.9], [0.1, 0.1, 0.9], [0.10087890625, 0.10087890625, 0.9],
   [0.10087890625, 0.10087890625, 0.9], [0.100219726562, 0.100219726562, 0.9], [0.1, 0.1, 0.9],
   [0.100054931641, 0.100054931641, 0.9], [0.100054931641, 0.100054931641, 0.9]]],
 ['OneCycleLR_cos', 'SGD', None,
  [[0.253326288151, 0.253326288151, 0.927778511651], [0.703688047535, 0.703688047535, 0.880865828382],
   [0.990776934594, 0.990776934594, 0.85096073598], [0.98364749693, 0.98364749693, 0.851635256848],
   [0.91904437627, 0.91904437627, 0.858095594755], [0.81174565395, 0.81174565395, 0.868825509907],
   [0.672683836481, 0.672683836481, 0.882731747279], [0.516027724683, 0.516027724683, 0.898397421121],
   [0.35773877574, 0.35773877574, 0.914226379332], [0.213944814172, 0.213944814172, 0.928605833006],
   [0.099296791893, 0.099296791893, 0.940070681093], [0.025476024606, 0.025476024606, 0.947452787351],
   [4e-06, 4e-06, 0.95], [0.025476024606, 0.025476024606, 0.947452787351]]],
 ['OneCycleLR_lin3', 'SGD', None,
  [[0.424, 0.848, 0.91], [0.808, 1.616, 0.87], [0.808, 1.616, 0.87], [0.424, 0.848, 0.91], [0.04, 0.08, 0.95],
   [0.0350005, 0.070001, 0.95], [0.030001, 0.060002, 0.95], [0.0250015, 0.050003, 0.95], [0.020002, 0.040004, 0.95],
   [0.0150025, 0.030005, 0.95], [0.010003, 0.020006, 0.95], [0.0050035, 0.010007, 0.95], [4e-06, 8e-06, 0.95],
   [-0.0049955, -0.009991, 0.95]]],
 ['CAWR', 'SGD', None,
  [[0.7625, 0.3875, 0.9], [0.2875, 0.1625, 0.9], [1.0, 0.5, 0.9], [0.936362066798, 0.469855715851, 0.9],
   [0.7625, 0.3875, 0.9], [0.525, 0.275, 0.9], [0.2875, 0.1625, 0.9], [0.113637933202, 0.080144284149, 0.9],
   [1.0, 0.5, 0.9], [0.983814767487, 0.492333310915, 0.9], [0.936362066798, 0.469855715851, 0.9],
   [0.860875721064, 0.434099025767, 0.9], [0.7625, 0.3875, 0.9], [0.647939046424, 0.333234285148, 0.9]]],
 ['CAWR1', 'SGD', None,
  [[0.853553390593, 0.426776695297, 0.9], [0.5, 0.25, 0.9], [0.146446609407, 0.073223304703, 0.9], [1.0, 0.5, 0.9],
   [0.853553390593, 0.426776695297, 0.9], [0.5, 0.25, 0.9], [0.146446609407, 0.073223304703, 0.9], [1.0, 0.5, 0.9],
   [0.853553390593, 0.426776695297, 0.9], [0.5, 0.25, 0.9], [0.146446609407, 0.073223304703, 0.9], [1.0, 0.5, 0.9],
   [0.853553390593, 0.426776695297, 0.9], [0.5, 0.25, 0.9]]],
 ['CyclicLR_tri', 'Adam', None,
  [[0.4, 0.4, 0.866666666667], [0.7, 0.7, 0.833333333333], [1.0, 1.0, 0.8], [0.55, 0.55, 0.85], [0.1, 0.1, 0.9],
   [0.4, 0.4, 0.866666666667], [0.7, 0.7, 0.833333333333], [1.0, 1.0, 0.8], [0.55, 0.55, 0.85], [0.1, 0.1, 0.9],
   [0.4, 0.4, 0.866666666667], [0.7, 0.7, 0.833333333333], [1.0, 1.0, 0.8], [0.55, 0.55, 0.85]]],
 ['OneCycleLR_cos', 'Adam', None,
  [[0.253326288151, 0.253326288151, 0.927778511651], [0.703688047535, 0.703688047535, 0.880865828382],
   [0.990776934594, 0.990776934594, 0.85096073598], [0.98364749693, 0.98364749693, 0.851635256848],
   [0.91904437627, 0.91904437627, 0.858095594755], [0.81174565395, 0.81174565395, 0.868825509907],
   [0.672683836481, 0.672683836481, 0.882731747279], [0.516027724683, 0.516027724683, 0.898397421121],
   [0.35773877574, 0.35773877574, 0.914226379332], [0.213944814172, 0.213944814172, 0.928605833006],
   [0.099296791893, 0.099296791893, 0.940070681093], [0.025476024606, 0.025476024606, 0.947452787351],
   [4e-06, 4e-06, 0.95], [0.025476024606, 0.025476024606, 0.947452787351]]],
 ['OneCycleLR_lin3', 'AdamW', None,
  [[0.424, 0.848, 0.91], [0.808, 1.616, 0.87], [0.808, 1.616, 0.87], [0.424, 0.848, 0.91], [0.04, 0.08, 0.95],
   [0.0350005, 0.070001, 0.95], [0.030001, 0.060002, 0.95], [0.0250015, 0.050003, 0.95], [0.020002, 0.040004, 0.95],
   [0.0150025, 0.030005, 0.95], [0.010003, 0.020006, 0.95], [0.0050035, 0.010007, 0.95], [4e-06, 8e-06, 0.95],
   [-0.0049955, -0.009991, 0.95]]],
 ['CAWR', 'SGD', [0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 5.5, 6.0, 6.5],
  [[1.0, 0.5, 0.9], [0.936362066798, 0.469855715851, 0.9], [0.7625, 0.3875, 0.9], [0.525, 0.275, 0.9],
   [0.2875, 0.1625, 0.9], [0.113637933202, 0.080144284149, 0.9], [1.0, 0.5, 0.9],
   [0.983814767487, 0.492333310915, 0.9], [0.936362066798, 0.469855715851, 0.9],
   [0.860875721064, 0.434099025767, 0.9], [0.7625, 0.3875, 0.9], [0.647939046424, 0.333234285148, 0.9],
   [0.525, 0.275, 0.9], [0.402060953576, 0.216765714852, 0.9]]],
 ['CAWR1', 'SGD',
  [0.1, 0.4, 0.7, 0.9999999999999999, 1.3, 1.6, 1.9, 2.2, 2.5, 2.8, 3.1, 3.4, 3.6999999999999997, 4.0],
  [[0.998458666867, 0.499229333433, 0.9], [0.975528258148, 0.487764129074, 0.9],
   [0.926320082177, 0.463160041089, 0.9], [0.853553390593, 0.426776695297, 0.9],
   [0.761249282358, 0.380624641179, 0.9], [0.654508497187, 0.327254248594, 0.9],
   [0.539229547864, 0.269614773932, 0.9], [0.42178276748, 0.21089138374, 0.9], [0.308658283817, 0.154329141909, 0.9],
   [0.206107373854, 0.103053686927, 0.9], [0.1197970172, 0.0598985086, 0.9], [0.054496737906, 0.027248368953, 0.9],
   [0.013815039801, 0.006907519901, 0.9], [1.0, 0.5, 0.9]]]]

MAKERS = {
    "LambdaLR": lambda opt: S.LambdaLR(opt, lambda e: 0.9 ** e),
    "MultiplicativeLR": lambda opt: S.MultiplicativeLR(opt, lambda e: 0.8),
    "StepLR": lambda opt: S.StepLR(opt, 3, gamma=0.5),
    "MultiStepLR": lambda opt: S.MultiStepLR(opt, [2, 5, 5], gamma=0.5),
    "ConstantLR": lambda opt: S.ConstantLR(opt, factor=0.5, total_iters=4),
    "LinearLR": lambda opt: S.LinearLR(opt, start_factor=0.2, end_factor=0.9, total_iters=6),
    "ExponentialLR": lambda opt: S.ExponentialLR(opt, 0.9),
    "PolynomialLR": lambda opt: S.PolynomialLR(opt, total_iters=7, power=2.0),
    "CosineAnnealingLR": lambda opt: S.CosineAnnealingLR(opt, T_max=5, eta_min=0.01),
    "SequentialLR": lambda opt: S.SequentialLR(opt, [S.LinearLR(opt, 0.1, total_iters=3), S.ExponentialLR(opt, 0.8),
                                                     S.StepLR(opt, 2, 0.5)], milestones=[3, 7]),
    "ChainedScheduler": lambda opt: S.ChainedScheduler([S.ConstantLR(opt, factor=0.5, total_iters=4),
                                                        S.ExponentialLR(opt, 0.9)]),
    "CyclicLR_tri": lambda opt: S.CyclicLR(opt, 0.1, 1.0, step_size_up=3, step_size_down=2),
    "CyclicLR_tri2": lambda opt: S.CyclicLR(opt, [0.1, 0.05], [1.0, 0.4], step_size_up=2, mode="triangular2"),
    "CyclicLR_exp": lambda opt: S.CyclicLR(opt, 0.1, 1.0, step_size_up=2, mode="exp_range", gamma=0.9),
    "CyclicLR_custom": lambda opt: S.CyclicLR(opt, 0.1, 1.0, step_size_up=2, scale_fn=lambda x: 0.5 ** x,
                                              scale_mode="iterations", cycle_momentum=False),
    "OneCycleLR_cos": lambda opt: S.OneCycleLR(opt, 1.0, total_steps=14),
    "OneCycleLR_lin3": lambda opt: S.OneCycleLR(opt, [1.0, 2.0], total_steps=14, anneal_strategy="linear",
                                                three_phase=True, pct_start=0.25),
    "CAWR": lambda opt: S.CosineAnnealingWarmRestarts(opt, T_0=3, T_mult=2, eta_min=0.05),
    "CAWR1": lambda opt: S.CosineAnnealingWarmRestarts(opt, T_0=4),
}


def _optimizer(opt_name="SGD"):
    w = torch.zeros(2, requires_grad=True)
    v = torch.zeros(2, requires_grad=True)
    kw = dict(momentum=0.9) if opt_name == "SGD" else {}
    return getattr(torch.optim, opt_name)([{"params": [w]}, {"params": [v], "lr": 0.5}], lr=1.0, **kw)


def _row(sched, opt):
    group = opt.param_groups[0]
    momentum = group["betas"][0] if "betas" in group else group.get("momentum", 0.0)
    return [float(x) for x in sched.get_last_lr()] + [float(momentum)]


@pytest.mark.parametrize("name,opt_name,epochs,expected", TORCH_TRACES,
                         ids=[f"{n}-{o}{'-epochs' if e else ''}" for n, o, e, _ in TORCH_TRACES])
def test_lr_sequence_matches_torch(name, opt_name, epochs, expected):
    opt = _optimizer(opt_name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # step(epoch) is deprecated in torch too
        sched = MAKERS[name](opt)
        got = []
        for i in range(len(expected)):
            opt.step()
            sched.step() if epochs is None else sched.step(epochs[i])
            got.append(_row(sched, opt))
    for row, want in zip(got, expected):     # (the expected values are rounded to 12 digits)
        assert row == pytest.approx(want, rel=1e-11, abs=1e-12)


@pytest.mark.parametrize("name", ["StepLR", "PolynomialLR", "CyclicLR_tri2", "OneCycleLR_cos", "CAWR",
                                  "SequentialLR", "ChainedScheduler", "CosineAnnealingLR", "LambdaLR"])
def test_state_dict_resumes_the_same_sequence(name):
    opt = _optimizer()
    sched = MAKERS[name](opt)
    for _ in range(4):
        opt.step()
        sched.step()
    saved = pickle.loads(pickle.dumps(sched.state_dict()))
    saved_groups = [dict(g) for g in opt.state_dict()["param_groups"]]
    expected = []
    for _ in range(5):
        opt.step()
        sched.step()
        expected.append(_row(sched, opt))
    opt2 = _optimizer()
    sched2 = MAKERS[name](opt2)
    for group, saved_group in zip(opt2.param_groups, saved_groups):
        group.update({k: v for k, v in saved_group.items() if k != "params"})
    sched2.load_state_dict(saved)
    got = []
    for _ in range(5):
        opt2.step()
        sched2.step()
        got.append(_row(sched2, opt2))
    assert got == expected


def test_cyclic_state_dict_drops_functions_and_keeps_callable_objects():
    class Halve:
        def __init__(self):
            self.base = 0.5

        def __call__(self, x):
            return self.base ** x

    opt = _optimizer()
    sched = S.CyclicLR(opt, 0.1, 1.0, step_size_up=2, scale_fn=Halve(), cycle_momentum=False)
    state = sched.state_dict()
    assert state["_scale_fn_custom"] == {"base": 0.5}
    assert "_scale_fn_ref" not in state
    plain = S.CyclicLR(_optimizer(), 0.1, 1.0, mode="exp_range", gamma=0.9).state_dict()
    assert plain["_scale_fn_custom"] is None and "_scale_fn_ref" not in plain


def test_warning_when_scheduler_steps_before_optimizer():
    opt = _optimizer()
    sched = S.StepLR(opt, 2)
    with pytest.warns(UserWarning, match=r"Detected call of `lr_scheduler.step\(\)` before `optimizer.step\(\)`"):
        sched.step()


def test_warning_when_optimizer_step_overridden():
    opt = _optimizer()
    sched = S.ExponentialLR(opt, 0.9)
    opt.step = lambda closure=None: None
    with pytest.warns(UserWarning, match=r"Seems like `optimizer.step\(\)` has been overridden"):
        sched.step()


def test_no_warning_in_the_right_order():
    opt = _optimizer()
    sched = S.PolynomialLR(opt)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        opt.step()
        sched.step()


def test_get_lr_outside_step_warns():
    sched = S.PolynomialLR(_optimizer())
    with pytest.warns(UserWarning, match="please use `get_last_lr\\(\\)`"):
        sched.get_lr()


def test_sequential_lr_errors_are_torchs():
    opt = _optimizer()
    with pytest.raises(ValueError, match="^SequentialLR expects at least one scheduler, but got no scheduler.$"):
        S.SequentialLR(opt, [], [])
    with pytest.raises(ValueError, match="^Sequential Schedulers expects number of schedulers provided to be one "
                                         "more than the number of milestone points, but got number of schedulers 1 "
                                         "and the number of milestones to be equal to 1$"):
        S.SequentialLR(opt, [S.StepLR(opt, 2)], [3])
    with pytest.raises(ValueError, match="^SequentialLR does not support `ReduceLROnPlateau`"):
        S.SequentialLR(opt, [S.ReduceLROnPlateau(opt)], [])
    other = _optimizer()
    with pytest.raises(ValueError, match="^ChainedScheduler expects all schedulers to belong to the same optimizer"):
        S.ChainedScheduler([S.StepLR(opt, 2), S.StepLR(other, 2)])
    with pytest.raises(TypeError, match="^ChainedScheduler at index 0 should have `optimizer` as its attribute.$"):
        S.ChainedScheduler([object()], optimizer=opt)


def test_cyclic_and_warm_restart_errors_are_torchs():
    opt = _optimizer()
    with pytest.raises(ValueError, match="^mode is invalid and scale_fn is None$"):
        S.CyclicLR(opt, 0.1, 1.0, mode="sawtooth")
    with pytest.raises(ValueError, match="^base_lr must have the same length as optimizer.param_groups. base_lr has "
                                         "3 values, param_groups has 2.$"):
        S.CyclicLR(opt, [0.1, 0.1, 0.1], 1.0)
    w = torch.zeros(2, requires_grad=True)
    with pytest.raises(ValueError, match="^optimizer must support momentum or beta1 with `cycle_momentum` option"):
        S.CyclicLR(torch.optim.Adagrad([w]), 0.1, 1.0)
    with pytest.raises(ValueError, match="^Expected positive integer T_0, but got 0$"):
        S.CosineAnnealingWarmRestarts(opt, T_0=0)
    with pytest.raises(ValueError, match="^Expected integer T_mult >= 1, but got 1.5$"):
        S.CosineAnnealingWarmRestarts(opt, T_0=2, T_mult=1.5)
    sched = S.CosineAnnealingWarmRestarts(opt, T_0=2)
    with pytest.raises(ValueError, match="^Expected non-negative epoch, but got -1$"):
        sched.step(-1)


def test_warm_restarts_fractional_epochs_hit_the_restart_points():
    opt = _optimizer()
    sched = S.CosineAnnealingWarmRestarts(opt, T_0=2, T_mult=2, eta_min=0.0)
    for epoch, t_cur, t_i in [(1.0, 1.0, 2), (2.0, 0.0, 4), (5.5, 3.5, 4), (6.0, 0.0, 8)]:
        sched.step(epoch)
        assert (sched.T_cur, sched.T_i) == (t_cur, t_i)
    assert sched.get_last_lr() == [1.0, 0.5]     # a restart: back to the initial rates


# torch 2.13's state_dict keys (the scheduler's attributes less the optimizer)
STATE_KEYS = {
    "OneCycleLR_cos": ["_get_lr_called_within_step", "_is_initial", "_last_lr", "_schedule_phases", "_step_count",
                       "_anneal_func_type", "base_lrs", "cycle_momentum", "last_epoch", "total_steps", "use_beta1"],
    "SequentialLR": ["_last_lr", "_milestones", "_schedulers", "last_epoch"],
    "ChainedScheduler": ["_last_lr", "_schedulers"],
    "CAWR": ["T_0", "T_cur", "T_i", "T_mult", "_get_lr_called_within_step", "_is_initial", "_last_lr", "_step_count",
             "base_lrs", "eta_min", "last_epoch"],
}


@pytest.mark.parametrize("name", list(STATE_KEYS))
def test_state_dict_keys_are_torchs(name):
    state = MAKERS[name](_optimizer()).state_dict()
    assert set(state) == set(STATE_KEYS[name])


def test_reduce_lr_on_plateau_sequence_and_keys_match_torch():
    opt = _optimizer()
    sched = S.ReduceLROnPlateau(opt, patience=1, factor=0.5, cooldown=1, threshold=0.1)
    lrs = []
    for metric in [1.0, 0.95, 0.94, 0.93, 0.5, 0.6, 0.6, 0.6, 0.6, 0.6]:
        sched.step(metric)
        lrs.append(sched.get_last_lr()[0])
    assert lrs == [1.0, 1.0, 0.5, 0.5, 0.5, 0.5, 0.25, 0.25, 0.25, 0.125]     # torch 2.13's
    assert sorted(sched.state_dict()) == ["_last_lr", "best", "cooldown", "cooldown_counter", "default_min_lr", "eps",
                                          "factor", "last_epoch", "min_lrs", "mode", "mode_worse", "num_bad_epochs",
                                          "patience", "threshold", "threshold_mode"]
