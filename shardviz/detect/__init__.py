"""Findings: what is wrong with a sharded program, read from its report (no jax here).

:func:`candidates` runs every detector; ``shardviz.capture.fix_check`` tries each fix by
compiling again. The detectors read the model only, so they are tested on hand-built reports.
"""

from shardviz.detect.candidate import Candidate as Candidate
from shardviz.detect.detect import DETECTORS as DETECTORS
from shardviz.detect.detect import candidates as candidates
from shardviz.detect.facts import Facts as Facts
from shardviz.detect.facts import Remat as Remat
