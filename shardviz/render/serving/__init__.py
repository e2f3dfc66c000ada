"""Serving views: a comparison of serving strategies and the smallest slice, as words and
figures computed once (:mod:`.view`), text (:mod:`.text`) and HTML with a chart of memory and
throughput against batch (:mod:`.html`)."""
