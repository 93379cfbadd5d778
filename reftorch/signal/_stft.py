"""torch.stft / torch.istft over the public API: frames by unfold, the window, torch.fft, and overlap-add by
nn.functional.fold (with the squared window's envelope dividing it out), as PyTorch's implementation."""
from __future__ import annotations

import warnings

import reftorch._functional as _F
import reftorch.fft as _fft
from ..nn import functional as _nnf

_RETURN_COMPLEX = ("stft requires the return_complex parameter be given for real inputs, and will further "
                   "require that return_complex=True in a future PyTorch release.")


_NO_WINDOW = ("A window was not provided. A rectangular window will be applied,which is known to cause spectral "
              "leakage. Other windows such as torch.hann_window or torch.hamming_window are recommended to reduce "
              "spectral leakage.To suppress this warning and use a rectangular window, explicitly set "
              "`window=torch.ones(n_fft, device=<device>)`.")
_warned = []


def _full_window(window, n_fft, win_length, like, warn=False):
    """The window (ones of win_length when None) zero-padded to n_fft, centred."""
    if window is None and warn and not _warned:     # PyTorch warns once per process
        _warned.append(True)
        warnings.warn(_NO_WINDOW, UserWarning, stacklevel=3)
    if window is None:
        window = _F.ones(win_length, dtype=like.dtype.to_real(), device=like.device)
    left = (n_fft - win_length) // 2
    if left or win_length < n_fft:
        window = _nnf.pad(window, (left, n_fft - win_length - left))
    return window


def stft(input, n_fft, hop_length=None, win_length=None, window=None, center=True, pad_mode="reflect",
         normalized=False, onesided=None, return_complex=None):
    """torch.stft: the DFT of windowed frames, (batch?, n_fft // 2 + 1 or n_fft, frames)."""
    complex_in = input.dtype.is_complex or (window is not None and window.dtype.is_complex)
    if return_complex is None and not complex_in:
        raise RuntimeError(_RETURN_COMPLEX)
    hop = n_fft // 4 if hop_length is None else hop_length
    win = n_fft if win_length is None else win_length
    x = input
    if center:      # as torch.stft's Python side: padded as a 3-D view (its errors name that shape), then back
        pad = n_fft // 2
        x = _nnf.pad(x.reshape([1] * (3 - x.ndim) + list(x.shape)), (pad, pad), mode=pad_mode)
        x = x.reshape(x.shape[-input.ndim:] if input.ndim else x.shape)
    # the checks of PyTorch's kernel, in its order, each message after its description of the call
    where = _stft_repr(x, n_fft, hop, win, window, normalized, onesided, return_complex)
    if x.ndim not in (1, 2):
        raise RuntimeError(where + ": expected a 1D or 2D tensor")
    x = x.unsqueeze(0) if x.ndim == 1 else x
    length = x.shape[-1]
    if not 0 < n_fft <= length:     # (PyTorch's message says < and prints win_length as n_fft)
        raise RuntimeError(where + f": expected 0 < n_fft < {length}, but got n_fft={win}")
    if hop <= 0:
        raise RuntimeError(where + f": expected hop_length > 0, but got hop_length={hop}")
    if not 0 < win <= n_fft:
        raise RuntimeError(where + f": expected 0 < win_length <= n_fft, but got win_length={win}")
    if window is not None and (window.ndim != 1 or window.shape[0] != win):
        raise RuntimeError(where + f": expected a 1D window tensor of size equal to win_length={win}, but got "
                           f"window with size {list(window.shape)}")
    if complex_in and onesided:
        raise RuntimeError("Cannot have onesided output if window or input is complex")
    frames = x.unfold(-1, n_fft, hop) * _full_window(window, n_fft, win, x, warn=True)
    norm = "ortho" if normalized else "backward"
    one = (not complex_in) if onesided is None else onesided
    spec = (_fft.rfft if one else _fft.fft)(frames, norm=norm).transpose(-1, -2)
    if input.ndim == 1:
        spec = spec.squeeze(0)
    return spec if return_complex or return_complex is None else _F.view_as_real(spec)


def _overlap_add(frames, n_fft, hop):
    """(B, frames, n_fft) real frames summed at offsets hop * i: (B, n_fft + hop (frames - 1))."""
    n = frames.shape[1]
    total = n_fft + hop * (n - 1)
    out = _nnf.fold(frames.transpose(1, 2), output_size=(1, total), kernel_size=(1, n_fft), stride=(1, hop))
    return out.reshape(frames.shape[0], total)


def _type_string(t):
    """A tensor's type as PyTorch's toString prints it: torch.FloatTensor, CPUComplexFloatType and CPUBFloat16Type
    (dtypes with no legacy tensor type)."""
    if t.dtype.is_complex or t.dtype.short == "BFloat16":
        return f"{t.device.type.upper() if t.device.type == 'cpu' else t.device.type}{t.dtype.short}Type"
    return f"torch.{'cuda.' if t.device.type == 'cuda' else ''}{t.dtype.short}Tensor"


def _window_string(window):
    return f"{_type_string(window)}{{{list(window.shape)}}}" if window is not None else "None"


def _opt(v):
    return "None" if v is None else str(int(v))


def _stft_repr(input, n_fft, hop, win, window, normalized, onesided, return_complex):
    """The call as PyTorch's stft names it in its errors (its REPR macro; reftorch has no align_to_window)."""
    return (f"stft({_type_string(input)}{list(input.shape)}, n_fft={n_fft}, hop_length={hop}, win_length={win}, "
            f"window={_window_string(window)}, normalized={int(bool(normalized))}, onesided={_opt(onesided)}, "
            f"return_complex={_opt(return_complex)}, align_to_window=None) ")


def _istft_repr(input, n_fft, hop, win, window, center, normalized, onesided, length, return_complex):
    """The call as PyTorch's istft names it in its errors (its REPR macro)."""
    return (f"istft({_type_string(input)}{list(input.shape)}, n_fft={n_fft}, hop_length={hop}, win_length={win}, "
            f"window={_window_string(window)}, center={int(bool(center))}, normalized={int(bool(normalized))}, "
            f"onesided={_opt(onesided)}, length={_opt(length)}, return_complex={int(bool(return_complex))}) ")


def istft(input, n_fft, hop_length=None, win_length=None, window=None, center=True, normalized=False,
          onesided=None, length=None, return_complex=False):
    """torch.istft: the inverse of stft by overlap-add, divided by the squared window's envelope."""
    hop = n_fft // 4 if hop_length is None else hop_length
    win = n_fft if win_length is None else win_length
    if not input.dtype.is_complex:
        raise RuntimeError("istft requires a complex-valued input tensor matching the output from stft with "
                           "return_complex=True.")
    where = _istft_repr(input, n_fft, hop, win, window, center, normalized, onesided, length, return_complex)
    if input.numel() == 0:
        raise RuntimeError(where + ": input tensor cannot be empty.")
    if input.ndim not in (2, 3):
        if input.ndim < 2:      # (PyTorch reads size(-3) of the real view first)
            raise IndexError(f"Dimension out of range (expected to be in range of [{-input.ndim - 1}, "
                             f"{input.ndim}], but got -3)")
        raise RuntimeError(where + f": expected a tensor with 3 or 4 dimensions, but got {input.ndim + 1}")
    fft_size = input.shape[-2]
    one = (fft_size != n_fft) if onesided is None else onesided
    if one and n_fft // 2 + 1 != fft_size:
        raise RuntimeError(where + ": expected the frequency dimension (3rd to the last) of the input tensor to "
                           f"match n_fft / 2 + 1 when onesided=True, but got {fft_size}")
    if not one and n_fft != fft_size:
        raise RuntimeError(where + ": expected the frequency dimension (3rd to the last) of the input tensor to "
                           f"match n_fft when onesided=False, but got {fft_size}")
    if not 0 < hop <= win:
        raise RuntimeError(where + ": expected 0 < hop_length <= win_length")
    if not 0 < win <= n_fft:
        raise RuntimeError(where + ": expected 0 < win_length <= n_fft")
    if window is not None and (window.ndim != 1 or window.shape[0] != win):
        raise RuntimeError(where + ": Invalid window shape. window has to be 1D and length of `win_length`")
    if return_complex and one:
        raise RuntimeError("Cannot have onesided output if window or input is complex")
    if not return_complex and window is not None and window.dtype.is_complex:
        raise RuntimeError("Complex windows are incompatible with return_complex=False")
    spec = input.unsqueeze(0) if input.ndim == 2 else input
    norm = "ortho" if normalized else "backward"
    cols = spec.transpose(-1, -2)
    if return_complex:
        frames = _fft.ifft(cols, n=n_fft, norm=norm)
    else:
        # torch's: a two-sided input keeps its first n_fft // 2 + 1 bins and goes through irfft too (the
        # spectrum taken as Hermitian), not the real part of the full ifft
        frames = _fft.irfft(cols if one else cols[..., :n_fft // 2 + 1], n=n_fft, norm=norm)
    w = _full_window(window, n_fft, win, frames if not frames.dtype.is_complex else frames.real)
    frames = frames * w
    if frames.dtype.is_complex:
        y = _F.complex(_overlap_add(frames.real, n_fft, hop), _overlap_add(frames.imag, n_fft, hop))
    else:
        y = _overlap_add(frames, n_fft, hop)
    env = _overlap_add((w * w).expand(frames.shape[1], n_fft).unsqueeze(0), n_fft, hop)[0]
    start = n_fft // 2 if center else 0
    end = y.shape[-1] - (n_fft // 2 if center else 0) if length is None else start + length
    end = min(end, y.shape[-1])
    env = env[start:end]
    if bool((env.abs() < 1e-11).any()):
        raise RuntimeError(where + "window overlap add min: 1\n[ CPUBoolType{} ]")
    y = y[:, start:end] / env
    if length is not None and y.shape[-1] < length:
        y = _nnf.pad(y, (0, length - y.shape[-1]))
    return y.squeeze(0) if input.ndim == 2 else y
