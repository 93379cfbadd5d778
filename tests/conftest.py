import os

from hypothesis import HealthCheck, settings

# First calls compile Numba kernels: no deadline. Example counts are sized for a 2-core CI box.
settings.register_profile("ci", deadline=None, max_examples=int(os.environ.get("REFTORCH_EXAMPLES", "12")),
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                                 HealthCheck.filter_too_much], derandomize=True)
settings.load_profile("ci")

# tests/cuda runs under numba's CUDA simulator, which replaces numba.cuda for the whole process: it is
# collected only in the process that tests/test_cuda_simulator.py starts with NUMBA_ENABLE_CUDASIM=1.
collect_ignore = [] if os.environ.get("NUMBA_ENABLE_CUDASIM") else ["cuda"]

# Scheduled last: the simulator's shards are subprocesses that mostly reuse the cpu kernels the other tests compile
# (~80 s a shard with a warm kernel cache, ~250 s cold on a 2-core box); at the end of the run the cache is warm.
LAST = ("tests/test_cuda_simulator.py",)


def pytest_collection_modifyitems(session, config, items):
    items.sort(key=lambda item: item.nodeid.startswith(LAST))      # stable: the rest keep their order
