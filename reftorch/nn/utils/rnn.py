"""Sequence padding helpers (pad_sequence); packed sequences are not supported."""
from __future__ import annotations

import reftorch as torch

__all__ = ["pad_sequence"]


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Stacks variable-length sequences (L_i, *) into (max L, B, *) (or (B, max L, *)) padded with padding_value."""
    sequences = list(sequences)
    longest = max(s.shape[0] for s in sequences)
    padded = []
    for s in sequences:
        extra = longest - s.shape[0]
        if extra:
            fill = torch.full((extra,) + tuple(s.shape[1:]), padding_value, dtype=s.dtype, device=s.device)
            s = torch.cat([s, fill] if padding_side == "right" else [fill, s], 0)
        padded.append(s)
    out = torch.stack(padded, 0)
    return out if batch_first else out.transpose(0, 1)
