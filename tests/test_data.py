"""reftorch.utils.data: datasets, samplers, collation, and DataLoader semantics (single process and
worker processes under fork and spawn)."""
import collections
import multiprocessing
import os

import numpy as np
import pytest

import reftorch as torch
from reftorch.utils.data import (BatchSampler, ConcatDataset, DataLoader, Dataset, IterableDataset, RandomSampler,
                                 SequentialSampler, Subset, TensorDataset, default_collate, get_worker_info,
                                 random_split)


# ------------------------------------------------------------------ module-level datasets (picklable for spawn)

class Squares(Dataset):
    """Sample i is {"x": i*i as float64 tensor, "i": i, "pid": worker process id, "wid": worker id}."""

    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        info = get_worker_info()
        return {"x": torch.tensor([float(i * i)]), "i": i, "pid": os.getpid(),
                "wid": -1 if info is None else info.id}


class Failing(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        if i == 5:
            raise ValueError("sample 5 is broken")
        return torch.tensor([i])


class Range(IterableDataset):
    """0..n-1, split between workers by get_worker_info, as PyTorch's docs show."""

    def __init__(self, n):
        self.n = n

    def __iter__(self):
        info = get_worker_info()
        if info is None:
            return iter(range(self.n))
        return iter(range(info.id, self.n, info.num_workers))

    def __len__(self):
        return self.n


def record_seed(worker_id):
    info = get_worker_info()
    assert info.id == worker_id and info.seed is not None
    os.environ["REFTORCH_TEST_WORKER_SEEN"] = str(worker_id)


def _methods():
    return [m for m in ("fork", "spawn") if m in multiprocessing.get_all_start_methods()]


# ------------------------------------------------------------------ datasets

def test_tensor_dataset():
    x = torch.arange(12.0).reshape(6, 2)
    y = torch.arange(6)
    ds = TensorDataset(x, y)
    assert len(ds) == 6
    a, b = ds[4]
    assert a.tolist() == [8.0, 9.0] and b.item() == 4
    with pytest.raises(ValueError, match="Size mismatch between tensors"):
        TensorDataset(x, torch.arange(5))


def test_subset_concat_and_add():
    ds = TensorDataset(torch.arange(5))
    sub = Subset(ds, [4, 0, 2])
    assert len(sub) == 3 and sub[0][0].item() == 4
    cat = ds + sub
    assert isinstance(cat, ConcatDataset) and len(cat) == 8
    assert [cat[i][0].item() for i in range(8)] == [0, 1, 2, 3, 4, 4, 0, 2]
    assert cat[-1][0].item() == 2
    with pytest.raises(ValueError, match="absolute value of index should not exceed dataset length"):
        cat[-9]
    with pytest.raises(AssertionError, match="should not be an empty iterable"):
        ConcatDataset([])


def test_random_split_lengths_fractions_and_generator():
    ds = TensorDataset(torch.arange(10))
    a, b = random_split(ds, [7, 3], generator=torch.Generator().manual_seed(1))
    assert len(a) == 7 and len(b) == 3
    assert sorted(a.indices + b.indices) == list(range(10))
    a2, _ = random_split(ds, [7, 3], generator=torch.Generator().manual_seed(1))
    assert a2.indices == a.indices
    parts = random_split(ds, [0.5, 0.3, 0.2])
    assert [len(p) for p in parts] == [5, 3, 2]
    parts = random_split(TensorDataset(torch.arange(11)), [0.5, 0.25, 0.25])
    assert [len(p) for p in parts] == [6, 3, 2]      # the remainder is dealt from the first split on
    with pytest.raises(ValueError, match="Sum of input lengths does not equal"):
        random_split(ds, [3, 3])


# ------------------------------------------------------------------ collation

def test_default_collate_structures():
    Point = collections.namedtuple("Point", "x y")
    batch = [{"a": torch.tensor([1.0, 2.0]), "b": 1, "c": 0.5, "s": "u", "t": (1, 2.0), "p": Point(1, 2),
              "n": np.array([1, 2], dtype=np.int32), "l": [True, 3]},
             {"a": torch.tensor([3.0, 4.0]), "b": 2, "c": 1.5, "s": "v", "t": (3, 4.0), "p": Point(3, 4),
              "n": np.array([3, 4], dtype=np.int32), "l": [False, 4]}]
    out = default_collate(batch)
    assert out["a"].tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert out["b"].dtype is torch.int64 and out["b"].tolist() == [1, 2]
    assert out["c"].dtype is torch.float64 and out["c"].tolist() == [0.5, 1.5]
    assert out["s"] == ["u", "v"]
    assert isinstance(out["t"], list) and out["t"][0].tolist() == [1, 3] and out["t"][1].dtype is torch.float64
    assert isinstance(out["p"], Point) and out["p"].y.tolist() == [2, 4]
    assert out["n"].dtype is torch.int32 and out["n"].tolist() == [[1, 2], [3, 4]]
    assert out["l"][0].dtype is torch.bool and out["l"][1].tolist() == [3, 4]


def test_default_collate_errors():
    with pytest.raises(RuntimeError, match="each element in list of batch should be of equal size"):
        default_collate([[1, 2], [1]])
    with pytest.raises(TypeError, match="batch must contain tensors, numpy arrays, numbers, dicts or lists"):
        default_collate([object(), object()])


# ------------------------------------------------------------------ single-process loading

def _flat(loader, key=None):
    out = []
    for batch in loader:
        b = batch[key] if key is not None else batch[0]
        out.extend(b.reshape(-1).tolist())
    return out


def test_batches_drop_last_and_len():
    ds = TensorDataset(torch.arange(10.0).reshape(10, 1), torch.arange(10))
    loader = DataLoader(ds, batch_size=4)
    batches = list(loader)
    assert len(loader) == 3 and len(batches) == 3
    x, y = batches[0]
    assert tuple(x.shape) == (4, 1) and y.tolist() == [0, 1, 2, 3]
    assert batches[-1][1].tolist() == [8, 9]
    loader = DataLoader(ds, batch_size=4, drop_last=True)
    assert len(loader) == 2 and [b[1].tolist() for b in loader] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert DataLoader(ds, batch_size=4, pin_memory=True) is not None


def test_shuffle_is_seeded_and_reproducible():
    ds = TensorDataset(torch.arange(20))
    g = torch.Generator().manual_seed(123)
    loader = DataLoader(ds, batch_size=6, shuffle=True, generator=g)
    e1, e2 = _flat(loader), _flat(loader)
    assert sorted(e1) == list(range(20)) and e1 != list(range(20)) and e1 != e2
    g.manual_seed(123)
    assert _flat(loader) == e1 and _flat(loader) == e2
    torch.manual_seed(7)
    plain = DataLoader(ds, batch_size=6, shuffle=True)
    p1 = _flat(plain)
    torch.manual_seed(7)
    assert _flat(plain) == p1


def test_samplers_and_batch_sampler():
    ds = TensorDataset(torch.arange(6))
    assert list(SequentialSampler(ds)) == list(range(6))
    rs = RandomSampler(ds, generator=torch.Generator().manual_seed(0))
    assert sorted(rs) == list(range(6)) and len(rs) == 6
    rr = RandomSampler(ds, replacement=True, num_samples=40, generator=torch.Generator().manual_seed(0))
    picks = list(rr)
    assert len(picks) == 40 and set(picks) <= set(range(6))
    bs = BatchSampler(SequentialSampler(ds), 4, False)
    assert list(bs) == [[0, 1, 2, 3], [4, 5]] and len(bs) == 2
    loader = DataLoader(ds, batch_sampler=[[5, 0], [1]])
    assert [b[0].tolist() for b in loader] == [[5, 0], [1]]
    loader = DataLoader(ds, sampler=[3, 2, 1], batch_size=2)
    assert [b[0].tolist() for b in loader] == [[3, 2], [1]]


def test_loader_argument_errors():
    ds = TensorDataset(torch.arange(4))
    with pytest.raises(ValueError, match="batch_sampler option is mutually exclusive with batch_size"):
        DataLoader(ds, batch_size=2, batch_sampler=[[0]])
    with pytest.raises(ValueError, match="sampler option is mutually exclusive with shuffle"):
        DataLoader(ds, sampler=[0], shuffle=True)
    with pytest.raises(ValueError, match="num_workers option should be non-negative"):
        DataLoader(ds, num_workers=-1)
    with pytest.raises(ValueError, match="multiprocessing_context can only be used with multi-process loading"):
        DataLoader(ds, multiprocessing_context="spawn")
    with pytest.raises(ValueError, match="should specify a valid start method"):
        DataLoader(ds, num_workers=1, multiprocessing_context="teleport")
    with pytest.raises(ValueError, match="expected unspecified shuffle option"):
        DataLoader(Range(3), shuffle=True)
    with pytest.raises(ValueError, match="batch_size should be a positive integer value"):
        DataLoader(ds, batch_size=0)
    loader = DataLoader(ds)
    with pytest.raises(ValueError, match="batch_size attribute should not be set after DataLoader is initialized"):
        loader.batch_size = 3


def test_no_batching_and_custom_collate():
    ds = TensorDataset(torch.arange(3))
    assert [s[0].item() for s in DataLoader(ds, batch_size=None)] == [0, 1, 2]
    loader = DataLoader(ds, batch_size=2, collate_fn=lambda samples: len(samples))
    assert list(loader) == [2, 1]


def test_iterable_dataset_single_process():
    loader = DataLoader(Range(7), batch_size=3)
    assert [b.tolist() for b in loader] == [[0, 1, 2], [3, 4, 5], [6]]
    assert len(loader) == 3
    assert [b.tolist() for b in DataLoader(Range(7), batch_size=3, drop_last=True)] == [[0, 1, 2], [3, 4, 5]]


def test_get_worker_info_in_main_process():
    assert get_worker_info() is None


# ------------------------------------------------------------------ worker processes

@pytest.mark.parametrize("method", _methods())
def test_workers_map_style(method):
    ds = Squares(11)
    loader = DataLoader(ds, batch_size=2, num_workers=2, multiprocessing_context=method,
                        worker_init_fn=record_seed)
    batches = list(loader)
    assert len(batches) == 6
    assert [i for b in batches for i in b["i"].tolist()] == list(range(11))      # order kept
    assert [v for b in batches for v in b["x"].reshape(-1).tolist()] == [float(i * i) for i in range(11)]
    pids = {p for b in batches for p in b["pid"].tolist()}
    assert os.getpid() not in pids and len(pids) == 2
    assert {w for b in batches for w in b["wid"].tolist()} == {0, 1}


def test_workers_match_single_process_with_shuffle():
    ds = TensorDataset(torch.arange(30).reshape(30, 1))
    single = DataLoader(ds, batch_size=4, shuffle=True, generator=torch.Generator().manual_seed(5))
    multi = DataLoader(ds, batch_size=4, shuffle=True, generator=torch.Generator().manual_seed(5), num_workers=2)
    assert _flat(single) == _flat(multi)


def test_worker_exception_is_reraised():
    loader = DataLoader(Failing(), batch_size=2, num_workers=2)
    with pytest.raises(ValueError, match="Caught ValueError in DataLoader worker process [01]") as info:
        list(loader)
    assert "sample 5 is broken" in str(info.value)


def test_iterable_dataset_with_workers_shards_once():
    loader = DataLoader(Range(10), batch_size=2, num_workers=2)
    items = sorted(v for b in loader for v in b.tolist())
    assert items == list(range(10))


def test_persistent_workers_serve_several_epochs():
    loader = DataLoader(Squares(5), batch_size=2, num_workers=2, persistent_workers=True)
    first = [b["i"].tolist() for b in loader]
    pids = {p for b in loader for p in b["pid"].tolist()}
    second = [b["i"].tolist() for b in loader]
    assert first == second == [[0, 1], [2, 3], [4]]
    assert pids == {p for b in loader for p in b["pid"].tolist()}       # the same worker processes
    loader._iterator._shutdown_workers()
