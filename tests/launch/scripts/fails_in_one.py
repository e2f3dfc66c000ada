"""Process 1 raises after joining; process 0 waits in a collective for it."""

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

if jax.process_index() == 1:
    raise ValueError("process 1 found bad data")
mesh = Mesh(np.array(jax.devices()), ("d",))
x = jax.make_array_from_callback(
    (8,), NamedSharding(mesh, P("d")), lambda i: np.ones(8, np.float32)[i]
)
print("waiting for the others", flush=True)
jax.jit(lambda a: a.sum(), out_shardings=NamedSharding(mesh, P()))(x).block_until_ready()
