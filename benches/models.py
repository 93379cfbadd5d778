"""Small real models, reftorch against PyTorch eager, in one run: train steps, generation, peak RSS.

    PYTHONPATH=$PWD python benches/models.py [--models gpt,lstm] [--rounds 3] [--seconds 0.3] [--threads 1]

Each model is written once below against a torch-like module `T` (torch or reftorch), from its architecture:
a GPT-2-style char transformer (pre-norm blocks, F.scaled_dot_product_attention, GELU MLP; 2 layers, 2 heads,
64 wide, block 32, batch 8) with dropout 0.2 and 0, generating 100 tokens, and under autocast bf16 / fp16;
char-level language models (bigram, MLP over 3 characters, hand-written RNN and GRU cells, causal bag of
words, a transformer with hand-written attention); word-level nn.LSTM / nn.GRU / nn.RNN language models; an
nn.LSTMCell loop in float64; a REINFORCE step of a tiny policy network.

Same weights and batches on both libraries: each worker builds the model, then overwrites every entry of its
state dict with NumPy arrays drawn from one seeded generator in key order (the keys and shapes agree, so do the
weights), and draws its batches from one seeded generator too; the first step's loss of both is printed so a
mismatch shows. A train step is forward, loss, zero_grad, backward, clip_grad_norm_, AdamW step.

Timing and memory: each library runs in a worker process of its own per model (a fresh process, so its peak
RSS - getrusage's ru_maxrss - is that model's peak with the library imported; the "model" RSS column is the
peak minus the RSS right after import). The two workers take turns (--rounds): the main process asks one for
a round, waits, then the other, so they never run at once; a round is the median step time of as many steps
as fill --seconds (counted in the first round), and each library keeps its best round. Both libraries run
--threads threads (default 1: small models on a shared machine; the ratios compare libraries, not pools).
"""
from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VOCAB_CHAR, VOCAB_WORD = 65, 1000


# ------------------------------------------------------------------------------------ the models

def gpt_model(T, dropout):
    nn, F = T.nn, T.nn.functional
    n_embd, n_head, n_layer, block = 64, 2, 2, 32

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.qkv = nn.Linear(n_embd, 3 * n_embd)
            self.proj = nn.Linear(n_embd, n_embd)
            self.drop = nn.Dropout(dropout)

        def forward(self, x):
            B, L, C = x.shape
            q, k, v = self.qkv(x).split(n_embd, dim=2)
            q, k, v = (t.view(B, L, n_head, C // n_head).transpose(1, 2) for t in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, dropout_p=dropout if self.training else 0.0,
                                               is_causal=True)
            return self.drop(self.proj(y.transpose(1, 2).contiguous().view(B, L, C)))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.attn, self.ln2 = nn.LayerNorm(n_embd), Attention(), nn.LayerNorm(n_embd)
            self.mlp = nn.Sequential(nn.Linear(n_embd, 4 * n_embd), nn.GELU(), nn.Linear(4 * n_embd, n_embd),
                                     nn.Dropout(dropout))

        def forward(self, x):
            x = x + self.attn(self.ln1(x))
            return x + self.mlp(self.ln2(x))

    class GPT(nn.Module):
        block_size = block

        def __init__(self):
            super().__init__()
            self.tok, self.pos = nn.Embedding(VOCAB_CHAR, n_embd), nn.Embedding(block, n_embd)
            self.drop = nn.Dropout(dropout)
            self.blocks = nn.Sequential(*[Block() for _ in range(n_layer)])
            self.ln_f, self.head = nn.LayerNorm(n_embd), nn.Linear(n_embd, VOCAB_CHAR, bias=False)

        def forward(self, idx, targets=None):
            x = self.drop(self.tok(idx) + self.pos(T.arange(idx.shape[1])))
            logits = self.head(self.ln_f(self.blocks(x)))
            if targets is None:
                return logits
            return F.cross_entropy(logits.view(-1, VOCAB_CHAR), targets.view(-1))

    return GPT(), (8, block, VOCAB_CHAR)


def char_models(T, kind):
    """makemore-style character models over a context of `block` characters, predicting every next one."""
    nn, F = T.nn, T.nn.functional
    V, E, H, block = 27, 24, 64, 16

    class Bigram(nn.Module):
        def __init__(self):
            super().__init__()
            self.table = nn.Embedding(V, V)

        def forward(self, idx, targets):
            return F.cross_entropy(self.table(idx).view(-1, V), targets.view(-1))

    class MLP(nn.Module):       # Bengio et al.: the 3 previous characters' embeddings through one tanh layer
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(V + 1, E)
            self.net = nn.Sequential(nn.Linear(3 * E, H), nn.Tanh(), nn.Linear(H, V))

        def forward(self, idx, targets):
            B, L = idx.shape
            pad = T.full((B, 3), V, dtype=T.long)
            ctx = T.cat([pad, idx], 1)
            x = T.stack([ctx[:, i:i + L] for i in range(3)], 2)         # (B, L, 3) previous characters
            return F.cross_entropy(self.net(self.emb(x).view(B, L, 3 * E)).view(-1, V), targets.view(-1))

    class Recurrent(nn.Module):     # hand-written cells, one time step at a time
        def __init__(self, gru):
            super().__init__()
            self.gru = gru
            self.emb = nn.Embedding(V, E)
            self.h0 = nn.Parameter(T.zeros(1, H))
            if gru:
                self.xzr, self.xh = nn.Linear(E + H, 2 * H), nn.Linear(E + H, H)
            else:
                self.cell = nn.Linear(E + H, H)
            self.out = nn.Linear(H, V)

        def step(self, x, h):
            xh = T.cat([x, h], 1)
            if not self.gru:
                return T.tanh(self.cell(xh))
            z, r = T.sigmoid(self.xzr(xh)).chunk(2, 1)
            hbar = T.tanh(self.xh(T.cat([x, r * h], 1)))
            return (1 - z) * h + z * hbar

        def forward(self, idx, targets):
            B, L = idx.shape
            e, h, hs = self.emb(idx), self.h0.expand(B, -1), []
            for i in range(L):
                h = self.step(e[:, i], h)
                hs.append(h)
            return F.cross_entropy(self.out(T.stack(hs, 1)).view(-1, V), targets.view(-1))

    class BoW(nn.Module):       # each position: the average of the embeddings up to it, then an MLP
        def __init__(self):
            super().__init__()
            self.emb, self.pos = nn.Embedding(V, E), nn.Embedding(block, E)
            self.net = nn.Sequential(nn.Linear(E, H), nn.ReLU(), nn.Linear(H, E))
            self.head = nn.Linear(E, V)

        def forward(self, idx, targets):
            B, L = idx.shape
            x = self.emb(idx) + self.pos(T.arange(L))
            w = T.tril(T.ones(L, L))
            w = w.masked_fill(w == 0, float("-inf")).softmax(-1)
            x = x + self.net(w @ x)
            return F.cross_entropy(self.head(x).view(-1, V), targets.view(-1))

    class Transformer(nn.Module):       # one block, attention written out (no SDPA)
        def __init__(self):
            super().__init__()
            self.emb, self.pos = nn.Embedding(V, E * 2), nn.Embedding(block, E * 2)
            C = E * 2
            self.ln1, self.ln2, self.lnf = nn.LayerNorm(C), nn.LayerNorm(C), nn.LayerNorm(C)
            self.qkv, self.proj = nn.Linear(C, 3 * C), nn.Linear(C, C)
            self.mlp = nn.Sequential(nn.Linear(C, 4 * C), nn.ReLU(), nn.Linear(4 * C, C))
            self.head = nn.Linear(C, V)
            self.register_buffer("mask", T.tril(T.ones(block, block)).view(1, 1, block, block))

        def forward(self, idx, targets):
            B, L = idx.shape
            C, nh = E * 2, 4
            x = self.emb(idx) + self.pos(T.arange(L))
            q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
            q, k, v = (t.view(B, L, nh, C // nh).transpose(1, 2) for t in (q, k, v))
            att = (q @ k.transpose(-2, -1)) * (1.0 / (C // nh) ** 0.5)
            att = F.softmax(att.masked_fill(self.mask[:, :, :L, :L] == 0, float("-inf")), dim=-1)
            x = x + self.proj((att @ v).transpose(1, 2).contiguous().view(B, L, C))
            x = x + self.mlp(self.ln2(x))
            return F.cross_entropy(self.head(self.lnf(x)).view(-1, V), targets.view(-1))

    model = {"bigram": Bigram, "mlp": MLP, "rnn": lambda: Recurrent(False), "gru": lambda: Recurrent(True),
             "bow": BoW, "transformer": Transformer}[kind]()
    return model, (32, block, V)


def word_model(T, rnn_type):
    """A word-level language model: embedding, dropout, a 2-layer nn.LSTM / nn.GRU / nn.RNN, linear decoder;
    35 steps of a batch of 20 per step, the hidden state carried (detached) from step to step."""
    nn, F = T.nn, T.nn.functional
    ninp = nhid = 64

    class WordLM(nn.Module):
        def __init__(self):
            super().__init__()
            self.drop = nn.Dropout(0.2)
            self.enc = nn.Embedding(VOCAB_WORD, ninp)
            if rnn_type == "LSTM":
                self.rnn = nn.LSTM(ninp, nhid, 2, dropout=0.2)
            elif rnn_type == "GRU":
                self.rnn = nn.GRU(ninp, nhid, 2, dropout=0.2)
            else:
                self.rnn = nn.RNN(ninp, nhid, 2, nonlinearity="tanh", dropout=0.2)
            self.dec = nn.Linear(nhid, VOCAB_WORD)
            self.hidden = None

        def forward(self, src, targets):        # src: (seq, batch)
            h = self.hidden
            out, h = self.rnn(self.drop(self.enc(src)), h)
            self.hidden = tuple(t.detach() for t in h) if isinstance(h, tuple) else h.detach()
            logits = self.dec(self.drop(out))
            return F.cross_entropy(logits.view(-1, VOCAB_WORD), targets.reshape(-1))

    return WordLM(), (20, 35, VOCAB_WORD)


def lstmcell_model(T):
    nn, F = T.nn, T.nn.functional

    class CellLoop(nn.Module):
        def __init__(self):
            super().__init__()
            self.cell, self.out = nn.LSTMCell(16, 64), nn.Linear(64, 1)

        def forward(self, x, y):         # x: (batch, steps, 16) float64
            h = c = T.zeros(x.shape[0], 64, dtype=T.float64)
            for i in range(x.shape[1]):
                h, c = self.cell(x[:, i], (h, c))
            return F.mse_loss(self.out(h).squeeze(1), y)

    return CellLoop().double()


def policy_model(T):
    nn, F = T.nn, T.nn.functional

    class Policy(nn.Module):
        def __init__(self):
            super().__init__()
            self.l1, self.drop, self.l2 = nn.Linear(4, 128), nn.Dropout(0.6), nn.Linear(128, 2)

        def forward(self, x):
            return F.softmax(self.l2(F.relu(self.drop(self.l1(x)))), dim=1)

    return Policy()


# ------------------------------------------------------------------------------------ steps

def init_weights(T, model, seed=0):
    """Every state dict entry from one seeded NumPy generator in key order: the same weights on both libraries."""
    rng = np.random.default_rng(seed)
    state = {}
    for key, v in sorted(model.state_dict().items()):
        shape, dt = tuple(v.shape), str(v.dtype).split(".")[-1]
        if key.endswith("mask"):
            a = v.numpy()
        elif len(shape) == 1 and ("ln" in key or "norm" in key):
            a = np.ones(shape) if key.endswith("weight") else np.zeros(shape)
        else:
            a = rng.standard_normal(shape) / np.sqrt(shape[-1] if len(shape) > 1 else 64)
        state[key] = T.from_numpy(np.ascontiguousarray(a, dtype=dt))
    model.load_state_dict(state)


def train_step(T, model, batch_fn, autocast=None):
    opt = T.optim.AdamW(model.parameters(), lr=1e-3)

    def step():
        x, y = batch_fn()
        if autocast is None:
            loss = model(x, y)
        else:
            with T.autocast("cpu", dtype=getattr(T, autocast)):
                loss = model(x, y)
        opt.zero_grad()
        loss.backward()
        T.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return loss.item()
    return step


def token_batches(T, B, L, V, n=4, seed=1, time_major=False):
    rng = np.random.default_rng(seed)
    data = [rng.integers(0, V, (B, L + 1)) for _ in range(n)]
    if time_major:
        data = [d.T for d in data]
        pairs = [(T.from_numpy(np.ascontiguousarray(d[:-1])), T.from_numpy(np.ascontiguousarray(d[1:])))
                 for d in data]
    else:
        pairs = [(T.from_numpy(np.ascontiguousarray(d[:, :-1])), T.from_numpy(np.ascontiguousarray(d[:, 1:])))
                 for d in data]
    it = iter(range(1 << 62))
    return lambda: pairs[next(it) % n]


def gpt_generate(T, model):
    model.eval()
    start = T.zeros((1, 1), dtype=T.long)

    def generate():
        idx = start
        with T.no_grad():
            for _ in range(100):
                logits = model(idx[:, -model.block_size:])[:, -1, :]
                nxt = T.multinomial(T.nn.functional.softmax(logits, dim=-1), num_samples=1)
                idx = T.cat((idx, nxt), dim=1)
        return float(idx.shape[1])
    return generate


def policy_step(T, model):
    """REINFORCE over a 20-step episode of made-up observations and rewards (no environment in the loop)."""
    rng = np.random.default_rng(2)
    obs = [T.from_numpy(rng.standard_normal((1, 4)).astype(np.float32)) for _ in range(20)]
    rewards = rng.random(20)
    returns, R = [], 0.0
    for r in rewards[::-1]:
        R = r + 0.99 * R
        returns.insert(0, R)
    returns = np.asarray(returns, dtype=np.float32)
    ret = T.from_numpy((returns - returns.mean()) / (returns.std() + 1e-8))
    opt = T.optim.Adam(model.parameters(), lr=1e-2)

    def step():
        logps = []
        for o in obs:
            m = T.distributions.Categorical(model(o))
            a = m.sample()
            logps.append(m.log_prob(a))
        loss = (-T.cat(logps) * ret).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss.item()
    return step


def lstmcell_step(T, model):
    rng = np.random.default_rng(3)
    x = T.from_numpy(rng.standard_normal((16, 20, 16)))
    y = T.from_numpy(rng.standard_normal(16))
    return train_step(T, model, lambda: (x, y))


MODELS = {
    "gpt": "GPT char transformer, dropout 0.2",
    "gpt_nodrop": "GPT char transformer, dropout 0",
    "gpt_generate": "GPT generating 100 tokens",
    "gpt_bf16": "GPT step, autocast bfloat16",
    "gpt_fp16": "GPT step, autocast float16",
    "bigram": "char bigram", "mlp": "char MLP", "rnn": "char RNN", "gru": "char GRU", "bow": "char bag of words",
    "transformer": "char transformer",
    "lstm": "word LSTM LM", "gru_word": "word GRU LM", "rnn_tanh": "word RNN_TANH LM",
    "lstmcell": "LSTMCell loop, float64",
    "policy": "policy network step (RL)",
}


def build(T, name):
    """(the step function) for model `name` on library T, weights and batches set."""
    T.manual_seed(0)
    if name.startswith("gpt"):
        model, (B, L, V) = gpt_model(T, 0.2 if name == "gpt" else 0.0)
        init_weights(T, model)
        if name == "gpt_generate":
            return gpt_generate(T, model)
        return train_step(T, model, token_batches(T, B, L, V),
                          autocast={"gpt_bf16": "bfloat16", "gpt_fp16": "float16"}.get(name))
    if name in ("bigram", "mlp", "rnn", "gru", "bow", "transformer"):
        model, (B, L, V) = char_models(T, name)
        init_weights(T, model)
        return train_step(T, model, token_batches(T, B, L, V))
    if name in ("lstm", "gru_word", "rnn_tanh"):
        model, (B, L, V) = word_model(T, {"lstm": "LSTM", "gru_word": "GRU", "rnn_tanh": "RNN_TANH"}[name])
        init_weights(T, model)
        return train_step(T, model, token_batches(T, B, L, V, time_major=True))
    if name == "lstmcell":
        model = lstmcell_model(T)
        init_weights(T, model)
        return lstmcell_step(T, model)
    model = policy_model(T)
    init_weights(T, model)
    return policy_step(T, model)


# ------------------------------------------------------------------------------------ worker and driver

def rss_kib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def worker(lib, name, threads, profile):
    """Serve rounds over stdin/stdout: 'ready <first loss> <RSS after import>', then one time per 'run N'
    (N steps; N=0: as many as fill the given seconds, the count is printed), 'quit' -> peak RSS."""
    if lib == "torch":
        import torch as T
    else:
        import reftorch as T
    T.set_num_threads(threads)
    base = rss_kib()
    step = build(T, name)
    first = step()
    step()                              # warm: kernels compiled, caches filled
    print("ready", first, base, flush=True)
    for line in sys.stdin:
        cmd = line.split()
        if cmd[0] == "quit":
            break
        if cmd[0] == "profile":
            import cProfile
            import pstats
            pr = cProfile.Profile()
            pr.enable()
            for _ in range(int(cmd[1])):
                step()
            pr.disable()
            pstats.Stats(pr, stream=sys.stderr).sort_stats("tottime").print_stats(35)
            print("done", flush=True)
            continue
        n, seconds = int(cmd[1]), float(cmd[2])
        times = []
        t_end = time.perf_counter() + seconds
        while (len(times) < n) if n else (time.perf_counter() < t_end or len(times) < 3):
            t = time.perf_counter()
            step()
            times.append(time.perf_counter() - t)
        print(statistics.median(times), len(times), flush=True)
    print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, flush=True)


class Worker:
    def __init__(self, lib, name, threads):
        env = dict(os.environ, OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads),
                   MKL_NUM_THREADS=str(threads), NUMBA_NUM_THREADS=str(threads))
        env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
        self.p = subprocess.Popen([sys.executable, __file__, "--worker", lib, "--models", name,
                                   "--threads", str(threads)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  text=True, env=env)

    def ask(self, line):
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()
        return self.p.stdout.readline().split()

    def ready(self):
        out = self.p.stdout.readline().split()
        if not out or out[0] != "ready":
            raise RuntimeError(f"worker failed: {out}")
        return float(out[1]), int(out[2])

    def quit(self):
        self.p.stdin.write("quit\n")
        self.p.stdin.flush()
        peak = int(self.p.stdout.readline())
        self.p.wait()
        return peak


def run_model(name, args):
    ws = {lib: Worker(lib, name, args.threads) for lib in ("reftorch", "torch")}
    info = {lib: w.ready() for lib, w in ws.items()}
    counts, best = {}, {lib: float("inf") for lib in ws}
    for r in range(args.rounds):
        for lib, w in ws.items():
            t, n = w.ask(f"run {counts.get(lib, 0)} {args.seconds}")
            counts.setdefault(lib, int(n))
            best[lib] = min(best[lib], float(t))
    if args.profile:
        ws["reftorch"].ask(f"profile {max(counts['reftorch'], 3)}")
    peak = {lib: w.quit() for lib, w in ws.items()}
    return {"name": name, "ms": {lib: best[lib] * 1e3 for lib in ws}, "ratio": best["reftorch"] / best["torch"],
            "loss": {lib: info[lib][0] for lib in ws}, "peak_mib": {lib: peak[lib] / 1024 for lib in ws},
            "model_mib": {lib: (peak[lib] - info[lib][1]) / 1024 for lib in ws}}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--models", default=",".join(MODELS), help="comma-separated names, or prefixes of them")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--seconds", type=float, default=0.3, help="time per round per library")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--profile", action="store_true", help="cProfile reftorch's steps after the rounds (stderr)")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        return worker(args.worker, args.models, args.threads, args.profile)
    wanted = [m for m in MODELS if any(m == w or m.startswith(w) for w in args.models.split(","))]
    print(f"{'model':36s} {'reftorch ms':>11s} {'torch ms':>9s} {'ratio':>6s}  {'peak RSS MiB r/t':>17s}"
          f"  {'model RSS r/t':>14s}  first loss r / t")
    rows = []
    for name in wanted:
        row = run_model(name, args)
        rows.append(row)
        ms, pk, md, ls = row["ms"], row["peak_mib"], row["model_mib"], row["loss"]
        print(f"{MODELS[name]:36s} {ms['reftorch']:11.2f} {ms['torch']:9.2f} {row['ratio']:6.2f}  "
              f"{pk['reftorch']:7.0f} / {pk['torch']:6.0f}  {md['reftorch']:6.0f} / {md['torch']:5.0f}  "
              f"{ls['reftorch']:.5g} / {ls['torch']:.5g}", flush=True)
    f32 = next((r for r in rows if r["name"] == "gpt_nodrop"), None)
    for r in rows:
        if f32 and r["name"] in ("gpt_bf16", "gpt_fp16"):
            print(f"{r['name']}: reftorch's own float32 step x{r['ms']['reftorch'] / f32['ms']['reftorch']:.2f}"
                  f" (torch x{r['ms']['torch'] / f32['ms']['torch']:.2f})")


if __name__ == "__main__":
    main()
