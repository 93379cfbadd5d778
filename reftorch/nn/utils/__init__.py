"""torch.nn.utils: gradient clipping, parameter/vector conversion, packed sequences, parametrizations,
weight/spectral normalisation and pruning."""
import reftorch.nn.utils.rnn as rnn  # noqa: F401
from .clip_grad import clip_grad_norm, clip_grad_norm_, clip_grad_value_, clip_grads_with_norm_, get_total_norm  # noqa
from .convert_parameters import parameters_to_vector, vector_to_parameters  # noqa: F401
import reftorch.nn.utils.parametrize as parametrize  # noqa: F401
import reftorch.nn.utils.parametrizations as parametrizations  # noqa: F401
from .weight_norm import weight_norm, remove_weight_norm  # noqa: F401
from .spectral_norm import spectral_norm, remove_spectral_norm  # noqa: F401
import reftorch.nn.utils.prune as prune  # noqa: F401
