"""A pipeline schedule as text (:mod:`.text`), HTML (:mod:`.html`), plotly (:mod:`.plotly`) and
matplotlib (:mod:`.mpl`).
"""
