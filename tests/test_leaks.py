"""No leaks, no lost updates, on real clusters (short, bounded versions of the soaks that
``benchmarks/reliability.py`` runs at full length): `reliability_scenarios` holds the scenarios.

- training steps keep every server's threads, sockets and registered partitions bounded and
  its RSS flat (a loose bound here; the benchmark reports the slope per 1,000 steps);
- starting and stopping a `LocalCluster` leaves no process, thread, socket or temp file;
- concurrent clients lose no `assign_add` and no `scatter_add` on one ps's variables.
"""

import pytest

import reliability_scenarios as scenarios

pytestmark = pytest.mark.slow


def test_training_steps_keep_every_server_bounded():
    result = scenarios.soak(steps=1500, sample_every=100, warmup_steps=300, session_every=500)
    assert result["final_step"] == 1500
    for task, growth in result["growth"].items():
        assert growth["threads"] <= 2, (task, growth)
        assert growth["sockets"] <= 2, (task, growth)
        assert growth["max_graphs_registered"] <= 4, (task, growth)  # a closed session frees its partitions
        # 1,200 sampled steps: a leak of a few hundred bytes per step would show; allocator noise
        # on a loaded machine stays well under this.
        assert growth["rss_bytes"] < 8 * 2**20, (task, growth)


def test_starting_and_stopping_a_cluster_leaves_nothing(tmp_path):
    result = scenarios.start_stop_rounds(rounds=4, temp_dir=tmp_path)
    assert result["leftover"] == {"processes": 0, "threads": 0, "sockets": 0, "temp_files": []}


def test_concurrent_clients_lose_no_update():
    result = scenarios.concurrent_updates(clients=8, updates=60)
    assert result["lost_assign_add"] == 0, result
    assert result["lost_scatter_add"] == 0, result
    assert result["rows_exact"], result
