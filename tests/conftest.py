"""Every test process runs on fake CPU devices (8 unless SHARDVIZ_TEST_DEVICES says otherwise),
set before jax's backend starts."""

import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402

jax.config.update("jax_num_cpu_devices", int(os.environ.get("SHARDVIZ_TEST_DEVICES", "8")))
