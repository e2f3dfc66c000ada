"""The only part of shardviz that imports jax: jax objects in, model objects out."""

from .topology import allow_without_gpu

# Before jax's backends start: the CUDA plugin (the shardviz[gpu] extra) may load for
# deviceless compiles on a machine without NVIDIA's driver.
allow_without_gpu()
