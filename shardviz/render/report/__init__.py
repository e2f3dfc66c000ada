"""A report's view: what it shows, computed once (:mod:`.view`), as text (:mod:`.text`) and HTML
(:mod:`.html`).
"""
