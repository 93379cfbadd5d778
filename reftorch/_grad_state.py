"""The thread's grad mode, kept below the tensor layer: autograd/grad_mode.py sets it, and a Storage allocated
inside inference_mode reads it to become an inference tensor's (PyTorch: a tensor allocated in inference mode is
an inference tensor, and so is every view of it)."""
from __future__ import annotations

import threading


class _State(threading.local):
    enabled = True          # record ops for autograd
    inference = False       # inside inference_mode


state = _State()
