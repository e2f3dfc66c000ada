"""Processes that disagree on the program and hang: process 0 sums over the hosts axis,
process 1 over the model axis, so each waits in a collective the other never joins."""

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

mesh = Mesh(np.array(jax.devices()).reshape(jax.process_count(), -1), ("hosts", "model"))
axis = 0 if jax.process_index() == 0 else 1
x = jax.make_array_from_callback(
    (8, 8), NamedSharding(mesh, P("hosts", "model")), lambda i: np.ones((8, 8), np.float32)[i]
)
print(f"summing over axis {axis}", flush=True)
y = jax.jit(lambda a: a.sum(axis=axis), out_shardings=NamedSharding(mesh, P()))(x)
print("summed", y.shape, float(y.addressable_data(0).sum()), flush=True)
