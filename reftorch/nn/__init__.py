"""reftorch.nn: modules, parameters, functional, init and utils, with PyTorch's names and defaults.

Written against reftorch's public Tensor API only; the compute of convolution and pooling comes from
the im2col/col2im ops of ops.yaml, activations from their ops.yaml kernels."""
from .parameter import Parameter, Buffer, UninitializedParameter, UninitializedBuffer  # noqa: F401
from .modules import *  # noqa: F401,F403
from .modules import Module  # noqa: F401
from . import functional, init, utils  # noqa: F401
from . import modules  # noqa: F401
from . import parameter  # noqa: F401
from . import parallel  # noqa: F401  (DistributedDataParallel; mpi4py is imported only by init_process_group)
