"""nn.utils.prune against masks, names and errors checked with torch 2.13."""
import numpy as np
import pytest

import reftorch as torch
import reftorch.nn.utils.prune as prune
from reftorch import nn

W = np.array([[0.3, -1.2, 0.5, 0.05], [0.8, 0.1, -0.4, 2.0], [-0.6, 0.9, 1.1, -0.25]], dtype=np.float32)


def lin():
    m = nn.Linear(4, 3)
    with torch.no_grad():
        m.weight.copy_(torch.tensor(W))
        m.bias.copy_(torch.tensor([0.5, -0.1, 0.2]))
    return m


def test_l1_then_ln_then_l1_stack_in_container():
    m = lin()
    prune.l1_unstructured(m, "weight", amount=0.25)
    assert sorted(m.state_dict()) == ["bias", "weight_mask", "weight_orig"]
    assert [n for n, _ in m.named_parameters()] == ["bias", "weight_orig"]
    assert [n for n, _ in m.named_buffers()] == ["weight_mask"]
    assert type(m.weight) is torch.Tensor and prune.is_pruned(m)
    assert m.weight_mask.tolist() == [[1, 1, 1, 0], [1, 0, 1, 1], [1, 1, 1, 0]]
    assert m.weight_mask.dtype == torch.float32
    prune.ln_structured(m, "weight", amount=1, n=2, dim=0)
    hooks = list(m._forward_pre_hooks.values())
    assert len(hooks) == 1 and isinstance(hooks[0], prune.PruningContainer)
    assert [type(h).__name__ for h in hooks[0]] == ["L1Unstructured", "LnStructured"]
    assert m.weight_mask.tolist() == [[0, 0, 0, 0], [1, 0, 1, 1], [1, 1, 1, 0]]
    prune.l1_unstructured(m, "weight", amount=2)
    assert m.weight_mask.tolist() == [[0, 0, 0, 0], [1, 0, 0, 1], [0, 1, 1, 0]] and len(hooks[0]) == 3
    y = m(torch.tensor(np.arange(8, dtype=np.float32).reshape(2, 4)))
    y.sum().backward()
    np.testing.assert_allclose(y.detach().numpy(), [[0.5, 5.9, 3.3], [0.5, 17.1, 11.3]], atol=1e-5)
    assert m.weight_orig.grad.tolist() == [[0, 0, 0, 0], [4, 0, 0, 10], [0, 6, 8, 0]]
    prune.remove(m, "weight")
    assert sorted(m.state_dict()) == ["bias", "weight"] and isinstance(m.weight, nn.Parameter)
    np.testing.assert_allclose(m.weight.detach().numpy(), [[0, 0, 0, 0], [0.8, 0, 0, 2.0], [0, 0.9, 1.1, 0]])
    assert not prune.is_pruned(m)
    with pytest.raises(ValueError, match=r"^Parameter 'weight' of module Linear\(in_features=4, out_features=3, "
                                         r"bias=True\) has to be pruned before pruning can be removed$"):
        prune.remove(m, "weight")


def test_structured_custom_identity_random():
    m = lin()
    prune.ln_structured(m, "weight", amount=0.5, n=1, dim=1)
    assert m.weight_mask.tolist() == [[0, 1, 0, 1]] * 3
    m = lin()
    prune.ln_structured(m, "weight", amount=1, n=float("inf"), dim=-1)
    assert m.weight_mask.tolist() == [[0, 1, 1, 1]] * 3
    m = lin()
    prune.custom_from_mask(m, "bias", torch.tensor([1, 0, 1]))
    np.testing.assert_allclose(m.bias.tolist(), [0.5, 0.0, 0.2])
    assert m.bias_mask.dtype == torch.float32
    m = lin()
    prune.identity(m, "weight")
    assert m.weight_mask.sum().item() == 12
    m = lin()
    prune.random_unstructured(m, "weight", amount=5)
    assert int(m.weight_mask.sum().item()) == 7
    m = lin()
    prune.random_structured(m, "weight", amount=2, dim=1)
    assert m.weight_mask.sum(0).tolist().count(0.0) == 2 and m.weight_mask.sum().item() == 6


def test_global_unstructured_and_importance_scores():
    m1, m2 = lin(), nn.Linear(2, 2)
    with torch.no_grad():
        m2.weight.copy_(torch.tensor([[0.2, -3.0], [0.15, 0.7]]))
    prune.global_unstructured([(m1, "weight"), (m2, "weight")], pruning_method=prune.L1Unstructured, amount=4)
    assert m1.weight_mask.tolist() == [[1, 1, 1, 0], [1, 0, 1, 1], [1, 1, 1, 1]]
    assert m2.weight_mask.tolist() == [[0, 1], [0, 1]]
    assert isinstance(list(m1._forward_pre_hooks.values())[0], prune.CustomFromMask)
    m = lin()
    scores = torch.tensor(np.arange(12, dtype=np.float32).reshape(3, 4))
    prune.l1_unstructured(m, "weight", amount=3, importance_scores=scores)
    assert m.weight_mask.tolist() == [[0, 0, 0, 1], [1, 1, 1, 1], [1, 1, 1, 1]]
    assert prune.L1Unstructured(0.5).prune(torch.tensor([1.0, -3.0, 0.5, 2.0])).tolist() == [0.0, -3.0, 0.0, 2.0]


def test_errors_leave_module_intact():
    with pytest.raises(ValueError, match=r"^amount=-1 should either be a float in the range \[0, 1\] or a "
                                         "non-negative integer$"):
        prune.L1Unstructured(-1)
    with pytest.raises(ValueError, match=r"^amount=1.5 should either be a float"):
        prune.L1Unstructured(1.5)
    with pytest.raises(TypeError, match="^Invalid type for amount: a. Must be int or float.$"):
        prune.L1Unstructured("a")
    with pytest.raises(ValueError, match="^amount=20 should be smaller than the number of parameters to prune=12$"):
        prune.l1_unstructured(lin(), "weight", amount=20)
    m = lin()
    with pytest.raises(ValueError, match=r"^Structured pruning can only be applied to multidimensional tensors. "
                                         r"Found tensor of shape torch.Size\(\[3\]\) with 1 dims$"):
        prune.ln_structured(m, "bias", amount=1, n=2, dim=0)
    assert [n for n, _ in m.named_parameters()] == ["weight", "bias"] and not hasattr(m, "bias_orig")
    with pytest.raises(IndexError, match=r"^Invalid index 2 for tensor of size torch.Size\(\[3, 4\]\)$"):
        prune.ln_structured(lin(), "weight", amount=1, n=2, dim=2)
    with pytest.raises(TypeError, match='^Only "unstructured" PRUNING_TYPE supported for the `pruning_method`. '
                                        "Found method <class '.*LnStructured'> of type structured$"):
        prune.global_unstructured([(lin(), "weight")], pruning_method=prune.LnStructured, amount=1, n=1, dim=0)


def test_conv_structured_then_unstructured_and_state_dict():
    c = nn.Conv2d(2, 4, 2)
    with torch.no_grad():
        c.weight.copy_(torch.tensor(np.sin(np.arange(32, dtype=np.float32)).reshape(4, 2, 2, 2)))
    prune.ln_structured(c, "weight", amount=0.5, n=2, dim=0)
    assert c.weight_mask.sum((1, 2, 3)).tolist() == [0, 8, 0, 8]
    prune.ln_structured(c, "weight", amount=1, n=1, dim=1)          # over the 2 kept output channels
    assert c.weight_mask.sum((0, 2, 3)).tolist() == [8, 0] and c.weight_mask.sum((1, 2, 3)).tolist() == [0, 4, 0, 4]
    prune.l1_unstructured(c, "weight", amount=0.5)                   # half of the 8 still kept
    expected = [0.0] * 32
    for i in (8, 11, 24, 27):
        expected[i] = 1.0
    assert c.weight_mask.reshape(-1).tolist() == expected
    c3 = nn.Conv2d(2, 4, 2)
    prune.identity(c3, "weight")
    c3.load_state_dict(c.state_dict())
    assert bool((c3.weight_mask == c.weight_mask).all())
    x = torch.ones(1, 2, 3, 3)
    np.testing.assert_allclose(c3(x).detach().numpy(), c(x).detach().numpy())
    prune.remove(c, "weight")
    assert sorted(c.state_dict()) == ["bias", "weight"] and int((c.weight == 0).sum()) == 28
    m = nn.Linear(3, 2)
    prune.l1_unstructured(m, "weight", amount=0)
    prune.l1_unstructured(m, "bias", amount=1)
    assert sorted(m.state_dict()) == ["bias_mask", "bias_orig", "weight_mask", "weight_orig"]
    assert len(m._forward_pre_hooks) == 2
