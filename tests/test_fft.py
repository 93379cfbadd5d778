"""torch.fft against NumPy's pocketfft (values, dtypes, errors) and finite differences (gradients).

Complex inputs of the gradchecks enter as float64 pairs through view_as_complex and leave through
view_as_real, so the checks exercise the conjugate-Wirtinger formulas of every complex op on the way."""
import numpy as np
import pytest

import reftorch as torch
from reftorch.autograd import gradcheck

RNG = np.random.default_rng(7)
X = RNG.standard_normal((3, 6))
Z = RNG.standard_normal((3, 5)) + 1j * RNG.standard_normal((3, 5))
NORMS = (None, "backward", "forward", "ortho")


def _np_hfftn(z, s, axes, norm):
    """hfftn by its definition: the real inverse transform of the conjugate, scaled as a forward one."""
    inv = {None: "forward", "backward": "forward", "forward": "backward", "ortho": "ortho"}[norm]
    return np.fft.irfftn(np.conj(z), s, axes, norm=inv)


@pytest.mark.parametrize("norm", NORMS)
def test_one_dimensional_match_numpy(norm):
    x, z = torch.tensor(X, dtype=torch.float32), torch.tensor(Z)
    cases = [(torch.fft.fft(x, norm=norm), np.fft.fft(X, norm=norm)),
             (torch.fft.fft(z, n=7, dim=0, norm=norm), np.fft.fft(Z, 7, 0, norm)),
             (torch.fft.ifft(z, n=4, norm=norm), np.fft.ifft(Z, 4, norm=norm)),
             (torch.fft.ifft(x, norm=norm), np.fft.ifft(X, norm=norm)),
             (torch.fft.rfft(x, n=5, norm=norm), np.fft.rfft(X, 5, norm=norm)),
             (torch.fft.irfft(z, norm=norm), np.fft.irfft(Z, norm=norm)),
             (torch.fft.irfft(z, n=9, norm=norm), np.fft.irfft(Z, 9, norm=norm)),
             (torch.fft.hfft(z, n=6, norm=norm), np.fft.hfft(Z, 6, norm=norm)),
             (torch.fft.ihfft(x, norm=norm), np.fft.ihfft(X, norm=norm))]
    for got, want in cases:
        np.testing.assert_allclose(got.resolve_conj().numpy(), want, rtol=1e-5, atol=1e-5)
    assert cases[-1][0].is_conj() and not cases[-2][0].is_conj()    # torch's ihfft is a conjugate view
    assert cases[0][0].dtype is torch.complex64 and cases[1][0].dtype is torch.complex128
    assert cases[5][0].dtype is torch.float64 and cases[4][0].dtype is torch.complex64 and torch.fft.rfft(x.double()).dtype is torch.complex128
    assert torch.fft.fft(torch.tensor([1, 2, 3])).dtype is torch.complex64      # integers: the default float


@pytest.mark.parametrize("norm", NORMS)
def test_n_dimensional_match_numpy(norm):
    x, z = torch.tensor(X), torch.tensor(Z)
    cases = [(torch.fft.fftn(z, norm=norm), np.fft.fftn(Z, norm=norm)),
             (torch.fft.fft2(x, s=(4, 4), norm=norm), np.fft.fft2(X, (4, 4), norm=norm)),
             (torch.fft.ifftn(z, dim=(0,), norm=norm), np.fft.ifftn(Z, axes=(0,), norm=norm)),
             (torch.fft.ifft2(x, norm=norm), np.fft.ifft2(X, norm=norm)),
             (torch.fft.rfftn(x, norm=norm), np.fft.rfftn(X, norm=norm)),
             (torch.fft.rfft2(x, s=(2, 5), norm=norm), np.fft.rfft2(X, (2, 5), norm=norm)),
             (torch.fft.irfftn(z, norm=norm), np.fft.irfftn(Z, norm=norm)),
             (torch.fft.irfft2(z, s=(3, 7), norm=norm), np.fft.irfft2(Z, (3, 7), norm=norm)),
             (torch.fft.hfftn(z, norm=norm), _np_hfftn(Z, None, None, norm)),
             (torch.fft.hfft2(z, s=(2, 6), norm=norm), _np_hfftn(Z, (2, 6), (-2, -1), norm)),
             (torch.fft.ihfft2(x, norm=norm), np.conj(np.fft.rfftn(X, norm={None: "forward", "backward": "forward",
                                                                         "forward": "backward", "ortho": "ortho"}[norm])))]
    for got, want in cases:
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-10, atol=1e-10)
    # ihfftn is the inverse of hfftn
    back = torch.fft.ihfftn(torch.fft.hfftn(z, s=(3, 8), norm=norm), s=(3, 8), norm=norm)
    np.testing.assert_allclose(torch.fft.hfftn(back, s=(3, 8), norm=norm).numpy(),
                               torch.fft.hfftn(z, s=(3, 8), norm=norm).numpy(), atol=1e-10)


def test_helpers_and_out():
    np.testing.assert_allclose(torch.fft.fftfreq(5).numpy(), np.fft.fftfreq(5).astype(np.float32))
    np.testing.assert_allclose(torch.fft.rfftfreq(6, d=0.3).numpy(), np.fft.rfftfreq(6, 0.3).astype(np.float32),
                               rtol=1e-6)
    assert torch.fft.fftfreq(4, dtype=torch.float64).dtype is torch.float64
    np.testing.assert_array_equal(torch.fft.fftshift(torch.tensor(X)).numpy(), np.fft.fftshift(X))
    np.testing.assert_array_equal(torch.fft.ifftshift(torch.tensor(X), dim=1).numpy(), np.fft.ifftshift(X, 1))
    out = torch.empty(0, dtype=torch.complex128)
    r = torch.fft.fft(torch.tensor(X), out=out)
    assert r is out and out.shape == (3, 6)
    np.testing.assert_allclose(out.numpy(), np.fft.fft(X))


@pytest.mark.parametrize("call, exc, msg", [
    (lambda: torch.fft.rfft(torch.tensor(Z)), RuntimeError, "rfft expects a real input tensor, but got ComplexDouble"),
    (lambda: torch.fft.fft(torch.tensor(X), norm="bad"), RuntimeError, 'Invalid normalization mode: "bad"'),
    (lambda: torch.fft.fft(torch.tensor(X), n=0), RuntimeError, r"Invalid number of data points \(0\) specified"),
    (lambda: torch.fft.fftn(torch.tensor(X), s=(1, 2, 3)), RuntimeError, "Got shape with 3 values"),
    (lambda: torch.fft.fftn(torch.tensor(X), dim=(0, 0)), RuntimeError, "FFT dims must be unique"),
    (lambda: torch.fft.fftn(torch.tensor(X), s=(2,), dim=(0, 1)), RuntimeError, "must have the same length"),
    (lambda: torch.fft.fft(torch.tensor(1.0)), IndexError, "tensor has no dimensions"),
    (lambda: torch.fft.rfftn(torch.tensor(Z)), RuntimeError, "rfftn expects a real-valued input tensor"),
    (lambda: torch.fft.fft(torch.tensor(X, dtype=torch.float16)), RuntimeError, "Unsupported dtype Half"),
])
def test_errors(call, exc, msg):
    with pytest.raises(exc, match=msg):
        call()


def _c(p):        # float64 pairs (..., 2) as complex
    return torch.view_as_complex(p)


_GRADS = {
    "fft": lambda x, p: torch.view_as_real(torch.fft.fft(x, n=7)),
    "fft_c": lambda x, p: torch.view_as_real(torch.fft.fft(_c(p), n=4, norm="ortho")),
    "ifft": lambda x, p: torch.view_as_real(torch.fft.ifft(_c(p), dim=0)),
    "rfft": lambda x, p: torch.view_as_real(torch.fft.rfft(x, n=5)),
    "irfft": lambda x, p: torch.fft.irfft(_c(p), n=8),
    "hfft": lambda x, p: torch.fft.hfft(_c(p), norm="forward"),
    "ihfft": lambda x, p: torch.view_as_real(torch.fft.ihfft(x).resolve_conj()),
    "fft2": lambda x, p: torch.view_as_real(torch.fft.fft2(_c(p), s=(2, 3))),
    "rfftn": lambda x, p: torch.view_as_real(torch.fft.rfftn(x)),
    "irfft2": lambda x, p: torch.fft.irfft2(_c(p)),
    "hfftn": lambda x, p: torch.fft.hfftn(_c(p), s=(3, 5)),
    "ihfftn": lambda x, p: torch.view_as_real(torch.fft.ihfftn(x, s=(2, 6))),
}


@pytest.mark.parametrize("name", sorted(_GRADS))
def test_gradients(name):
    x = torch.tensor(RNG.standard_normal((3, 6)), requires_grad=True)
    p = torch.tensor(RNG.standard_normal((3, 4, 2)), requires_grad=True)
    assert gradcheck(lambda x, p: _GRADS[name](x, p), (x, p))


def test_windows():
    n = np.arange(6)
    np.testing.assert_allclose(torch.hann_window(6).numpy(), 0.5 - 0.5 * np.cos(2 * np.pi * n / 6), atol=1e-7)
    np.testing.assert_allclose(torch.hann_window(5, periodic=False).numpy(), np.hanning(5), atol=1e-7)
    np.testing.assert_allclose(torch.hamming_window(5, periodic=False).numpy(), np.hamming(5), atol=1e-7)
    np.testing.assert_allclose(torch.blackman_window(5, periodic=False).numpy(), np.blackman(5), atol=1e-7)
    np.testing.assert_allclose(torch.bartlett_window(5, periodic=False).numpy(), np.bartlett(5), atol=1e-7)
    np.testing.assert_allclose(torch.kaiser_window(5, False, beta=3.0, dtype=torch.float64).numpy(), np.kaiser(5, 3.0))
    W = torch.signal.windows
    np.testing.assert_allclose(W.gaussian(5, std=1.5).numpy(), np.exp(-((np.arange(5) - 2) / 1.5) ** 2 / 2), atol=1e-7)
    np.testing.assert_allclose(W.cosine(4).numpy(), np.sin(np.pi * (np.arange(4) + 0.5) / 4), atol=1e-7)
    np.testing.assert_allclose(W.hann(6, sym=False).numpy(), torch.hann_window(6).numpy(), atol=1e-7)
    assert torch.hann_window(1).tolist() == [1.0] and torch.hann_window(0).shape == (0,)
    with pytest.raises(RuntimeError, match="requires non-negative window_length"):
        torch.hann_window(-1)


def test_windows_in_16_bits_and_their_dtype_errors_as_pytorch():
    # torch.*_window computes with tensor ops in the dtype itself: 16-bit windows round after each step (asymmetric
    # values), kaiser_window's points are arange's in the dtype (bfloat16 rounds integers above 256); values from
    # PyTorch 2.13
    bf16, f16 = torch.bfloat16, torch.float16
    cases = [(torch.hann_window(7, dtype=bf16), [0.0, 0.189453125, 0.61328125, 0.94921875, 0.94921875, 0.60546875,
                                                 0.193359375]),
             (torch.bartlett_window(7, periodic=False, dtype=f16), [0.0, 0.333251953125, 0.66650390625, 1.0,
                                                                    0.6669921875, 0.333984375, 0.0]),
             (torch.blackman_window(5, dtype=bf16), [0.0, 0.201171875, 0.8515625, 0.84375, 0.1982421875]),
             (torch.hamming_window(6, dtype=f16), [0.080078125, 0.309814453125, 0.76953125, 1.0, 0.7705078125,
                                                   0.310791015625]),
             (torch.kaiser_window(300, dtype=bf16)[-4:], [0.0002117156982421875, 0.0002117156982421875,
                                                          0.0001163482666015625, 5.269050598144531e-05])]
    for got, want in cases:
        assert got.float().tolist() == want
    w = torch.hann_window(4, dtype=torch.float64, requires_grad=True)
    assert w.requires_grad and w.is_leaf and w.dtype is torch.float64
    with pytest.raises(RuntimeError, match=r"^hann_window expects floating point dtypes, got: TensorOptions\(dtype=long "
                                           r"int, device=cpu, layout=Strided \(default\), requires_grad=false"):
        torch.hann_window(4, dtype=torch.int64)
    with pytest.raises(NotImplementedError, match="\"arange_cpu\" not implemented for 'ComplexFloat'"):
        torch.kaiser_window(4, dtype=torch.complex64)
    with pytest.raises(ValueError, match="general_cosine expects float32 or float64 dtypes, got: torch.float16"):
        torch.signal.windows.hann(4, dtype=f16)     # torch.signal.windows: float32 and float64 only


def test_stft_istft_round_trip():
    x = torch.tensor(RNG.standard_normal((2, 64)), dtype=torch.float32)
    w = torch.hann_window(16)
    S = torch.stft(x, 16, hop_length=4, window=w, return_complex=True)
    assert S.shape == (2, 9, 17) and S.dtype is torch.complex64
    # frame 3 of the reflect-padded signal, windowed, through rfft
    padded = np.pad(x.numpy(), ((0, 0), (8, 8)), mode="reflect")
    np.testing.assert_allclose(S.numpy()[:, :, 3], np.fft.rfft(padded[:, 12:28] * w.numpy()), atol=1e-4)
    y = torch.istft(S, 16, hop_length=4, window=w, length=64)
    np.testing.assert_allclose(y.numpy(), x.numpy(), atol=1e-5)
    with pytest.raises(RuntimeError, match="stft requires the return_complex parameter"):
        torch.stft(x, 16)


# torch 2.13's stft errors: its kernel's description of the call (the input as padded when centred), then the check
STFT_ERRORS = [
    (lambda: torch.stft(torch.ones(72), 8, hop_length=2, window=torch.ones(5), return_complex=True),
     "stft(torch.FloatTensor[80], n_fft=8, hop_length=2, win_length=8, window=torch.FloatTensor{[5]}, normalized=0, "
     "onesided=None, return_complex=1, align_to_window=None) : expected a 1D window tensor of size equal to "
     "win_length=8, but got window with size [5]"),
    (lambda: torch.stft(torch.ones(64), 200, win_length=100, center=False, return_complex=True),
     "stft(torch.FloatTensor[64], n_fft=200, hop_length=50, win_length=100, window=None, normalized=0, "
     "onesided=None, return_complex=1, align_to_window=None) : expected 0 < n_fft < 64, but got n_fft=100"),
    (lambda: torch.stft(torch.ones(64), 16, hop_length=0, return_complex=True),
     "stft(torch.FloatTensor[80], n_fft=16, hop_length=0, win_length=16, window=None, normalized=0, onesided=None, "
     "return_complex=1, align_to_window=None) : expected hop_length > 0, but got hop_length=0"),
    (lambda: torch.stft(torch.ones(3, 64, dtype=torch.bfloat16), 16, center=False, return_complex=True,
                        window=torch.ones(3, dtype=torch.float64)),
     "stft(CPUBFloat16Type[3, 64], n_fft=16, hop_length=4, win_length=16, window=torch.DoubleTensor{[3]}, "
     "normalized=0, onesided=None, return_complex=1, align_to_window=None) : expected a 1D window tensor of size "
     "equal to win_length=16, but got window with size [3]"),
    (lambda: torch.stft(torch.ones(4, 4, 4), 4, return_complex=True),
     "stft(torch.FloatTensor[4, 4, 8], n_fft=4, hop_length=1, win_length=4, window=None, normalized=0, "
     "onesided=None, return_complex=1, align_to_window=None) : expected a 1D or 2D tensor"),
    (lambda: torch.stft(torch.ones(48, dtype=torch.complex64), 8, onesided=True, return_complex=True),
     "Cannot have onesided output if window or input is complex"),
    (lambda: torch.stft(torch.ones(64), 200, return_complex=True),
     "Argument #4: Padding size should be less than the corresponding input dimension, but got: padding (100, 100) "
     "at dimension 2 of input [1, 1, 64]"),
]


@pytest.mark.parametrize("i", range(len(STFT_ERRORS)))
def test_stft_errors_as_torch(i):
    call, message = STFT_ERRORS[i]
    with pytest.raises(RuntimeError) as info:
        call()
    assert str(info.value) == message


def test_ihfftn_checks_its_arguments_before_refusing_a_complex_input():
    # torch 2.13: shape, dims and norm are checked first; the r2c kernel refuses the complex input last
    c = torch.ones(3, 4, dtype=torch.complex64)
    for call, message in ((lambda: torch.fft.ihfftn(c, dim=()), "ihfftn must transform at least one axis"),
                          (lambda: torch.fft.ihfft2(c, norm="bogus"), 'Invalid normalization mode: "bogus"'),
                          (lambda: torch.fft.ihfft2(c, dim=(0, 0)), "FFT dims must be unique"),
                          (lambda: torch.fft.ihfftn(c, s=(0, 4)), "Invalid number of data points (0) specified"),
                          (lambda: torch.fft.ihfftn(c), "Only supports floating-point dtypes, but found: ComplexFloat")):
        with pytest.raises(RuntimeError) as info:
            call()
        assert str(info.value) == message


@pytest.mark.parametrize("name", ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"])
def test_one_dimensional_transforms_refuse_a_tuple_dim_as_torchs_parser(name):
    # torch 2.13, dim by keyword: before any check of the input (rfft of a complex input included)
    for x in (torch.ones(4, 4), torch.ones(4, 4, dtype=torch.complex64)):
        with pytest.raises(TypeError, match=f"^fft_{name}\\(\\): argument 'dim' must be int, not tuple$"):
            getattr(torch.fft, name)(x, dim=(0, 0))
