"""reftorch.nn: modules, parameters, functional, init and utils, with PyTorch's names and defaults.

Written against reftorch's public Tensor API only; the compute of convolution and pooling comes from
the im2col/col2im ops of ops.yaml, activations from their ops.yaml kernels."""
from .parameter import Parameter, Buffer, UninitializedParameter, UninitializedBuffer  # noqa: F401
from .modules import *  # noqa: F401,F403
from .modules import Module  # noqa: F401
import reftorch.nn.functional as functional  # noqa: F401
import reftorch.nn.init as init  # noqa: F401
import reftorch.nn.utils as utils  # noqa: F401
import reftorch.nn.modules as modules  # noqa: F401
import reftorch.nn.parameter as parameter  # noqa: F401
import reftorch.nn.parallel as parallel  # noqa: F401  (DistributedDataParallel; mpi4py is imported only by init_process_group)
