"""Findings: what is wrong with a sharded program, read from its report (no jax here).

:func:`candidates` runs every detector; ``shardviz.explainer.fix_check`` tries each fix by
compiling again. The detectors read the model only, so they are tested on hand-built reports.
"""

from shardviz.analysis.detect.candidate import Candidate as Candidate
from shardviz.analysis.detect.detect import DETECTORS as DETECTORS
from shardviz.analysis.detect.detect import candidates as candidates
from shardviz.analysis.detect.inputs import CompilerEvidence as CompilerEvidence
from shardviz.analysis.detect.inputs import Remat as Remat
