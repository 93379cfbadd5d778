"""python -m reftorch.demo: train an MLP and a small CNN on scikit-learn's 8x8 handwritten digits.

Written the way a PyTorch tutorial is (`import reftorch as torch` in place of `import torch`):
TensorDataset + random_split + DataLoader, nn.Sequential models, CrossEntropyLoss, Adam with a
cosine learning-rate schedule, a checkpoint saved with torch.save and loaded into a fresh model.
The digits (1,797 images) ship with scikit-learn: nothing is downloaded.

    python -m reftorch.demo                      # MLP then CNN, about a minute on 2 cores
    python -m reftorch.demo --quick              # fewer epochs
    python -m reftorch.demo --plot curves.png    # loss and accuracy curves (needs matplotlib)
    python -m reftorch.demo --amp bf16           # mixed precision: autocast(bfloat16)
    python -m reftorch.demo --amp fp16           # autocast(float16) with a GradScaler
    python -m reftorch.distributed.run -n 2 -m reftorch.demo --distributed   # 2 processes, half a batch each
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

import reftorch as torch
from reftorch import nn
from reftorch.utils.data import DataLoader, TensorDataset, random_split

TARGETS = {"MLP": 0.97, "CNN": 0.95}
DIGITS_MEAN, DIGITS_STD = 0.3053, 0.3760      # of all pixels, scaled to [0, 1]


def parse_args(argv=None):
    p = argparse.ArgumentParser(prog="python -m reftorch.demo", description=__doc__.split("\n\n")[0])
    p.add_argument("--epochs", type=int, default=None,
                   help="epochs for each model (default: 12 for the MLP and 8 for the CNN; --quick: 6 and 4)")
    p.add_argument("--quick", action="store_true", help="a reduced run (fewer epochs)")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--lr", type=float, default=None,
                   help="Adam's learning rate (default: 4e-3 for the MLP, 8e-3 for the CNN)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="cpu", help="device to train on (default: cpu)")
    p.add_argument("--max-batches", type=int, default=None, metavar="N",
                   help="at most N batches (of --batch-size, evaluation too) per epoch and per evaluation: a smoke "
                        "run, e.g. on cuda in numba's simulator")
    p.add_argument("--models", default="mlp,cnn", help="comma-separated subset of mlp,cnn (default: both)")
    p.add_argument("--checkpoint-dir", default=None,
                   help="where checkpoints are written (default: a new temporary directory)")
    p.add_argument("--plot", metavar="FILE.png", default=None, help="save loss and accuracy curves to FILE.png")
    p.add_argument("--amp", choices=("bf16", "fp16"), default=None,
                   help="mixed precision: forward passes under autocast(bfloat16), or autocast(float16) with "
                        "GradScaler loss scaling; parameters and the optimizer stay float32")
    p.add_argument("--no-progress", action="store_true", help="no progress bars (one line per epoch instead)")
    p.add_argument("--distributed", action="store_true",
                   help="data-parallel over the processes of an MPI job (DistributedDataParallel; launch with "
                        "python -m reftorch.distributed.run -n 2 -m reftorch.demo --distributed), each process "
                        "taking its share of every batch")
    args = p.parse_args(argv)
    args.models = [m.strip().lower() for m in args.models.split(",") if m.strip()]
    for m in args.models:
        if m not in ("mlp", "cnn"):
            p.error(f"--models: unknown model {m!r} (choose from mlp, cnn)")
    if args.epochs is not None and args.epochs < 1:
        p.error("--epochs must be at least 1")
    return args


# ------------------------------------------------------------------------------------------ data

def load_digits_dataset(seed):
    """(train, test) datasets of (1x8x8 float image in [0, 1], label) pairs, an 80/20 split."""
    try:
        from sklearn.datasets import load_digits
    except ImportError:
        sys.exit("error: the demo needs scikit-learn for its dataset: pip install 'reftorch[demo]'")
    digits = load_digits()
    images = torch.tensor(digits.images / 16.0, dtype=torch.float32).unsqueeze(1)    # (N, 1, 8, 8)
    images = (images - DIGITS_MEAN) / DIGITS_STD        # like transforms.Normalize((mean,), (std,))
    labels = torch.tensor(digits.target, dtype=torch.int64)
    dataset = TensorDataset(images, labels)
    return random_split(dataset, [0.8, 0.2], generator=torch.Generator().manual_seed(seed))


# ------------------------------------------------------------------------------------------ models

def make_mlp():
    return nn.Sequential(
        nn.Flatten(),
        nn.Linear(64, 128), nn.ReLU(),
        nn.Linear(128, 64), nn.ReLU(),
        nn.Linear(64, 10),
    )


def make_cnn():
    return nn.Sequential(
        nn.Conv2d(1, 16, kernel_size=3, padding=1), nn.ReLU(), nn.MaxPool2d(2),      # 16 x 4 x 4
        nn.Conv2d(16, 32, kernel_size=3, padding=1), nn.ReLU(), nn.MaxPool2d(2),     # 32 x 2 x 2
        nn.Flatten(),
        nn.Linear(32 * 2 * 2, 10),
    )


MODELS = {"mlp": ("MLP", make_mlp), "cnn": ("CNN", make_cnn)}
LEARNING_RATES = {"mlp": 4e-3, "cnn": 8e-3}


# ------------------------------------------------------------------------------------------ training

def _progress(iterable, desc, enabled):
    if enabled:
        try:
            from tqdm.auto import tqdm
            return tqdm(iterable, desc=desc, leave=True, dynamic_ncols=True)
        except ImportError:
            pass
    return _PlainProgress(iterable, desc)


class _PlainProgress:
    """What the demo shows without tqdm: one line per epoch."""
    silent = False      # --distributed: only rank 0 reports

    def __init__(self, iterable, desc):
        self.iterable, self.desc, self.postfix = iterable, desc, {}

    def __iter__(self):
        return iter(self.iterable)

    def set_postfix(self, **kw):
        self.postfix = kw

    def close(self):
        if self.silent:
            return
        items = ", ".join(f"{k}={v}" for k, v in self.postfix.items())
        print(f"{self.desc}: {items}", file=sys.stderr, flush=True)


class _Amp:
    """--amp: the autocast region of forward passes and the loss scaler (disabled without --amp)."""

    def __init__(self, mode, device):
        self.dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(mode)
        self.device_type = torch.device(device).type
        self.scaler = torch.amp.GradScaler(self.device_type, enabled=mode == "fp16")

    def autocast(self):
        return torch.autocast(self.device_type, dtype=self.dtype, enabled=self.dtype is not None)


NO_AMP = _Amp(None, "cpu")


def train_one_epoch(model, bar, loss_fn, optimizer, device, amp=NO_AMP):
    """One pass over the training loader (wrapped in its progress bar); returns (mean loss, accuracy)."""
    model.train()
    total_loss, correct, seen = 0.0, 0, 0
    rank, world = _rank_and_world()
    for images, labels in _limited(bar):
        images, labels = images.to(device), labels.to(device)
        if world > 1:       # --distributed: this process's share of the batch; every process sees the same batches
            n = labels.size(0)
            lo, hi = n * rank // world, n * (rank + 1) // world
            images, labels = images[lo:hi], labels[lo:hi]
        optimizer.zero_grad()
        with amp.autocast():
            logits = model(images)
            loss = loss_fn(logits, labels)
        if world > 1:       # weighted by the share, DDP's average of the processes' gradients is the whole batch's
            amp.scaler.scale(loss * (labels.size(0) * world / n)).backward()
        else:
            amp.scaler.scale(loss).backward()
        amp.scaler.step(optimizer)      # (a plain optimizer.step() without --amp fp16)
        amp.scaler.update()
        total_loss += loss.item() * labels.size(0)
        correct += (logits.argmax(dim=1) == labels).sum().item()
        seen += labels.size(0)
        bar.set_postfix(loss=f"{total_loss / seen:.4f}", acc=f"{correct / seen:.1%}")
    if world > 1:           # the epoch's figures over all processes
        import reftorch.distributed as dist
        totals = torch.tensor([total_loss, correct, seen], dtype=torch.float64)
        dist.all_reduce(totals)
        total_loss, correct, seen = totals.tolist()
    return total_loss / seen, correct / seen


_max_batches = None     # --max-batches


def _limited(batches):
    if _max_batches is None:
        return batches
    import itertools
    return itertools.islice(batches, _max_batches)


def _rank_and_world():
    import reftorch.distributed as dist
    return (dist.get_rank(), dist.get_world_size()) if dist.is_initialized() else (0, 1)


def evaluate(model, loader, device, amp=NO_AMP):
    """Accuracy of `model` on `loader` (in eval mode, without recording gradients)."""
    model.eval()
    correct, seen = 0, 0
    with torch.no_grad(), amp.autocast():
        for images, labels in _limited(loader):
            images, labels = images.to(device), labels.to(device)
            correct += (model(images).argmax(dim=1) == labels).sum().item()
            seen += labels.size(0)
    return correct / seen


def train_model(key, epochs, train_set, test_set, args, device):
    name, make = MODELS[key]
    torch.manual_seed(args.seed)        # each model's run is reproducible on its own (see --models)
    train_loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True,
                              generator=torch.Generator().manual_seed(args.seed))
    test_loader = DataLoader(test_set, batch_size=256 if args.max_batches is None else args.batch_size)
    model = make().to(device)
    net = model
    if args.distributed:    # rank 0's initial weights everywhere; gradients averaged over the processes
        net = nn.parallel.DistributedDataParallel(model)
    n_params = sum(p.numel() for p in model.parameters())
    lr = args.lr or LEARNING_RATES[key]
    amp = _Amp(args.amp, device)
    precision = {None: "", "bf16": ", autocast(bfloat16)", "fp16": ", autocast(float16) + GradScaler"}[args.amp]
    print(f"\n{name}: {n_params:,} parameters, {epochs} epochs, Adam(lr={lr}) with cosine annealing{precision}",
          flush=True)
    loss_fn = nn.CrossEntropyLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=epochs)
    history = {"train_loss": [], "train_acc": [], "test_acc": []}
    start = time.perf_counter()
    for epoch in range(1, epochs + 1):
        bar = _progress(train_loader, f"{name} epoch {epoch:>2}/{epochs}", not args.no_progress)
        loss, acc = train_one_epoch(net, bar, loss_fn, optimizer, device, amp)
        test_acc = evaluate(model, test_loader, device, amp)
        bar.set_postfix(loss=f"{loss:.4f}", acc=f"{acc:.1%}", test_acc=f"{test_acc:.1%}")
        bar.close()
        scheduler.step()
        history["train_loss"].append(loss)
        history["train_acc"].append(acc)
        history["test_acc"].append(test_acc)
    elapsed = time.perf_counter() - start
    test_acc = history["test_acc"][-1]
    target = TARGETS[name]
    verdict = "meets" if test_acc >= target else "BELOW"
    print(f"{name} test accuracy: {test_acc:.2%} ({verdict} the {target:.0%} target; trained in {elapsed:.1f} s)",
          flush=True)

    # checkpoint: model and optimizer state in one file of torch's format, then a fresh model from it
    rank = _rank_and_world()[0]
    path = os.path.join(args.checkpoint_dir, f"digits_{key}{f'-rank{rank}' if rank else ''}.pt")
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epochs,
                "test_accuracy": test_acc}, path)
    checkpoint = torch.load(path)
    fresh = make().to(device)
    fresh.load_state_dict(checkpoint["model"])
    reloaded_acc = evaluate(fresh, test_loader, device, amp)
    same = "same as before saving" if reloaded_acc == test_acc else "DIFFERS from before saving"
    print(f"{name} reloaded from {path}: test accuracy {reloaded_acc:.2%} ({same})", flush=True)
    return history, test_acc, reloaded_acc


# ------------------------------------------------------------------------------------------ plot

def _check_matplotlib():
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot  # noqa: F401
    except ImportError:
        sys.exit("error: --plot needs matplotlib, which is not installed: pip install 'reftorch[plot]' "
                 "(or pip install matplotlib)")


def plot_curves(histories, path):
    import matplotlib.pyplot as plt
    fig, (ax_loss, ax_acc) = plt.subplots(1, 2, figsize=(10, 4))
    for name, h in histories.items():
        epochs = range(1, len(h["train_loss"]) + 1)
        (line,) = ax_loss.plot(epochs, h["train_loss"], marker="o", label=f"{name} train")
        ax_acc.plot(epochs, h["train_acc"], marker="o", color=line.get_color(), label=f"{name} train")
        ax_acc.plot(epochs, h["test_acc"], marker="s", linestyle="--", color=line.get_color(), label=f"{name} test")
    ax_loss.set(title="cross-entropy loss", xlabel="epoch", ylabel="loss", yscale="log")
    ax_acc.set(title="accuracy", xlabel="epoch", ylabel="accuracy")
    for ax in (ax_loss, ax_acc):
        ax.grid(alpha=0.3)
        ax.legend()
    fig.suptitle("reftorch demo: scikit-learn digits")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


# ------------------------------------------------------------------------------------------ main

def main(argv=None):
    args = parse_args(argv)
    global _max_batches
    _max_batches = args.max_batches
    if args.plot:
        _check_matplotlib()
    try:
        device = torch.device(args.device)
        probe = torch.zeros(1, device=device)       # raises when the device is not available
        if probe.device.type != device.type:
            raise RuntimeError(f"a tensor created on {device} ended up on {probe.device}")
    except (RuntimeError, AssertionError) as err:     # (torch without CUDA: an AssertionError)
        print(f"error: --device {args.device}: {err}", file=sys.stderr)
        return 2
    if args.distributed:
        import reftorch.distributed as dist
        dist.init_process_group("mpi")
        if dist.get_rank() != 0:            # rank 0 reports for all
            sys.stdout = open(os.devnull, "w")
            args.no_progress = _PlainProgress.silent = True
    if args.checkpoint_dir is None:
        args.checkpoint_dir = tempfile.mkdtemp(prefix="reftorch-demo-")
    os.makedirs(args.checkpoint_dir, exist_ok=True)

    start = time.perf_counter()
    train_set, test_set = load_digits_dataset(args.seed)
    print(f"reftorch {torch.__version__} demo: scikit-learn digits, {len(train_set)} training and "
          f"{len(test_set)} test images of 8x8 pixels, 10 classes, device {device}"
          f"{f', {_rank_and_world()[1]} processes' if args.distributed else ''}", flush=True)

    default_epochs = {"mlp": 6 if args.quick else 12, "cnn": 4 if args.quick else 8}
    histories, ok = {}, True
    for key in args.models:
        epochs = args.epochs or default_epochs[key]
        history, acc, reloaded = train_model(key, epochs, train_set, test_set, args, device)
        histories[MODELS[key][0]] = history
        ok = ok and reloaded == acc and (acc >= TARGETS[MODELS[key][0]] or args.epochs is not None)

    if args.plot:
        plot_curves(histories, args.plot)
        print(f"\nloss and accuracy curves written to {args.plot}")
    print(f"\ntotal wall time {time.perf_counter() - start:.1f} s", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
