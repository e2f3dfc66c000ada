"""The only part of shardviz that imports jax: jax objects in, model objects out."""

from shardviz.capture.topology import allow_deviceless

# Before jax's backends start: the CUDA plugin and libtpu (the shardviz[gpu] and [tpu]
# extras) may load for deviceless compiles on a machine without those devices.
allow_deviceless()
