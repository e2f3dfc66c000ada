"""The Explorer widget (:mod:`.widget`), its payload (:mod:`.payload`) and the diff between two
reports it shows (:mod:`.diff`)."""
