"""Every process: say it is ready, then run collectives in a loop (until stopped, at most
about a minute, so a launcher that fails to stop it still ends)."""

import os
import time

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

mesh = Mesh(np.array(jax.devices()), ("d",))
x = jax.make_array_from_callback(
    (jax.device_count(),),
    NamedSharding(mesh, P("d")),
    lambda i: np.ones(jax.device_count(), np.float32)[i],
)
step = jax.jit(lambda a: a.sum(), out_shardings=NamedSharding(mesh, P()))
step(x).block_until_ready()
print(f"ready pid={os.getpid()}", flush=True)
for _ in range(600):
    step(x).block_until_ready()
    time.sleep(0.1)
