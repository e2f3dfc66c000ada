"""A plan search's view: what it shows (:mod:`.view`), as text (:mod:`.text`) and HTML
(:mod:`.html`).
"""
