"""Every process: a global array over (processes x local devices), a jitted psum over both
mesh axes, one JSON line with what this process sees."""

import json
import sys

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

hosts, local = jax.process_count(), jax.local_device_count()
mesh = Mesh(np.array(jax.devices()).reshape(hosts, local), ("hosts", "model"))
data = np.arange(4 * hosts * local, dtype=np.float32).reshape(2 * hosts, 2 * local)
x = jax.make_array_from_callback(
    data.shape, NamedSharding(mesh, P("hosts", "model")), lambda i: data[i]
)
total = jax.jit(
    jax.shard_map(
        lambda block: jax.lax.psum(block.sum(), ("hosts", "model")),
        mesh=mesh, in_specs=P("hosts", "model"), out_specs=P(),
    )
)(x)  # fmt: skip
print(json.dumps({
    "process": jax.process_index(),
    "processes": hosts,
    "devices": jax.device_count(),
    "local_devices": local,
    "device_processes": [d.process_index for d in jax.devices()],
    "shape": list(x.shape),
    "total": float(total.addressable_data(0)),
    "args": sys.argv[1:],
}))  # fmt: skip
print(f"process {jax.process_index()} done", file=sys.stderr)
