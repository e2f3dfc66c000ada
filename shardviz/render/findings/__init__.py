"""The findings' view: what they show (:mod:`.view`), as text (:mod:`.text`) and HTML
(:mod:`.html`).
"""
