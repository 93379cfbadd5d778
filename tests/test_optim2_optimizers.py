"""New optimizers and every option of the existing ones against torch 2.13's iterates (issue 22, branch optim2).

The expected numbers come from a side-by-side run of torch 2.13 and reftorch on the same fixed problem (a
least-squares fit plus a quartic penalty, so that no method converges in one step); CI has no torch, so
they are written out below.
"""
import math
import warnings

import numpy as np
import pytest

import reftorch as torch

W0 = np.array([[0.5, -1.0, 0.25], [1.5, 0.3, -0.7]], dtype=np.float32)
B0 = np.array([0.1, -0.2], dtype=np.float32)
X = np.array([[1.0, 2.0, -1.0], [0.5, -0.3, 0.8], [-1.2, 0.4, 0.9], [0.3, 0.3, 0.3]], dtype=np.float32)
Y = np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5], [-1.0, 2.0]], dtype=np.float32)

# torch 2.13 results (side-by-side script: optimizers on a fixed least-squares + quartic problem)
# each case: optimizer, options, steps, final [weight (2x3) ravelled, bias (2)], the loss step() returned
TORCH_RUNS = \
[['SGD', {'lr': 0.05}, 6, [0.4902787, -0.5867371, 0.0921517, 0.9645904, 0.0867995, -0.2667454, 0.2013918, 0.0379004],
  [4.475617, 3.738354, 3.1843, 2.753944, 2.411272, 2.133095]],
 ['SGD', {'lr': 0.05, 'momentum': 0.9}, 6,
  [0.4361754, 0.1348834, -0.1806832, 0.0384943, -0.2583376, 0.4943443, 0.3536384, 0.4920809],
  [4.475617, 3.738354, 2.683142, 1.718009, 1.051237, 0.720474]],
 ['SGD', {'dampening': 0.3, 'lr': 0.05, 'momentum': 0.9}, 6,
  [0.4712788, -0.0425953, -0.1101796, 0.244151, -0.18116, 0.2982945, 0.3270508, 0.3519357],
  [4.475617, 3.738354, 2.820498, 1.967465, 1.313138, 0.895077]],
 ['SGD', {'lr': 0.05, 'momentum': 0.9, 'nesterov': True, 'weight_decay': 0.1}, 6,
  [0.3112454, 0.2096988, -0.2041148, 0.0022461, -0.2401489, 0.5578802, 0.2952434, 0.5935307],
  [4.475617, 3.111054, 1.972865, 1.203069, 0.773219, 0.60153]],
 ['SGD', {'lr': 0.05, 'maximize': True}, 6,
  [0.4261894, -1.81981, 0.5008049, 2.9943223, 0.706477, -1.4609153, -0.1127719, -0.4602599],
  [4.475617, 5.327759, 6.472208, 8.074779, 10.449517, 14.261165]],
 ['SGD', {'differentiable': False, 'foreach': False, 'lr': 0.05, 'momentum': 0.5}, 6,
  [0.4703381, -0.3525802, 0.0012305, 0.6752124, -0.0273542, -0.0151886, 0.2510502, 0.1911507],
  [4.475617, 3.738354, 2.896734, 2.209403, 1.710151, 1.361177]],
 ['Adam', {'lr': 0.05}, 6,
  [0.4578994, -0.7057129, -0.0456043, 1.2040932, 0.0041712, -0.4032461, 0.3867349, 0.0986661],
  [4.475617, 4.03166, 3.626718, 3.253503, 2.9103, 2.596518]],
 ['Adam', {'amsgrad': True, 'lr': 0.05}, 6,
  [0.4578994, -0.7057129, -0.0456043, 1.2040932, 0.0041712, -0.4032461, 0.3867349, 0.0986661],
  [4.475617, 4.03166, 3.626718, 3.253503, 2.9103, 2.596518]],
 ['Adam', {'lr': 0.05, 'maximize': True, 'weight_decay': 0.1}, 6,
  [0.2046102, -1.3018764, 0.5518414, 1.8017515, 0.6016544, -1.0015758, -0.2018825, -0.5007554],
  [4.475617, 4.961184, 5.489778, 6.063103, 6.683177, 7.352284]],
 ['Adam', {'foreach': False, 'lr': 0.05}, 6,
  [0.4578994, -0.7057129, -0.0456043, 1.2040932, 0.0041712, -0.4032461, 0.3867349, 0.0986661],
  [4.475617, 4.03166, 3.626718, 3.253503, 2.9103, 2.596518]],
 ['AdamW', {'lr': 0.05}, 6,
  [0.4564068, -0.7031318, -0.0459555, 1.2000406, 0.0036893, -0.4015487, 0.3860179, 0.0988933],
  [4.475617, 4.028144, 3.620417, 3.245069, 2.900314, 2.585486]],
 ['AdamW', {'amsgrad': True, 'lr': 0.05, 'maximize': True}, 6,
  [0.2091498, -1.2984902, 0.5507275, 1.7968458, 0.600401, -0.999097, -0.2017758, -0.4999147],
  [4.475617, 4.957115, 5.480418, 6.047252, 6.659599, 7.319667]],
 ['RMSprop', {'lr': 0.01}, 6,
  [0.3455416, -0.6804416, -0.0837, 1.1729764, -0.0262093, -0.3667355, 0.3781784, 0.1492967],
  [4.475617, 3.628382, 3.13926, 2.790931, 2.521006, 2.301869]],
 ['RMSprop', {'centered': True, 'lr': 0.01}, 6,
  [0.3432161, -0.6765093, -0.0881206, 1.1687871, -0.0303335, -0.3623352, 0.3804738, 0.1542378],
  [4.475617, 3.624523, 3.131398, 2.779118, 2.505391, 2.282643]],
 ['RMSprop', {'lr': 0.01, 'momentum': 0.9}, 6,
  [-0.0533937, -0.0578912, -0.7248565, 0.4894427, -0.6661077, 0.333988, 0.7329685, 0.9242946],
  [4.475617, 3.628382, 2.574213, 1.65005, 1.00299, 0.652939]],
 ['RMSprop', {'centered': True, 'lr': 0.01, 'maximize': True, 'momentum': 0.5, 'weight_decay': 0.1}, 6,
  [-0.3518046, -1.7544042, 1.0012417, 2.2384403, 1.0306512, -1.4238265, -0.6626213, -0.8753684],
  [4.475617, 5.494924, 7.046889, 8.997653, 11.28219, 13.86523]],
 ['Adagrad', {'lr': 0.1}, 6,
  [0.3472524, -0.682088, -0.0819288, 1.1746442, -0.0245675, -0.3684309, 0.3769337, 0.1475389],
  [4.475617, 3.628382, 3.140599, 2.794042, 2.526057, 2.308915]],
 ['Adagrad', {'initial_accumulator_value': 0.5, 'lr': 0.1, 'lr_decay': 0.1}, 6,
  [0.477866, -0.7307391, 0.0277128, 1.222157, 0.0528595, -0.4227606, 0.2743199, 0.0566569],
  [4.475617, 3.720042, 3.297554, 3.011182, 2.799096, 2.633491]],
 ['Adagrad', {'lr': 0.1, 'maximize': True, 'weight_decay': 0.1}, 6,
  [0.0330774, -1.4088278, 0.6569543, 1.9006563, 0.6970799, -1.0940444, -0.3151214, -0.5745981],
  [4.475617, 5.489382, 6.381855, 7.229639, 8.056562, 8.873693]],
 ['Adadelta', {}, 6, [0.5170782, -0.9803579, 0.2303537, 1.4803089, 0.2803042, -0.6802832, 0.1195331, -0.1802151],
  [4.475617, 4.446317, 4.416507, 4.386464, 4.356322, 4.32616]],
 ['Adadelta', {'lr': 0.5, 'maximize': True, 'rho': 0.8, 'weight_decay': 0.1}, 6,
  [0.4924532, -1.0073954, 0.2573935, 1.5073891, 0.3073869, -0.7073849, 0.0925952, -0.2073748],
  [4.475617, 4.486016, 4.49701, 4.508439, 4.52023, 4.532342]],
 ['Adamax', {'lr': 0.05}, 6,
  [0.4869168, -0.7353263, -0.0179565, 1.2278888, 0.0276364, -0.4235554, 0.3442579, 0.0883959],
  [4.475617, 4.03166, 3.640547, 3.291298, 2.978458, 2.697994]],
 ['Adamax', {'lr': 0.05, 'maximize': True, 'weight_decay': 0.1}, 6,
  [0.2671762, -1.2744739, 0.526494, 1.7784368, 0.5807703, -0.981961, -0.1701689, -0.4923037],
  [4.475617, 4.961184, 5.467801, 5.996222, 6.547124, 7.121231]],
 ['NAdam', {'lr': 0.05}, 6, [0.4193921, -0.7763839, 0.0215676, 1.2734318, 0.0734049, -0.471064, 0.3104188, 0.0350036],
  [4.475617, 4.007819, 3.698323, 3.429576, 3.179429, 2.94188]],
 ['NAdam', {'lr': 0.05, 'momentum_decay': 0.01, 'weight_decay': 0.1}, 6,
  [0.3724315, -0.7753291, 0.0208742, 1.2730106, 0.074123, -0.4711857, 0.3080331, 0.0339595],
  [4.475617, 4.007803, 3.697497, 3.428122, 3.17764, 2.939974]],
 ['NAdam', {'decoupled_weight_decay': True, 'lr': 0.05, 'maximize': True, 'weight_decay': 0.1}, 6,
  [0.1874858, -1.2234966, 0.4963316, 1.7041602, 0.540136, -0.9269232, -0.1620884, -0.4366281],
  [4.475617, 4.949144, 5.329929, 5.711177, 6.119241, 6.566023]],
 ['RAdam', {'lr': 0.05}, 10, [0.4976652, -0.5906881, 0.0934954, 0.9453865, 0.083772, -0.2821048, 0.2115, 0.015713],
  [4.475617, 3.738354, 3.146533, 2.668142, 2.279206, 1.961521, 1.955527, 1.948017, 1.939221, 1.929292]],
 ['RAdam', {'betas': [0.9, 0.5], 'lr': 0.05}, 10,
  [0.4797776, -0.3170464, -0.009363, 0.6138428, -0.0471029, 0.0154805, 0.2638987, 0.1965606],
  [4.475617, 3.738354, 3.146533, 2.668142, 2.279206, 1.961521, 1.70108, 1.48697, 1.310592, 1.165092]],
 ['RAdam', {'betas': [0.9, 0.5], 'decoupled_weight_decay': True, 'lr': 0.05, 'weight_decay': 0.1}, 6,
  [0.487874, -0.5140806, 0.0729851, 0.8431606, 0.0556019, -0.2102421, 0.2135853, 0.0487123],
  [4.475617, 3.705994, 3.095871, 2.608308, 2.216098, 1.898895]],
 ['RAdam', {'betas': [0.9, 0.5], 'lr': 0.05, 'maximize': True, 'weight_decay': 0.1}, 6,
  [0.4381737, -1.6303871, 0.4621823, 2.4973357, 0.6274777, -1.315506, -0.0791593, -0.451853],
  [4.475617, 5.284051, 6.28448, 7.541258, 9.148808, 11.250053]],
 ['Rprop', {'lr': 0.01}, 6, [0.54504, -0.9007008, 0.1507008, 1.4007009, 0.2007008, -0.6007008, 0.1992992, -0.1007008],
  [4.475617, 4.383528, 4.275207, 4.148351, 4.000602, 3.828514]],
 ['Rprop', {'etas': [0.3, 1.5], 'lr': 0.01, 'maximize': True, 'step_sizes': [0.001, 0.02]}, 6,
  [0.395, -1.1049999, 0.355, 1.6049999, 0.405, -0.8049999, -0.005, -0.305],
  [4.475617, 4.56937, 4.713137, 4.910726, 5.115118, 5.326382]],
 ['ASGD', {'lr': 0.05}, 6, [0.4902646, -0.5867203, 0.0921488, 0.964567, 0.0867978, -0.2667373, 0.2013859, 0.0379013],
  [4.475617, 3.738322, 3.184252, 2.75389, 2.411215, 2.13304]],
 ['ASGD', {'alpha': 0.5, 'lambd': 0.01, 'lr': 0.05, 't0': 2, 'weight_decay': 0.1}, 6,
  [0.4745921, -0.5655559, 0.0877526, 0.9358038, 0.0835066, -0.2547862, 0.1956173, 0.0409407],
  [4.475617, 3.702773, 3.129994, 2.690146, 2.343332, 2.064231]],
 ['LBFGS', {'lr': 1, 'max_iter': 5}, 3,
  [-0.2440901, 0.5023379, -0.0870553, 0.2411872, -0.5066453, 0.0789348, -0.1174451, 1.1233827],
  [4.475617, 0.332057, 0.313164]],
 ['LBFGS', {'history_size': 2, 'lr': 0.5, 'max_iter': 4}, 3,
  [-0.292031, 0.4860236, -0.1551811, 0.2689942, -0.4666554, 0.1485706, -0.0824504, 1.0756848],
  [4.475617, 0.560887, 0.326226]],
 ['LBFGS', {'line_search_fn': 'strong_wolfe', 'max_iter': 6}, 3,
  [-0.2420181, 0.5046054, -0.0825478, 0.2424464, -0.5043051, 0.0831615, -0.1206175, 1.1203732],
  [4.475617, 0.324909, 0.312893]],
 ['LBFGS', {'history_size': 3, 'line_search_fn': 'strong_wolfe', 'max_iter': 10, 'tolerance_grad': 0.001}, 2,
  [-0.2460163, 0.5007975, -0.0912968, 0.2408687, -0.5061792, 0.0792023, -0.1150419, 1.1232543],
  [4.475617, 0.313475]],
 ['LBFGS', {'max_eval': 4, 'max_iter': 10, 'tolerance_change': 0.001}, 2,
  [-0.3510407, 0.4698147, -0.2745301, 0.3415279, -0.2976555, 0.3221583, -0.0040653, 0.9374105],
  [4.475617, 0.428639]],
 ['SGD', {'fused': True, 'lr': 0.05, 'momentum': 0.9}, 6,
  [0.4361754, 0.1348834, -0.1806832, 0.0384943, -0.2583376, 0.4943443, 0.3536384, 0.4920809],
  [4.475617, 3.738354, 2.683142, 1.718009, 1.051237, 0.720474]],
 ['Adam', {'fused': True, 'lr': 0.05}, 6,
  [0.4578994, -0.7057129, -0.0456043, 1.2040932, 0.0041712, -0.4032461, 0.3867349, 0.0986661],
  [4.475617, 4.03166, 3.626718, 3.253503, 2.9103, 2.596518]],
 ['AdamW', {'amsgrad': True, 'fused': True, 'lr': 0.05}, 6,
  [0.4564068, -0.7031318, -0.0459555, 1.2000406, 0.0036893, -0.4015487, 0.3860179, 0.0988933],
  [4.475617, 4.028144, 3.620417, 3.245069, 2.900314, 2.585486]],
 ['Adagrad', {'fused': True, 'lr': 0.1}, 6,
  [0.3472524, -0.682088, -0.0819288, 1.1746442, -0.0245675, -0.3684309, 0.3769337, 0.1475389],
  [4.475617, 3.628382, 3.140599, 2.794042, 2.526057, 2.308915]]]

# differentiable=True: the parameter after 3 steps and d(sum p^2)/d(initial weights), torch 2.13
TORCH_DIFFERENTIABLE = \
[['SGD', {'lr': 0.1, 'momentum': 0.9, 'nesterov': True, 'weight_decay': 0.1}, [-0.0941653, 0.3119089, -0.038224],
  [-0.019501, 0.028152, -0.01048]],
 ['SGD', {'lr': 0.1, 'maximize': True}, [0.9531222, -2.6993299, 0.4423883], [4.377957, -29.722784, 1.640868]],
 ['Adam', {'lr': 0.1}, [0.2060186, -0.7029895, -0.029585], [0.405257, -1.402855, -0.048965]],
 ['AdamW', {'lr': 0.1}, [0.2048672, -0.7003346, -0.0299423], [0.401741, -1.393369, -0.049351]],
 ['Adagrad', {'lr': 0.1, 'lr_decay': 0.1}, [0.3064873, -0.7995586, 0.0764253], [0.593224, -1.589323, 0.124536]],
 ['Adadelta', {'lr': 0.5}, [0.4951564, -0.9951531, 0.2451639], [0.990299, -1.9903, 0.490297]],
 ['NAdam', {'lr': 0.1}, [0.268128, -0.7586077, 0.04636], [0.512202, -1.50469, 0.068182]],
 ['RAdam', {'lr': 0.1}, [0.2067308, -0.2804636, 0.1124604], [0.131632, 0.029191, 0.095612]],
 ['ASGD', {'lr': 0.1}, [0.2405231, -0.4060195, 0.1259767], [0.203322, -0.190118, 0.122951]],
 ['RMSprop', {'lr': 0.1}, [-0.0520877, 0.0, -0.0019908], [-0.015831, 0.0, 0.00126]],
 ['RMSprop', {'lr': 0.1, 'momentum': 0.5}, [0.1720855, 0.3957729, 0.235164], [-0.255238, -0.610446, 0.094155]],
 ['Adam', {'lr': 0.1, 'maximize': True, 'weight_decay': 0.1}, [0.7998744, -1.300344, 0.5482575],
  [1.603566, -2.601622, 1.113492]],
 ['NAdam', {'decoupled_weight_decay': True, 'lr': 0.1, 'weight_decay': 0.1}, [0.2575088, -0.7334424, 0.0432556],
  [0.476696, -1.412407, 0.060993]],
 ['RAdam', {'betas': [0.9, 0.5], 'lr': 0.1}, [0.2067308, -0.2804636, 0.1124604], [0.131632, 0.029191, 0.095612]],
 ['Adadelta', {'weight_decay': 0.1}, [0.4903327, -0.9903197, 0.2403632], [0.980611, -1.980614, 0.480603]]]


def _options(kw):
    return {k: tuple(v) if isinstance(v, list) else v for k, v in kw.items()}


def _run(cls, kw, steps):
    w = torch.tensor(W0.copy(), requires_grad=True)
    b = torch.tensor(B0.copy(), requires_grad=True)
    x, y = torch.tensor(X), torch.tensor(Y)
    opt = getattr(torch.optim, cls)([w, b], **_options(kw))

    def closure():
        opt.zero_grad()
        loss = (((x @ w.t() + b) - y) ** 2).mean() + 0.1 * (w ** 4).sum()
        loss.backward()
        return loss

    losses = [float(opt.step(closure)) for _ in range(steps)]
    return np.concatenate([w.detach().numpy().ravel(), b.detach().numpy().ravel()]), losses, opt


@pytest.mark.parametrize("cls,kw,steps,expected,losses", TORCH_RUNS,
                         ids=[f"{c}-{'-'.join(f'{k}={v}' for k, v in kw.items())}" for c, kw, *_ in TORCH_RUNS])
def test_iterates_match_torch(cls, kw, steps, expected, losses):
    params, got_losses, _ = _run(cls, kw, steps)
    np.testing.assert_allclose(params, expected, rtol=1e-5, atol=2e-6)
    np.testing.assert_allclose(got_losses, losses, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("cls,kw,expected,grad", TORCH_DIFFERENTIABLE, ids=[c for c, *_ in TORCH_DIFFERENTIABLE])
def test_differentiable_step_is_recorded_by_autograd(cls, kw, expected, grad):
    w0 = torch.tensor(np.array([0.5, -1.0, 0.25], dtype=np.float32), requires_grad=True)
    p = w0.clone()
    opt = getattr(torch.optim, cls)([p], differentiable=True, **_options(kw))
    for _ in range(3):
        q = p.clone()
        p.grad = 2 * q + q ** 3
        opt.step()
    (p ** 2).sum().backward()
    np.testing.assert_allclose(p.detach().numpy(), expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(w0.grad.numpy(), grad, rtol=1e-4, atol=1e-5)


def test_non_differentiable_step_is_not_recorded():
    p = torch.tensor([1.0, 2.0], requires_grad=True)
    opt = torch.optim.Adam([p], lr=0.1)
    p.grad = torch.ones(2)
    opt.step()          # an in-place update of a leaf that requires grad: allowed only under no_grad
    assert p.grad_fn is None and p.is_leaf


# torch 2.13's state layout after two steps: key -> (dtype, shape) for tensors, or the Python type's name
STATE_LAYOUT = {
    ("SGD", (("momentum", 0.9),)): {"momentum_buffer": ("float32", (2,))},
    ("Adam", (("amsgrad", True),)): {"step": ("float32", ()), "exp_avg": ("float32", (2,)),
                                     "exp_avg_sq": ("float32", (2,)), "max_exp_avg_sq": ("float32", (2,))},
    ("RMSprop", (("momentum", 0.5), ("centered", True))): {
        "step": ("float32", ()), "square_avg": ("float32", (2,)), "momentum_buffer": ("float32", (2,)),
        "grad_avg": ("float32", (2,))},
    ("Adagrad", ()): {"step": ("float32", ()), "sum": ("float32", (2,))},
    ("Adadelta", ()): {"step": ("float32", ()), "square_avg": ("float32", (2,)), "acc_delta": ("float32", (2,))},
    ("Adamax", ()): {"step": ("float32", ()), "exp_avg": ("float32", (2,)), "exp_inf": ("float32", (2,))},
    ("NAdam", ()): {"step": ("float32", ()), "mu_product": ("float32", ()), "exp_avg": ("float32", (2,)),
                    "exp_avg_sq": ("float32", (2,))},
    ("RAdam", ()): {"step": ("float32", ()), "exp_avg": ("float32", (2,)), "exp_avg_sq": ("float32", (2,))},
    ("Rprop", ()): {"step": ("float32", ()), "prev": ("float32", (2,)), "step_size": ("float32", (2,))},
    ("ASGD", ()): {"step": ("float32", ()), "eta": ("float32", ()), "mu": ("float32", ()), "ax": ("float32", (2,))},
    ("LBFGS", ()): {"func_evals": "int", "n_iter": "int", "d": ("float32", (2,)), "t": "int", "old_dirs": "list",
                    "old_stps": "list", "ro": "list", "H_diag": ("float32", ()), "prev_flat_grad": ("float32", (2,)),
                    "prev_loss": "float", "al": "list"},
}


def _describe(v):
    if isinstance(v, torch.Tensor):
        return (str(v.dtype).replace("torch.", ""), tuple(v.shape))
    return type(v).__name__


@pytest.mark.parametrize("key", list(STATE_LAYOUT), ids=[k[0] for k in STATE_LAYOUT])
def test_state_dict_layout_is_torchs(key):
    cls, kw = key
    w = torch.tensor([1.0, -2.0], requires_grad=True)
    opt = getattr(torch.optim, cls)([w], **dict(kw))

    def closure():
        opt.zero_grad()
        loss = (w ** 2).sum() + (w ** 4).sum() * 0.01
        loss.backward()
        return loss

    for _ in range(2):
        opt.step(closure)
    sd = opt.state_dict()
    assert {k: _describe(v) for k, v in sd["state"][0].items()} == STATE_LAYOUT[key]
    assert sd["param_groups"][0]["params"] == [0]


@pytest.mark.parametrize("cls,kw", [("NAdam", dict(lr=0.05)), ("RAdam", dict(lr=0.05)), ("Rprop", dict(lr=0.01)),
                                    ("ASGD", dict(lr=0.05, t0=1)), ("Adadelta", {}), ("Adamax", dict(lr=0.05)),
                                    ("LBFGS", dict(max_iter=3, history_size=2))])
def test_state_dict_round_trip_continues_the_same_iterates(cls, kw):
    _, _, opt = _run(cls, kw, 3)
    reference, _, _ = _run(cls, kw, 5)
    w = torch.tensor(W0.copy(), requires_grad=True)
    b = torch.tensor(B0.copy(), requires_grad=True)
    with torch.no_grad():
        p = opt.param_groups[0]["params"]
        w.copy_(p[0])
        b.copy_(p[1])
    resumed = getattr(torch.optim, cls)([w, b], **kw)
    resumed.load_state_dict(opt.state_dict())
    x, y = torch.tensor(X), torch.tensor(Y)

    def closure():
        resumed.zero_grad()
        loss = (((x @ w.t() + b) - y) ** 2).mean() + 0.1 * (w ** 4).sum()
        loss.backward()
        return loss

    for _ in range(2):
        resumed.step(closure)
    got = np.concatenate([w.detach().numpy().ravel(), b.detach().numpy().ravel()])
    np.testing.assert_allclose(got, reference, rtol=1e-6, atol=1e-7)


def _raises(exc, message, fn):
    with pytest.raises(exc) as info:
        fn()
    assert str(info.value) == message


def _param(dtype=torch.float32):
    p = torch.zeros(2, dtype=dtype, requires_grad=True)
    p.grad = torch.ones(2, dtype=dtype)
    return p


@pytest.mark.parametrize("cls,kw,message", [
    ("NAdam", dict(momentum_decay=-1), "Invalid momentum_decay value: -1"),
    ("NAdam", dict(betas=(1.0, 0.9)), "Invalid beta parameter at index 0: 1.0"),
    ("RAdam", dict(eps=-1), "Invalid epsilon value: -1"),
    ("RAdam", dict(weight_decay=-0.5), "Invalid weight_decay value: -0.5"),
    ("Adamax", dict(betas=(0.9, 1.5)), "Invalid beta parameter at index 1: 1.5"),
    ("Adadelta", dict(rho=1.5), "Invalid rho value: 1.5"),
    ("Adadelta", dict(lr=-1), "Invalid learning rate: -1"),
    ("Rprop", dict(etas=(0.5, 0.9)), "Invalid eta values: 0.5, 0.9"),
    ("ASGD", dict(weight_decay=-1), "Invalid weight_decay value: -1"),
    ("SparseAdam", dict(lr=0.0), "Invalid learning rate: 0.0"),
    ("SparseAdam", dict(eps=0.0), "Invalid epsilon value: 0.0"),
    ("LBFGS", dict(lr=-1), "Invalid learning rate: -1"),
])
def test_constructor_errors_are_torchs(cls, kw, message):
    _raises(ValueError, message, lambda: getattr(torch.optim, cls)([_param()], **kw))


def test_lbfgs_rejects_parameter_groups():
    _raises(ValueError, "LBFGS doesn't support per-parameter options (parameter groups)",
            lambda: torch.optim.LBFGS([{"params": [_param()]}, {"params": [_param()], "lr": 0.1}]))


def test_lbfgs_rejects_unknown_line_search():
    p = _param()
    opt = torch.optim.LBFGS([p], line_search_fn="armijo")

    def closure():
        opt.zero_grad()
        loss = ((p - 1) ** 2).sum()
        loss.backward()
        return loss

    _raises(RuntimeError, "only 'strong_wolfe' is supported", lambda: opt.step(closure))


def test_lbfgs_stops_at_tolerance_grad_without_moving():
    p = torch.tensor([1.0, 1.0], requires_grad=True)
    opt = torch.optim.LBFGS([p], tolerance_grad=1e-3)

    def closure():
        opt.zero_grad()
        loss = ((p - 1) ** 2).sum()
        loss.backward()
        return loss

    assert float(opt.step(closure)) == 0.0
    assert p.tolist() == [1.0, 1.0]
    assert opt.state[p] == {"func_evals": 1, "n_iter": 0}


def test_lbfgs_minimises_rosenbrock_with_strong_wolfe():
    p = torch.tensor([-1.5, 2.0], dtype=torch.float64, requires_grad=True)
    opt = torch.optim.LBFGS([p], line_search_fn="strong_wolfe", max_iter=200, tolerance_grad=1e-10,
                            tolerance_change=1e-14)

    def closure():
        opt.zero_grad()
        loss = (1 - p[0]) ** 2 + 100 * (p[1] - p[0] ** 2) ** 2
        loss.backward()
        return loss

    opt.step(closure)
    np.testing.assert_allclose(p.detach().numpy(), [1.0, 1.0], atol=1e-6)


def test_sparse_adam_refuses_dense_gradients():
    opt = torch.optim.SparseAdam([_param()])
    _raises(RuntimeError, "SparseAdam does not support dense gradients, please consider Adam instead", opt.step)


@pytest.mark.parametrize("cls", ["SGD", "Adam", "AdamW", "Adagrad"])
def test_fused_option_errors_are_torchs(cls):
    C = getattr(torch.optim, cls)
    _raises(RuntimeError, "`fused` and `foreach` cannot be `True` together.",
            lambda: C([_param()], lr=0.1, fused=True, foreach=True))
    _raises(RuntimeError, "`fused` does not support `differentiable`",
            lambda: C([_param()], lr=0.1, fused=True, differentiable=True))
    q = torch.zeros(2, dtype=torch.int64)
    q.grad = torch.ones(2, dtype=torch.int64)
    opt = C([q], lr=0.1, fused=True)
    _raises(RuntimeError, "`fused=True` requires all the params to be floating point Tensors of supported devices: "
            "['mps', 'cuda', 'xpu', 'hpu', 'cpu', 'mtia', 'privateuseone'] but torch.int64 and cpu", opt.step)


@pytest.mark.parametrize("cls", ["Adam", "AdamW", "RMSprop", "NAdam", "RAdam", "Adamax", "ASGD", "Rprop", "Adadelta"])
def test_capturable_off_cuda_raises_torchs_assertion(cls):
    opt = getattr(torch.optim, cls)([_param()], capturable=True)
    devices = "['cuda', 'xpu', 'hpu', 'privateuseone']" if cls == "Adadelta" else \
        "['cuda', 'xpu', 'hpu', 'privateuseone', 'xla']"
    _raises(AssertionError, f"If capturable=True, params and state_steps must be on supported devices: {devices}.",
            opt.step)


def test_step_count_follows_a_float64_default_dtype():
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        p = _param(torch.float64)
        opt = torch.optim.NAdam([p])
        opt.step()
        assert opt.state[p]["step"].dtype == torch.float64
        fused = torch.optim.Adam([_param(torch.float64)], fused=True)
        fused.step()
        assert next(iter(fused.state.values()))["step"].dtype == torch.float32
    finally:
        torch.set_default_dtype(previous)


def test_asgd_average_starts_after_t0():
    p = torch.tensor([1.0, -1.0], requires_grad=True)
    opt = torch.optim.ASGD([p], lr=0.1, t0=2, lambd=0.0, alpha=0.0)
    for _ in range(6):
        p.grad = torch.ones(2)
        opt.step()
    # eta stays lr (alpha = 0); mu = 1 / max(1, t - t0): ax follows p through step 4, then averages (torch 2.13)
    assert opt.state[p]["mu"].item() == 0.25
    np.testing.assert_allclose(opt.state[p]["ax"].numpy(), [0.5, -1.5], rtol=1e-6)
    np.testing.assert_allclose(p.detach().numpy(), [0.4, -1.6], rtol=1e-6)
    assert math.isclose(opt.state[p]["eta"].item(), 0.1, rel_tol=1e-7)


def test_new_optimizers_keep_accepting_warnings_free_construction():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for cls in ["NAdam", "RAdam", "Adamax", "Adadelta", "Rprop", "ASGD", "LBFGS", "SparseAdam"]:
            getattr(torch.optim, cls)([_param()])


@pytest.mark.parametrize("cls", ["Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax", "NAdam", "RAdam", "Rprop",
                                 "ASGD"])
def test_foreach_with_differentiable_raises_torchs_assertion(cls):
    p = torch.tensor([1.0, 2.0], requires_grad=True).clone()
    p.grad = torch.ones(2)
    opt = getattr(torch.optim, cls)([p], foreach=True, differentiable=True)
    _raises(AssertionError, "_foreach ops don't support autograd", opt.step)
    assert p.tolist() == [1.0, 2.0]


def test_sgd_foreach_with_differentiable_steps():
    p = torch.tensor([1.0, 2.0], requires_grad=True).clone()
    p.grad = torch.ones(2)
    torch.optim.SGD([p], lr=0.5, foreach=True, differentiable=True).step()
    assert p.tolist() == [0.5, 1.5] and p.grad_fn is not None


class _CooGrad:
    """A stand-in for a sparse COO gradient (reftorch has no sparse tensors yet): what SparseAdam reads."""
    is_sparse = True

    def __init__(self, rows, values):
        self.rows, self.values = rows, np.asarray(values, dtype=np.float32)

    def coalesce(self):
        merged = {}
        for r, v in zip(self.rows, self.values):
            merged[r] = merged.get(r, 0) + v
        rows = sorted(merged)
        return _CooGrad(rows, [merged[r] for r in rows])

    def _indices(self):
        return torch.tensor([self.rows])

    def _values(self):
        return torch.tensor(self.values)


class _ParamWithCooGrad:
    def __init__(self, tensor, grad):
        self.tensor, self.grad = tensor, grad

    def __getitem__(self, where):
        return self.tensor[where]

    def __setitem__(self, where, value):
        self.tensor[where] = value


def test_sparse_adam_update_on_the_touched_rows_matches_torch():
    p = torch.tensor([[0.5, -1.0, 0.25], [1.5, 0.3, -0.7], [0.1, 0.2, 0.3], [-0.4, 0.9, 1.1]])
    state = {"step": 0, "exp_avg": torch.zeros_like(p), "exp_avg_sq": torch.zeros_like(p)}
    for rows, vals in [([0, 2], [[1.0, -2.0, 0.5], [0.3, 0.3, -0.1]]),
                       ([2, 3, 2], [[0.5, 0.5, 0.5], [-1.0, 2.0, 0.0], [0.1, -0.2, 0.4]])]:
        state["step"] += 1
        torch.optim.SparseAdam._update(_ParamWithCooGrad(p, _CooGrad(rows, vals)), state, 0.1, 0.9, 0.999, 1e-8,
                                       False)
    # torch 2.13 with real sparse_coo_tensor gradients (row 2 listed twice in the second one: summed)
    np.testing.assert_allclose(p.numpy(), [[0.4, -0.9, 0.15], [1.5, 0.3, -0.7], [-0.09651805, 2.0116568e-07, 0.3334366],
                                           [-0.32558635, 0.8255863, 1.1]], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(state["exp_avg"].numpy(), [[0.1, -0.2, 0.05], [0, 0, 0], [0.087, 0.057, 0.081],
                                                          [-0.1, 0.2, 0.0]], rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(state["exp_avg_sq"].numpy(), [[0.001, 0.004, 0.00025], [0, 0, 0],
                                                             [0.00044991, 0.00017991, 0.00081999],
                                                             [0.001, 0.004, 0.0]], rtol=1e-5, atol=1e-9)
