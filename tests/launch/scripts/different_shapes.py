"""Processes that disagree on the program: process 1 builds a longer array, so the all-gather
in the jitted step moves a different number of bytes in each process."""

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

n = 8 if jax.process_index() == 0 else 16
mesh = Mesh(np.array(jax.devices()), ("d",))
x = jax.make_array_from_callback(
    (n,), NamedSharding(mesh, P("d")), lambda i: np.ones(n, np.float32)[i]
)
print(f"gathering {n} values", flush=True)
y = jax.jit(lambda a: a * 2, out_shardings=NamedSharding(mesh, P()))(x)
print("gathered", y.shape, float(y.addressable_data(0).sum()), flush=True)
