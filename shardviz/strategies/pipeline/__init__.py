"""Pipeline parallelism: the GSPMD pipeline (:mod:`.gspmd`), the schedule plan (:mod:`.plan`) and
the shard_map pipeline (:mod:`.shard_map`), what both share (:mod:`.stages`) and their rule sets
(:mod:`shardviz.strategies.rules.pipeline`)."""
