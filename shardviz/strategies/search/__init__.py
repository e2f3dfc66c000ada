"""The plan search: :func:`~.suggestions.suggest` (:mod:`.suggestions`), what it searches over
(:mod:`.inputs`; a plan as a rule set: :mod:`shardviz.strategies.rules.plans`), how it ranks
(:mod:`.rank`) and what it reports while it runs (:mod:`.progress`)."""
