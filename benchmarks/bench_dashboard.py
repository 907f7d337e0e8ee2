"""What a live dashboard picture costs: simulated reports from two workers, a picture every
half second of simulated time, as `tf.Dashboard` draws them (`dashboard_plot.DashboardPlot`), against
a fresh picture of the same data (what the dashboard drew before pictures were reused).

Reported: how many pictures were drawn whole and laid out afresh (the others redrew only
their lines), and the CPU time per live picture and per fresh one. No cluster: the picture
alone, on whatever else the machine runs.

    python benchmarks/bench_dashboard.py
    python benchmarks/bench_dashboard.py --rate 1200 --seconds 60
"""

import argparse
import statistics
import time

import numpy as np

from nbdist.notebook import dashboard_plot, metrics_history, png_writer


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=int, default=1200, help="reports a second per worker")
    parser.add_argument("--seconds", type=int, default=30, help="simulated training time")
    args = parser.parse_args()
    rng = np.random.RandomState(0)
    history, plot = metrics_history.MetricsHistory(), dashboard_plot.DashboardPlot()
    live, t0, i = [], 1000.0, 0
    for _ in range(2 * args.seconds):
        for _ in range(args.rate // 2):
            for k in range(2):
                metrics = {
                    "loss": 2.0 * np.exp(-i / 8000) + 0.05 * rng.rand(),
                    "staleness": int(rng.randint(0, 3)),
                }
                history.add(
                    {
                        "kind": "metric",
                        "task": f"/job:worker/task:{k}",
                        "step": 2 * i + k,
                        "time": t0 + i / args.rate + k * 1e-4,
                        "metrics": {**metrics, "local_step": i + 1, "global_step": 2 * i + k},
                    }
                )
            i += 1
        started = time.process_time()
        plot.png(history, f"global step {2 * i} · {history.count} reports", final=False)
        live.append(time.process_time() - started)
    fresh = []
    for _ in range(3):
        started = time.process_time()
        png_writer.figure_png(dashboard_plot.dashboard_figure(history, title="fresh"))
        fresh.append(time.process_time() - started)
    print(
        f"{args.rate} reports/s per worker for {args.seconds} s: {plot.pictures} live pictures, "
        f"{plot.full_draws} drawn whole, {plot.layouts} laid out afresh"
    )
    print(
        f"live picture: mean {statistics.mean(live) * 1000:.0f} ms, median "
        f"{statistics.median(live) * 1000:.0f} ms CPU; a fresh picture of the same data: "
        f"{statistics.median(fresh) * 1000:.0f} ms"
    )


if __name__ == "__main__":
    main()
