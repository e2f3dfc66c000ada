"""The only part of shardviz that imports jax: jax objects in, model objects out."""
