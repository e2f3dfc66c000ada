"""The application: :func:`~shardviz.explain` (:mod:`.explain`), :func:`~shardviz.diagnose`
(:mod:`.diagnose`), what the detectors read from a compiled program (:mod:`.detector_inputs`),
fix trials (:mod:`.fix_apply`, :mod:`.fix_check`) and background work (:mod:`.background`).

It joins the layers: capture (jax) below, analysis (model in, model out) beside it. The
package is not named ``explain`` so that importing it never hides :func:`shardviz.explain`.
"""
