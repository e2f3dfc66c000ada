"""The sizes battery's cases: model sizes and dtypes, pipeline stages and microbatches,
compare's numbers, and a Ctrl-C inside a compile."""

from __future__ import annotations

from tests.hostile.battery import Cases

_GET = "from shardviz.strategies import get_model\n"
#: A Llama small enough to build in a moment (4 layers: 4 pipeline stages fit).
_LLAMA = (
    "D = dict(layers=4, d_model=64, heads=2, kv_heads=1, head_dim=32, ffn=128, vocab=256, "
    "seq=32, batch=8)\n"
)

#: name -> (code, expected outcome): see :data:`tests.hostile.battery.Cases`.
CASES: Cases = {
    "no layers in a zoo model": (_GET + "get_model('transformer', layers=0)", "ArgumentError"),
    "no layers in a published model": (
        _GET + "get_model('llama3.1-8b', layers=0)",
        "ArgumentError",
    ),
    "a fractional size": (_GET + "get_model('mlp', d_model=64.0)", "ArgumentError"),
    "a size given as a flag": (_GET + "get_model('llama3.1-8b', batch=True)", "ArgumentError"),
    "a NaN capacity factor": (
        _GET + "get_model('moe', capacity_factor=float('nan'))",
        "ArgumentError",
    ),
    "negative experts": (_GET + "get_model('mixtral-8x7b', experts=-1)", "ArgumentError"),
    "numpy sizes are sizes": (
        _GET + "get_model('mlp', d_model=np.int64(64), batch=np.int32(16)).info['d_model'] == 64",
        "True",
    ),
    "int8 master weights for the mlp": (_GET + "get_model('mlp', dtype='int8')", "ArgumentError"),
    "int8 master weights for the transformer": (
        _GET + "get_model('transformer', dtype=jnp.int8)",
        "ArgumentError",
    ),
    "int8 master weights for a published model": (
        _GET + "get_model('llama3.1-8b', layers=2, dtype='int8')",
        "ArgumentError",
    ),
    "int8 matmuls for a published model": (
        _GET + "get_model('llama3.1-8b', layers=2, compute_dtype='int8')",
        "ArgumentError",
    ),
    "an integer parameter in a custom model": (
        "m = sv.ModelDef.custom('ints', {'w': jnp.ones(8, jnp.int32)}, "
        "lambda p, b: (p['w'] * b).sum() * 1.0, jnp.ones(8))\n"
        "sv.compare(m, ['dp'])",
        "ArgumentError",
    ),
    "no pipeline stages": ("sv.compare('transformer', ['pp'], stages=0)", "ArgumentError"),
    "negative pipeline stages": ("sv.compare('transformer', ['pp'], stages=-2)", "ArgumentError"),
    "stages as a string": ("sv.compare('transformer', ['pp'], stages='2')", "ArgumentError"),
    "no microbatches": ("sv.compare('transformer', ['pp'], microbatches=0)", "ArgumentError"),
    "microbatches that do not divide the batch": (
        "sv.compare('transformer', ['pp'], microbatches=3)",
        "ShardvizError",
    ),
    "pipeline rules of no stages": (
        "from shardviz.strategies.rules.pipeline import pipeline_rules\n"
        "pipeline_rules('pp', stages=0)",
        "ArgumentError",
    ),
    "a published pipeline of more stages than devices": (
        _GET + _LLAMA + "sv.compare(get_model('llama3.1-8b', **D), ['pp'], stages=16)",
        "ArgumentError",
    ),
    "microbatches for a published pipeline": (
        _GET + _LLAMA + "sv.compare(get_model('llama3.1-8b', **D), ['pp'], microbatches=4)",
        "ArgumentError",
    ),
    "a published pipeline takes its stages": (
        _GET + _LLAMA + "from shardviz.strategies.runner import rule_set_for\n"
        "from shardviz.strategies.step import strategy_step\n"
        "m = get_model('llama3.1-8b', **D)\n"
        "strategy_step(m, rule_set_for(m, 'pp', {'stages': 4})).mesh.devices.shape == (4, 2)",
        "True",
    ),
    "no batch per device": ("sv.compare('mlp', ['dp'], batch_per_device=0)", "ArgumentError"),
    "no timed steps": ("sv.compare('mlp', ['dp'], steps=0)", "ArgumentError"),
    "a negative seed": ("sv.compare('mlp', ['dp'], seed=-1)", "ArgumentError"),
}

#: Each in a process of its own: a Ctrl-C inside a compile used to end in a segfault.
EACH: Cases = {
    "a Ctrl-C inside a compile, then another compare": (
        "import contextlib, signal\n"
        "from shardviz.capture import compile as c\n"
        "real = c.compiler_log\n"
        "@contextlib.contextmanager\n"
        "def hooked():\n"
        "    with real() as log:\n"
        "        signal.raise_signal(signal.SIGINT)\n"
        "        yield log\n"
        "c.compiler_log = hooked\n"
        "try:\n"
        "    sv.compare('mlp', ['dp'], steps=1)\n"
        "    got = 'not interrupted'\n"
        "except KeyboardInterrupt:\n"
        "    got = 'interrupted'\n"
        "c.compiler_log = real\n"
        "(got, sv.compare('mlp', ['dp'], steps=1).results[0].loss_matches)",
        "('interrupted', True)",
    ),
}
