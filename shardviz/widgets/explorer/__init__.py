"""The Explorer widget (:mod:`.widget`), its payload (:mod:`.payload`) and the diff between two
reports it shows (:mod:`.diff`)."""

from shardviz.moved import names_of

__getattr__ = names_of("shardviz.widgets.explorer.widget", __name__)
