"""The plan search: :func:`~.suggestions.suggest` (:mod:`.suggestions`), what it searches over
(:mod:`.inputs`, :mod:`.rules`), how it ranks (:mod:`.rank`) and what it reports while it runs
(:mod:`.progress`)."""
