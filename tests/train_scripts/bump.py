"""One update client: ``python bump.py TARGET UPDATES ROWS`` runs `UPDATES` times the counter's
``assign_add`` and the table's ``scatter_add`` of `reliability_scenarios.concurrent_updates`
through the master at TARGET (the cluster key from ``$NBDIST_CLUSTER_KEY``)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from reliability_scenarios import bump

bump(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
