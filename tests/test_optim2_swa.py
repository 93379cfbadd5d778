"""torch.optim.swa_utils against torch 2.13 (issue 22, branch optim2): AveragedModel with each averaging
function, SWALR's annealing, update_bn's recomputed statistics. CI has no torch; the values are written out."""
import numpy as np
import pytest

import reftorch as torch
from reftorch.optim import swa_utils as sw

W = np.array([[0.5, -1.0, 0.25], [1.5, 0.3, -0.7]], dtype=np.float32)
X = np.array([[1.0, 2.0, -1.0], [0.5, -0.3, 0.8], [-1.2, 0.4, 0.9], [0.3, 0.3, 0.3]], dtype=np.float32)

# torch 2.13 results: averaged parameters then buffers (after update_bn), SWALR's lrs, n_averaged
TORCH_SWA = {'ema': [[[0.493892, -0.953209, 0.249226, 1.352323, 0.298668, -0.683474], [0.1, 0.1], [0.775833, 0.775831],
          [0.067251, 0.067251], [5], [-0.448257, -0.066987], [2.587378, 9.440543], [2]],
         [0.08750000000000001, 0.06250000000000001, 0.05, 0.05, 0.05], 5],
 'ema_buf': [[[0.493892, -0.953209, 0.249226, 1.352323, 0.298668, -0.683474], [0.1, 0.1], [0.775833, 0.775831],
              [0.067251, 0.067251], [5], [-0.448257, -0.066987], [2.587378, 9.440543], [2]],
             [0.08750000000000001, 0.06250000000000001, 0.05, 0.05, 0.05], 5],
 'ema_fn': [[[0.493185, -0.948005, 0.249136, 1.336953, 0.298512, -0.681586], [0.1, 0.1], [0.751951, 0.751949],
             [0.074415, 0.074415], [5], [-0.44597, -0.063059], [2.562893, 9.293485], [2]],
            [0.08750000000000001, 0.06250000000000001, 0.05, 0.05, 0.05], 5],
 'swa': [[[0.494165, -0.955139, 0.249261, 1.357679, 0.298728, -0.684194], [0.1, 0.1], [0.784287, 0.784286],
          [0.064715, 0.064715], [5], [-0.449109, -0.068346], [2.596494, 9.492602], [2]],
         [0.08333333333333334, 0.06666666666666668, 0.05, 0.05, 0.05], 5],
 'swa_fn': [[[0.494144, -0.954976, 0.249259, 1.357151, 0.298724, -0.684138], [0.1, 0.1], [0.783493, 0.783491],
             [0.064953, 0.064953], [5], [-0.449038, -0.06821], [2.595726, 9.487584], [2]],
            [0.08750000000000001, 0.06250000000000001, 0.05, 0.05, 0.05], 5],
 'swa_multi': [[[0.494144, -0.954976, 0.249259, 1.357151, 0.298724, -0.684138], [0.1, 0.1], [0.783493, 0.783491],
                [0.064953, 0.064953], [5], [-0.449038, -0.06821], [2.595726, 9.487584], [2]],
               [0.08750000000000001, 0.06250000000000001, 0.05, 0.05, 0.05], 5]}

AVERAGERS = {
    "swa": lambda model: sw.AveragedModel(model),
    "ema": lambda model: sw.AveragedModel(model, multi_avg_fn=sw.get_ema_multi_avg_fn(0.7)),
    "ema_buf": lambda model: sw.AveragedModel(model, multi_avg_fn=sw.get_ema_multi_avg_fn(0.7), use_buffers=True),
    "swa_multi": lambda model: sw.AveragedModel(model, multi_avg_fn=sw.get_swa_multi_avg_fn()),
    "ema_fn": lambda model: sw.AveragedModel(model, avg_fn=sw.get_ema_avg_fn(0.6)),
    "swa_fn": lambda model: sw.AveragedModel(model, avg_fn=sw.get_swa_avg_fn(), use_buffers=True),
}


def _model():
    model = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.BatchNorm1d(2))
    with torch.no_grad():
        model[0].weight.copy_(torch.tensor(W))
        model[0].bias.fill_(0.1)
    return model


@pytest.mark.parametrize("kind", list(TORCH_SWA))
def test_averaged_model_swalr_update_bn_match_torch(kind):
    expected, expected_lrs, expected_n = TORCH_SWA[kind]
    model = _model()
    x = torch.tensor(X)
    averaged = AVERAGERS[kind](model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    sched = sw.SWALR(opt, swa_lr=0.05, anneal_epochs=3, anneal_strategy="cos" if kind != "swa" else "linear")
    lrs = []
    for _ in range(5):
        opt.zero_grad()
        loss = ((model(x) - 0.3) ** 2).mean() + model[0].weight.pow(4).sum() * 0.05
        loss.backward()
        opt.step()
        sched.step()
        lrs.append(sched.get_last_lr()[0])
        averaged.update_parameters(model)
    sw.update_bn([(x * 2,), (x - 1,)], averaged)
    got = [t.detach().numpy().ravel() for t in list(averaged.parameters()) + list(averaged.buffers())]
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-5)
    assert lrs == pytest.approx(expected_lrs, rel=1e-12)
    assert int(averaged.n_averaged) == expected_n


def test_averaged_model_forwards_to_its_copy():
    model = _model().eval()
    averaged = sw.AveragedModel(model)
    x = torch.tensor(X)
    np.testing.assert_array_equal(averaged(x).detach().numpy(), model(x).detach().numpy())
    assert averaged.module is not model


def test_update_bn_restores_momentum_and_mode():
    model = _model().eval()
    update = [(torch.tensor(X),)]
    sw.update_bn(update, model)
    assert model[1].momentum == 0.1 and not model.training
    assert int(model[1].num_batches_tracked) == 1


def test_errors_are_torchs():
    with pytest.raises(AssertionError, match="^Only one of avg_fn and multi_avg_fn should be provided$"):
        sw.AveragedModel(_model(), avg_fn=sw.get_swa_avg_fn(), multi_avg_fn=sw.get_swa_multi_avg_fn())
    with pytest.raises(ValueError,
                       match=r"^Invalid decay value 1.5 provided. Please provide a value in \[0,1\] range.$"):
        sw.get_ema_multi_avg_fn(1.5)
    opt = torch.optim.SGD(_model().parameters(), lr=0.1)
    with pytest.raises(ValueError, match="^anneal_strategy must be one of 'cos' or 'linear', instead got exp$"):
        sw.SWALR(opt, 0.05, anneal_strategy="exp")
    with pytest.raises(ValueError, match="^anneal_epochs must be equal or greater than 0, got -1$"):
        sw.SWALR(opt, 0.05, anneal_epochs=-1)


def test_swalr_state_dict_round_trip():
    opt = torch.optim.SGD(_model().parameters(), lr=0.1)
    sched = sw.SWALR(opt, 0.05, anneal_epochs=4)
    state = sched.state_dict()
    assert "anneal_func" not in state and state["_anneal_strategy"] == "cos"
    opt.step()
    sched.step()
    sched.load_state_dict(state)
    assert sched.anneal_func(0.5) == pytest.approx(0.5)
