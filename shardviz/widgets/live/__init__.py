"""The live training view: the widget and :func:`~.widget.live` (:mod:`.widget`), the run's thread
(:mod:`.run`), the step convention (:mod:`.steps`), the static charts (:mod:`.svg`), the memory panel
(:mod:`.memory`), the numbers (:mod:`.format`) and the words and scales (:mod:`.readouts`)."""
