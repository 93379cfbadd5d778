"""Impossible sizes and identity-less reductions of nothing (issue 20, point 4): PyTorch's RuntimeError and
message, checked against torch 2.13, instead of NumPy's ValueError / MemoryError or an IndexError."""
from __future__ import annotations

import pytest

import reftorch as torch

BIG = 2 ** 62
OVERFLOW = rf"^Storage size calculation overflowed with sizes=\[{BIG}\]"


@pytest.mark.parametrize("make", [
    lambda: torch.empty(BIG), lambda: torch.zeros(BIG), lambda: torch.ones(BIG), lambda: torch.full((BIG,), 1.0),
    lambda: torch.rand(BIG), lambda: torch.randn(BIG), lambda: torch.randint(0, 5, (BIG,)),
    lambda: torch.arange(BIG), lambda: torch.arange(0, BIG, 1.0), lambda: torch.linspace(0, 1, BIG),
    lambda: torch.ones(3).new_empty(BIG), lambda: torch.ones(3).new_zeros(BIG), lambda: torch.ones(3).new_ones(BIG),
    lambda: torch.ones(3).new_full((BIG,), 1.0), lambda: torch.empty_like(torch.ones(1).expand(BIG)),
    lambda: torch.ones(1).expand(BIG).contiguous(), lambda: torch.ones(1).expand(BIG).clone(),
    lambda: torch.ones(1).expand(BIG) + 1,
], ids=["empty", "zeros", "ones", "full", "rand", "randn", "randint", "arange", "arange-float", "linspace",
        "new_empty", "new_zeros", "new_ones", "new_full", "empty_like", "expand-contiguous", "expand-clone",
        "expand-add"])
def test_a_size_whose_bytes_overflow(make):
    with pytest.raises(RuntimeError, match=OVERFLOW):
        make()


@pytest.mark.parametrize("make, msg", [
    (lambda: torch.empty(2 ** 31, 2 ** 31), r"sizes=\[2147483648, 2147483648\]"),
    (lambda: torch.zeros(BIG, 2), rf"sizes=\[{BIG}, 2\]"),
    (lambda: torch.empty(2 ** 40, 2 ** 40, 0), r"sizes=\[1099511627776, 1099511627776, 0\]"),   # counted in order
    (lambda: torch.empty(2 ** 61), r"sizes=\[2305843009213693952\]"),                          # 2**63 bytes
    (lambda: torch.empty(2 ** 60 + 1, dtype=torch.float64), r"sizes=\[1152921504606846977\]"),
    (lambda: torch.eye(2 ** 31), r"sizes=\[2147483648, 2147483648\]"),
])
def test_the_storage_check_counts_bytes_as_pytorch(make, msg):
    with pytest.raises(RuntimeError, match="Storage size calculation overflowed with " + msg):
        make()


def test_a_stride_that_overflows():
    with pytest.raises(RuntimeError, match="^Stride calculation overflowed$"):
        torch.empty(0, 2 ** 40, 2 ** 40)


@pytest.mark.parametrize("make, nbytes", [
    (lambda: torch.empty(2 ** 48), 2 ** 50),            # beyond any address space: refused however memory is set
    (lambda: torch.zeros(2 ** 48, dtype=torch.float64), 2 ** 51),
    (lambda: torch.full((2 ** 48,), 2.0), 2 ** 50),
    (lambda: torch.empty(2 ** 61 - 1), 2 ** 63 - 4),
    (lambda: torch.empty(BIG, dtype=torch.bool), BIG),
    (lambda: torch.ones(1).expand(2 ** 48).contiguous(), 2 ** 50),
])
def test_a_size_no_allocator_gives(make, nbytes):
    with pytest.raises(RuntimeError, match=r"^\[enforce fail at alloc_cpu.cpp:127\] err == 0. DefaultCPUAllocator: "
                                           rf"can't allocate memory: you tried to allocate {nbytes} bytes."):
        make()


def test_ordinary_sizes_still_work():
    assert torch.zeros(3, 0, 2 ** 20).shape == (3, 0, 2 ** 20)
    assert float(torch.full((2, 3), 2.0).sum()) == 12.0 and torch.arange(5).tolist() == [0, 1, 2, 3, 4]


EMPTY_DIM = ("(): Expected reduction dim to be specified for input.numel() == 0. "
             "Specify the reduction dim with the 'dim' argument.")


@pytest.mark.parametrize("name", ["amax", "amin", "max", "min"])
@pytest.mark.parametrize("shape, dtype", [((0,), torch.float32), ((0, 3), torch.float32), ((0,), torch.int64)])
def test_an_identity_less_reduction_of_nothing(name, shape, dtype):
    x = torch.empty(*shape, dtype=dtype)
    with pytest.raises(RuntimeError) as info:
        getattr(x, name)()
    assert str(info.value) == name + EMPTY_DIM
    with pytest.raises(RuntimeError) as info:
        getattr(torch, name)(x)
    assert str(info.value) == name + EMPTY_DIM


def test_reductions_of_nothing_that_torch_allows_or_indexes():
    e = torch.empty(0, 3)
    assert e.amax(1).shape == (0,) and float(e.sum()) == 0.0 and float(e.prod()) == 1.0
    with pytest.raises(IndexError, match=r"^amax\(\): Expected reduction dim 0 to have non-zero size.$"):
        e.amax(0)
    with pytest.raises(IndexError, match=r"^argmax\(\): Expected reduction dim to be specified for input.numel\(\) == 0.$"):
        torch.empty(0).argmax()
