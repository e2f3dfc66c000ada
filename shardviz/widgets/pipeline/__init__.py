"""The pipeline Explorer's parts: its session (:mod:`.session`), controls (:mod:`.controls`), the
checks on them (:mod:`.checks`) and the schedule pane (:mod:`.pane`).
"""
