"""The live training view: the widget and :func:`~.widget.live` (:mod:`.widget`), the run's thread
(:mod:`.run`), the step convention (:mod:`.steps`) and the memory panel's numbers
(:mod:`.memory`); what it shows (its readouts as view objects, the static charts) is the render
layer's :mod:`shardviz.render.live`."""
