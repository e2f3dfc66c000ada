"""The serving battery's cases: ``sv.compare(..., mode="decode")``, ``sv.smallest_slice`` and
the KV cache's bytes under hostile numbers, dtypes and targets. Reduced models (two layers,
small dims), and no case compiles more than a refused step (about a second)."""

from __future__ import annotations

from tests.hostile.battery import Cases

#: A reduced Llama 3.1 70B, as keyword arguments in a case's code.
_SMALL = "layers=2, d_model=256, heads=8, kv_heads=8, head_dim=32, ffn=512, vocab=1024"
_SLICE = f"sv.smallest_slice('llama3.1-70b', 'v5e', check=False, {_SMALL}, "
_DECODE = f"sv.compare('llama3.1-70b', ['tp'], mode='decode', {_SMALL}, "
_ZOO = "from shardviz.strategies.zoo import get_model\nget_model('llama3.1-8b')"
#: Your own model declaring its decoder's sizes in ``info``: the case's code adds them and ``)``.
_OWN = (
    "from shardviz.strategies.zoo import ModelDef\n"
    "m = ModelDef.custom('mine', {'w': jnp.ones(2)}, lambda p, b: jnp.sum(p['w'] * b), "
    "jnp.ones(2), info=dict(layers=2, d_model=64, heads=8, head_dim=16, ffn=128, vocab=256, "
)

#: name -> (code run with ``sv``, ``jax``, ``jnp``, ``np`` in scope; its last line's value is
#: the outcome unless it raises; expected: "True" or the error's class).
CASES: Cases = {
    "smallest_slice batch=0": (_SLICE + "batch=0)", "ArgumentError"),
    "smallest_slice batch=-8": (_SLICE + "batch=-8)", "ArgumentError"),
    "smallest_slice context=-1": (_SLICE + "context=-1)", "ArgumentError"),
    "smallest_slice context=0.5": (_SLICE + "context=0.5)", "ArgumentError"),
    "smallest_slice batch=True": (_SLICE + "batch=True)", "ArgumentError"),
    "smallest_slice batch='8'": (_SLICE + "batch='8')", "ArgumentError"),
    "smallest_slice batch=np.int64(8)": (
        "s = " + _SLICE + "batch=np.int64(8))\ntype(s.batch) is int and s.batch == 8",
        "True",
    ),
    "smallest_slice dtype=jnp.int8": (
        "s = " + _SLICE + "dtype=jnp.int8)\ns.weight_dtype == s.cache_dtype == 'int8'",
        "True",
    ),
    "smallest_slice dtype='fp8'": (_SLICE + "dtype='fp8')", "ArgumentError"),
    "smallest_slice check='no'": (
        _SLICE.replace("check=False", "check='no'") + ")",
        "ArgumentError",
    ),  # fmt: skip
    "smallest_slice a cache past 8 EiB": (_SLICE + "batch=2**40, context=2**40)", "ArgumentError"),
    "kv_bytes_per_token(jnp.bfloat16)": (
        _ZOO + ".kv_bytes_per_token(jnp.bfloat16) == 131072",
        "True",
    ),
    "kv_bytes_per_token(np.dtype('int8'))": (
        _ZOO + ".kv_bytes_per_token(np.dtype('int8')) == 65536",
        "True",
    ),
    "kv_bytes_per_token(jnp.float32)": (
        _ZOO + ".kv_bytes_per_token(jnp.float32)",
        "ArgumentError",
    ),
    "compare decode batch=0": (_DECODE + "batch=0)", "ArgumentError"),
    "compare decode batch=-8": (_DECODE + "batch=-8)", "ArgumentError"),
    "compare decode context=0.5": (_DECODE + "context=0.5)", "ArgumentError"),
    "compare decode strategies as a string": (
        f"sv.compare('llama3.1-70b', 'tp', mode='decode', {_SMALL})",
        "ArgumentError",
    ),
    "compare decode strategies empty": (
        f"sv.compare('llama3.1-70b', [], mode='decode', {_SMALL})",
        "ArgumentError",
    ),
    "compare decode two targets": (_DECODE + "target=['v5e', 'h100'])", "ArgumentError"),
    "compare decode a target list of one": (
        "c = " + _DECODE + "target=['v5e'], batch=8, context=128)\nc.results[0].compiled",
        "True",
    ),
    "compare decode refused: not compiled, no tokens/s, never 'fits'": (
        "c = " + _DECODE + "target='v5e:2x4', batch=16, context=2**20)\n"
        "r = c.results[0]\n"
        "(not r.compiled and r.fits is False and r.tokens_per_second_per_chip is None "
        "and r.working_bytes is None and 'not compiled' in str(c) "
        "and 'not compiled' in c._repr_html_())",
        "True",
    ),
    "compare decode batch=2**40: over HBM, no advice to raise it": (
        "c = " + _DECODE + "target='v5e:2x4', batch=2**40, context=128)\n"
        "({f.kind for f in c.findings} == {'over-hbm'} and 'raise the batch' not in str(c) "
        "and not c.results[0].compiled)",
        "True",
    ),
    "compare decode reduced model's parameter count": (
        "c = " + _DECODE + "target='v5e', batch=8, context=128)\n"
        "'(1.84M parameters' in str(c) and '0.0 B parameters' not in str(c)",
        "True",
    ),
    "own decoder kv_heads='4'": (
        _OWN + "kv_heads='4'))\nsv.compare(m, ['tp'], mode='decode')",
        "ArgumentError",
    ),
    "own decoder heads not a multiple of kv_heads": (
        _OWN + "kv_heads=3))\nsv.smallest_slice(m, 'v5e', check=False)",
        "ShardvizError",
    ),
    "own decoder without kv_heads": (
        _OWN + "))\nsv.compare(m, ['tp'], mode='decode')",
        "ShardvizError",
    ),
    "own decoder experts=True": (
        _OWN + "kv_heads=4, experts=True, experts_per_token=1))\nm.decoder_config()",
        "ArgumentError",
    ),
    "own dense decoder under 'ep'": (
        _OWN + "kv_heads=4))\nsv.compare(m, ['ep'], mode='decode')",
        "ArgumentError",
    ),
    "own decoder activation='relu'": (
        _OWN + "kv_heads=4, activation='relu'))\nsv.compare(m, ['tp'], mode='decode')",
        "ShardvizError",
    ),
    "own decoder kv_bytes_per_token": (
        _OWN + "kv_heads=4))\nm.kv_bytes_per_token('int8') == 2 * 2 * 4 * 16",
        "True",
    ),
}
