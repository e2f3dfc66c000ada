"""A comparison's view: what it shows (:mod:`.view`), as text (:mod:`.text`), HTML (:mod:`.html`),
plotly (:mod:`.plotly`) and matplotlib (:mod:`.mpl`).
"""
