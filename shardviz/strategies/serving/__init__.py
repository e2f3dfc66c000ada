"""Serving a decoder (a published one, or your own declaring its sizes; dense or a mixture of
experts): KV caches, decode and prefill steps, slices that hold them.

- :mod:`.layout`: the serving strategies (``tp``, ``dp``, ``dp+tp``, ``tp-heads``, ``ep``) as a
  mesh of ``data x sequence x tensor`` and the partition specs of the weights and the cache;
- :mod:`.steps`: the weights in bfloat16 / int8 / int4, the cache, and the decode and prefill
  steps as jax functions;
- :mod:`.experts`: a mixture of experts' expert weights touched and read per step (no jax);
- :mod:`.step_time`: the estimated step from bytes read, flops and collectives (no jax);
- :mod:`.plan`: one strategy compiled on a target and read into a ``ServingResult``;
- :mod:`.compare`: ``sv.compare(..., mode="decode" | "prefill")``;
- :mod:`.slices`: ``sv.smallest_slice``.

This package's ``__init__`` imports nothing, so the zoo may import from it without a cycle.
"""
