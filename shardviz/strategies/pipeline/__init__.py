"""Pipeline parallelism: the GSPMD pipeline (:mod:`.gspmd`), the schedule plan (:mod:`.plan`) and
the shard_map pipeline (:mod:`.shard_map`), what both share (:mod:`.stages`) and their rule sets
(:mod:`.rule_sets`)."""

from shardviz.moved import names_of

__getattr__ = names_of(
    (
        "shardviz.strategies.pipeline.gspmd",
        "shardviz.strategies.pipeline.rule_sets",
        "shardviz.strategies.pipeline.stages",
    ),
    __name__,
)
