"""Regression tests for what the third pass over PyTorch's OpInfo walk (benches/opinfo.py, issue 26) found: each
expectation was read off torch 2.13 side by side, or follows from first principles as noted."""
import numpy as np
import pytest

from codegen.model import RegistryError, load
import reftorch as torch
import reftorch.nn.functional as F

F64 = torch.float64
RANK_ONE = [[1.0, 2.0], [2.0, 4.0], [3.0, 6.0]]          # u v^T with u = [1, 2, 3], v = [1, 2]
G = [[1.0, 0.0, -1.0], [0.5, 2.0, 1.0]]


def test_pinv_gradient_of_a_rank_deficient_matrix_is_torchs_closed_form():
    A = torch.tensor(RANK_ONE, dtype=F64, requires_grad=True)
    P = torch.linalg.pinv(A)
    assert np.allclose(P.detach().numpy(), np.linalg.pinv(np.array(RANK_ONE)))
    (gA,) = torch.autograd.grad(P, A, torch.tensor(G, dtype=F64), create_graph=True)
    # torch 2.13's values (its pinv_backward); the SVD's backward gives NaN or other numbers here
    assert np.allclose(gA.detach().numpy(), [[-0.00428571428571428, 0.003163265306122453],
                                             [-0.008571428571428567, 0.006326530612244899],
                                             [-0.027142857142857135, -0.019081632653061214]], rtol=1e-12, atol=1e-15)
    # first principles: along a direction that keeps the rank (d(u v^T) = du v^T + u dv^T) the gradient is the
    # derivative of <G, pinv(A)>, here by central differences of NumPy's pinv
    u, v, du, dv = np.array([1.0, 2, 3]), np.array([1.0, 2]), np.array([0.3, -1, 0.5]), np.array([-0.7, 0.2])
    f = lambda t: np.sum(np.array(G) * np.linalg.pinv(np.outer(u + t * du, v + t * dv)))
    dA = np.outer(du, v) + np.outer(u, dv)
    assert np.isclose(np.sum(gA.detach().numpy() * dA), (f(1e-6) - f(-1e-6)) / 2e-6, rtol=1e-6)
    # double backward differentiates the closed form again (torch's numbers)
    (ggA,) = torch.autograd.grad(gA.sum(), A)
    assert np.allclose(ggA.numpy(), [[0.00029446064139941304, -0.004338192419825076],
                                     [0.003017492711370256, -0.0038192419825072953],
                                     [0.01369970845481048, 0.012618075801749246]], rtol=1e-10, atol=1e-15)


def test_pinv_gradient_of_a_wide_matrix_takes_the_other_grouping():
    B = torch.tensor(np.array(RANK_ONE).T.copy(), dtype=F64, requires_grad=True)     # 2 x 3: m <= n
    (gB,) = torch.autograd.grad(torch.linalg.pinv(B), B, torch.tensor(G, dtype=F64).mT)
    assert np.allclose(gB.numpy(), [[-0.004285714285714278, -0.008571428571428575, -0.027142857142857156],
                                    [0.0031632653061224557, 0.006326530612244901, -0.019081632653061224]],
                       rtol=1e-12, atol=1e-15)
    assert torch.autograd.gradgradcheck(torch.linalg.pinv, (torch.tensor([[1.0, 2.0, 0.5], [0.0, 1.0, 3.0]],
                                                                         dtype=F64, requires_grad=True),))


def test_pinv_tolerances_per_matrix_and_hermitian():
    b = np.array([[[1.0, 2.0, 0.0], [0.0, 1.0, 1.0], [3.0, 1.0, 1.0]], [[2.0, 0.0, 0.0], [0.0, 0.5, 0.0],
                                                                       [0.0, 0.0, 0.01]]])
    out = torch.linalg.pinv(torch.tensor(b), atol=torch.tensor([0.0, 0.1]), rtol=torch.tensor([0.0, 0.0]))
    keep = np.diag([0.5, 2.0, 0.0])                        # the second matrix's 0.01 is under its atol
    assert np.allclose(out[1].numpy(), keep) and np.allclose(out[0].numpy(), np.linalg.pinv(b[0]))
    assert out.dtype == F64
    s = b[0] @ b[0].T
    assert np.allclose(torch.linalg.pinv(torch.tensor(s, dtype=torch.float32), hermitian=True).numpy(),
                       np.linalg.pinv(s), rtol=1e-4, atol=1e-5)
    assert list(torch.linalg.pinv(torch.ones(0, 3)).shape) == [3, 0]


OVERLAP = (r"^unsupported operation: some elements of the input tensor and the written-to tensor refer to a single "
           r"memory location\. Please clone\(\) the tensor before performing the operation\.$")


def test_out_that_is_an_input_is_refused_before_anything_is_written():
    # torch's assert_no_overlap (gather, take, masked_select, cat, kthvalue...): out may not be an input, nor share
    # its bytes; the input keeps its values
    src = torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    ind = torch.tensor([2, 1, 0])
    for call in (lambda: torch.gather(src, 0, ind, out=src), lambda: torch.take(src, ind, out=src),
                 lambda: torch.masked_select(src, src > 2, out=src),
                 lambda: torch.kthvalue(src, 2, out=(src, torch.empty((), dtype=torch.int64))),
                 lambda: torch.cat([src, src], out=src)):
        with pytest.raises(RuntimeError, match=OVERLAP):
            call()
        assert src.tolist() == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    # a view over part of an input: bytes that intersect (ind[:-1] and ind[1:] share ind[1])
    with pytest.raises(RuntimeError, match=OVERLAP):
        torch.take(ind.clone(), ind[1:], out=ind[:-1])
    # out resized first (to the result's 2 elements, in place), then checked: ind[:1] grows over ind[1]
    with pytest.raises(RuntimeError, match=OVERLAP):
        torch.gather(ind.clone(), 0, ind[1:], out=ind[:1])
    z = torch.zeros(4, 6)
    with pytest.raises(RuntimeError, match=OVERLAP):
        torch.cat((torch.ones(4, 6), z), out=z[:2, :])
    assert ind.tolist() == [2, 1, 0] and z.abs().sum().item() == 0
    # apart: a view of another part of the same storage is fine
    buf = torch.zeros(6, dtype=torch.int64)
    out = torch.take(buf[:3], torch.tensor([0, 1]), out=buf[4:])
    assert out.tolist() == [0, 0]


def test_elementwise_out_may_be_an_input_but_not_overlap_one_partly():
    a = torch.tensor([1.0, 2.0, 3.0, 4.0])
    assert torch.add(a, a, out=a).tolist() == [2.0, 4.0, 6.0, 8.0]      # TensorIterator: the same tensor is fine
    assert torch.cumsum(a, 0, out=a).tolist() == [2.0, 6.0, 12.0, 20.0]
    with pytest.raises(RuntimeError, match=OVERLAP):
        torch.exp(a[:3], out=a[1:])
    with pytest.raises(RuntimeError, match=OVERLAP):
        torch.cumsum(a[:3], 0, out=a[1:])
    assert a.tolist() == [2.0, 6.0, 12.0, 20.0]
    with pytest.raises(RuntimeError, match=r"^unsupported operation: more than one element of the written-to tensor "
                                           r"refers to a single memory location"):
        torch.add(torch.ones(3), 1, out=torch.zeros(1).expand(3))
    # reductions do not check (torch's sum into a part of its input is fine)
    b = torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    torch.sum(b.view(2, 3), 0, out=b[1:4])
    assert b.tolist()[1:4] == [5.0, 7.0, 9.0]


def test_out_dtype_rules_of_structured_kernels_and_amax():
    x = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    idx = torch.tensor([[0, 0], [1, 0]])
    out = torch.zeros(2, 2, dtype=F64)
    with pytest.raises(RuntimeError, match=r"^Expected out tensor to have dtype float, but got double instead$"):
        torch.gather(x, 1, idx, out=out)
    with pytest.raises(RuntimeError, match=r"^Expected out tensor to have dtype float, but got double instead$"):
        torch.aminmax(x, dim=0, out=(torch.zeros(2), torch.zeros(2, dtype=F64)))
    with pytest.raises(RuntimeError, match=r"^Expected out tensor to have dtype long int, but got int instead$"):
        torch.sort(x, out=(torch.zeros(2, 2), torch.zeros(2, 2, dtype=torch.int32)))
    assert out.abs().sum().item() == 0
    with pytest.raises(RuntimeError, match=r"^Expected the dtype for input and out to match, but got Float for input's "
                                           r"dtype and Int for out's dtype\.$"):
        torch.amax(x, 0, out=torch.zeros(2, dtype=torch.int32))
    with pytest.raises(RuntimeError, match=r"^Expected the dtype for input and out to match, but got Float for input's "
                                           r"dtype and Double for out's dtype\.$"):
        torch.amin(x, 0, out=torch.zeros(2, dtype=F64))
    # TensorIterator ops still cast within a category, and refuse a lower one
    assert torch.add(x, x, out=torch.zeros(2, 2, dtype=F64)).dtype == F64
    with pytest.raises(RuntimeError, match=r"^result type Float can't be cast to the desired output type Long$"):
        torch.add(x, x, out=torch.zeros(2, 2, dtype=torch.int64))
    assert torch.gather(x, 1, idx, out=torch.zeros(2, 2)).tolist() == [[1.0, 1.0], [4.0, 3.0]]


def test_scatter_add_refuses_a_src_of_another_dtype():
    self = torch.zeros(3, 5, dtype=F64)
    index = torch.tensor([[0, 1], [2, 0]])
    for call in (lambda: torch.scatter_add(self, 0, index, torch.ones(2, 5)),
                 lambda: self.scatter_add_(0, index, torch.ones(2, 5))):
        with pytest.raises(RuntimeError, match=r"^scatter\(\): Expected self\.dtype to be equal to src\.dtype$"):
            call()
    assert self.abs().sum().item() == 0
    out = torch.scatter_add(self, 0, index, torch.ones(2, 5, dtype=F64))
    assert out.dtype == F64 and out.sum(1).tolist() == [2.0, 1.0, 1.0]


def test_hsplit_vsplit_dsplit_word_a_bad_argument_as_torchs_parser():
    x = torch.ones(5, 5, 5)
    for fn in ("hsplit", "vsplit", "dsplit"):
        with pytest.raises(TypeError, match=rf"^{fn}\(\) received an invalid combination of arguments - got \(Tensor, "
                                            r"str\), but expected one of:\n \* \(Tensor input, int sections\)\n      "
                                            r"didn't match because some of the arguments have invalid types: "
                                            r"\(Tensor, !str!\)\n \* \(Tensor input, tuple of ints indices\)\n"):
            getattr(torch, fn)(x, "abc")
    with pytest.raises(TypeError, match=r"!list of \[float\]!"):
        torch.hsplit(x, [1.5])
    with pytest.raises(TypeError, match=r"got \(Tensor, Tensor\)"):
        torch.hsplit(x, torch.tensor([1]))       # a 1-d tensor is neither an int nor a tuple of ints
    assert [list(t.shape) for t in torch.hsplit(torch.ones(4, 4), torch.tensor(2))] == [[4, 2], [4, 2]]
    assert [list(t.shape) for t in torch.vsplit(torch.ones(4, 4), (1, 3))] == [[1, 4], [2, 4], [1, 4]]


def test_tensor_list_arguments_take_a_list_or_tuple_of_tensors_only():
    x = torch.ones(2, 3)
    for fn in ("cat", "stack", "hstack"):
        with pytest.raises(TypeError, match=rf"^{fn}\(\): argument 'tensors' \(position 1\) must be tuple of Tensors, "
                                            r"not Tensor$"):
            getattr(torch, fn)(x)
        with pytest.raises(TypeError, match=r"^expected Tensor as element 1 in argument 0, but got NoneType$"):
            getattr(torch, fn)((x, None))
    out = torch.zeros(2, 3, dtype=F64)
    with pytest.raises(TypeError, match=r"must be tuple of Tensors, not Tensor"):
        torch.cat(x, out=out)                   # refused before out is looked at
    with pytest.raises(TypeError, match=r"not generator$"):
        torch.cat(t for t in (x, x))
    assert list(torch.cat((x, x)).shape) == [4, 3] and list(torch.stack([x, x], 1).shape) == [2, 2, 3]


def test_linspace_and_logspace_argument_errors():
    for fn in (torch.linspace, torch.logspace):
        name = fn.__name__
        with pytest.raises(TypeError, match=rf"^{name}\(\) received an invalid combination of arguments - got \(int, "
                                            r"int, float\), but expected one of:\n \* \(Tensor start, Tensor end, int "
                                            r"steps, "):
            fn(0, 3, 1.0)
        with pytest.raises(RuntimeError, match=rf"^{name} only supports 0-dimensional start and end tensors, but got "
                                               r"start with 1 dimension\(s\) and end with 1 dimension\(s\)\.$"):
            fn(torch.tensor([0, 1]), torch.tensor([2, 3]), 1)
        with pytest.raises(RuntimeError, match=r"^number of steps must be non-negative$"):
            fn(0, 3, -1)
    assert torch.linspace(0, 3, torch.tensor(3)).tolist() == [0.0, 1.5, 3.0]     # a 0-d integer tensor is an int
    assert torch.logspace(torch.tensor(0.0), 2, 3).tolist() == [1.0, 10.0, 100.0]


def test_dot_refuses_vectors_of_two_dtypes_before_their_sizes():
    for fn in (torch.dot, torch.vdot):
        with pytest.raises(RuntimeError, match=r"^dot : expected both vectors to have same dtype, but found Float and "
                                               r"Half$"):
            fn(torch.ones(1), torch.ones(3, dtype=torch.float16))
    with pytest.raises(RuntimeError, match=r"^1D tensors expected, but got 2D and 1D tensors$"):
        torch.dot(torch.ones(1, 1), torch.ones(3, dtype=torch.float16))
    assert torch.dot(torch.tensor([1.0, 2.0]), torch.tensor([3.0, 4.0])).item() == 11.0


def test_loss_and_pool_shape_errors_in_torchs_words():
    with pytest.raises(RuntimeError, match=r"^margin_ranking_loss : All input tensors should have same dimension but "
                                           r"got sizes: input1: torch\.Size\(\[5, 4\]\), "
                                           r"input2: torch\.Size\(\[5, 4\]\), target: torch\.Size\(\[5\]\) $"):
        F.margin_ranking_loss(torch.ones(5, 4), torch.ones(5, 4), torch.ones(5))
    with pytest.raises(RuntimeError, match=r"^The size of tensor a \(4\) must match the size of tensor b \(5\) at "
                                           r"non-singleton dimension 1$"):
        F.soft_margin_loss(torch.ones(5, 4), torch.ones(5))
    assert F.soft_margin_loss(torch.zeros(3), torch.ones(3)).item() == pytest.approx(np.log(2.0))
    for pool in (F.avg_pool3d, F.max_pool3d):
        with pytest.raises(RuntimeError, match=r"^non-empty 4D or 5D \(batch mode\) tensor expected for input$"):
            pool(torch.ones(0, 1, 49), 2)


def test_registry_out_field_parses_and_unknown_rules_are_named():
    base = ("- name: twice\n  kind: unary\n  signature: (Tensor self)\n  scalar: self + self\n  dtypes: [float]\n"
            "  derivatives: {self: grad * 2}\n  test: {ref: \"lambda x: x + x\"}\n")
    (op,) = load("ops.yaml", text=base + "  out: {dtype: exact, overlap: any}\n")
    assert op.out == (("dtype", "exact"), ("overlap", "any"))
    with pytest.raises(RegistryError, match=r"twice.*out.*unknown rule 'strides'"):
        load("ops.yaml", text=base + "  out: {strides: same}\n")
    with pytest.raises(RegistryError, match=r"twice.*out.*dtype: 'cast' is none of exact, input"):
        load("ops.yaml", text=base + "  out: {dtype: cast}\n")


def test_cholesky_and_cholesky_inverse_of_empty_matrices():
    x = torch.zeros(0, 5, 5, dtype=F64, requires_grad=True)
    L = torch.cholesky(x, upper=True)
    assert list(L.shape) == [0, 5, 5] and L.requires_grad             # torch 2.13: in the graph
    (g,) = torch.autograd.grad(L.sum(), x)
    assert list(g.shape) == [0, 5, 5]
    empty_int = torch.cholesky(torch.zeros(0, 0, dtype=torch.int64))  # before the dtype check, as torch
    assert empty_int.dtype == torch.int64 and list(empty_int.shape) == [0, 0]
    for shape in ([0, 0], [3, 0, 0]):
        out = torch.cholesky_inverse(torch.zeros(*shape))
        assert list(out.shape) == shape and out.dtype == torch.float32
    assert torch.cholesky_inverse(torch.tensor([[2.0]])).tolist() == [[0.25]]


def test_sum_to_size_of_an_empty_size_is_the_full_sum():
    assert torch.tensor(True).sum_to_size([]).dtype == torch.int64        # torch's sum_to: tensor.sum()
    assert torch.tensor(3, dtype=torch.int8).sum_to_size(()).dtype == torch.int64
    assert torch.ones(2, 3, dtype=torch.bool).sum_to_size(2, 3).dtype == torch.bool    # equal sizes: self
    x = torch.tensor(2.5, requires_grad=True)
    out = x.sum_to_size([])
    assert out.item() == 2.5 and torch.autograd.grad(out, x)[0].item() == 1.0


def test_local_response_norm_of_integers_averages_in_integers():
    a = np.arange(18).reshape(1, 6, 3)
    sq = np.concatenate([np.zeros((1, 1, 3), np.int64), a * a], 1)        # one channel of padding before
    div = (sq[:, :-1] + sq[:, 1:]) // 2                                    # avg_pool in int64: truncated
    expected = a / (div.astype(np.float32) * np.float32(3e-05) + np.float32(1.25)) ** np.float32(0.5)
    out = F.local_response_norm(torch.tensor(a), 2, alpha=3e-05, beta=0.5, k=1.25)
    assert out.dtype == torch.float32
    np.testing.assert_allclose(out.numpy(), expected.astype(np.float32), rtol=1e-6)
    assert ((sq[:, :-1] + sq[:, 1:]) % 2).any()                            # the truncation matters here
