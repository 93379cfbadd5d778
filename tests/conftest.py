import os

from hypothesis import HealthCheck, settings

# First calls compile Numba kernels: no deadline. Example counts are sized for a 2-core CI box.
settings.register_profile("ci", deadline=None, max_examples=int(os.environ.get("REFTORCH_EXAMPLES", "12")),
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                                 HealthCheck.filter_too_much], derandomize=True)
settings.load_profile("ci")
