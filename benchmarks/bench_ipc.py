"""TCP loopback vs ``ipc://`` between two processes: is a same-host transport worth having?

    python benchmarks/bench_ipc.py [--rounds 15] [--n 500]

A child process serves a ZeroMQ REP socket bound on both ``tcp://127.0.0.1:PORT`` and an
``ipc://`` path in a private directory; the parent measures, in alternating rounds (so both
transports see the same background load), the median small round trip (1 byte) and the time
to receive a 64 MiB reply (zero-copy send, ``np.frombuffer`` on receipt). Prints the medians
and the ratio ipc / tcp. Every wait is bounded; the child is killed by PID.
"""

import argparse
import os
import select
import subprocess
import sys
import tempfile
import time

import numpy as np
import zmq

MB64 = 64 * 2**20
_SERVER = r"""
import sys, zmq, numpy as np
ctx = zmq.Context(); s = ctx.socket(zmq.REP)
s.bind(sys.argv[1]); s.bind(sys.argv[2])
big = np.ones(%d // 4, np.float32)
print("ready", flush=True)
while True:
    m = s.recv()
    if m == b"big": s.send(big, copy=False)
    elif m == b"quit": s.send(b""); break
    else: s.send(m)
"""


def _free_port():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _median(fn, n):
    fn()
    samples = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t)
    return float(np.median(samples))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--n", type=int, default=500, help="round trips per round")
    args = parser.parse_args()
    tmp = tempfile.mkdtemp(prefix="nbdist-ipc-bench-")
    os.chmod(tmp, 0o700)
    endpoints = {"tcp": f"tcp://127.0.0.1:{_free_port()}", "ipc": f"ipc://{tmp}/s"}
    proc = subprocess.Popen(
        [sys.executable, "-c", _SERVER % MB64, endpoints["tcp"], endpoints["ipc"]],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        ready, _, _ = select.select([proc.stdout], [], [], 30)
        if not ready or not proc.stdout.readline().startswith("ready"):
            raise RuntimeError("the echo server did not start in 30 s")
        ctx = zmq.Context.instance()
        socks = {}
        for name, endpoint in endpoints.items():
            s = socks[name] = ctx.socket(zmq.REQ)
            s.setsockopt(zmq.LINGER, 0)
            s.setsockopt(zmq.RCVTIMEO, 30000)
            s.connect(endpoint)
        results = {name: {"rtt": [], "big": []} for name in endpoints}
        for _ in range(args.rounds):
            for name, s in socks.items():

                def rtt(s=s):
                    s.send(b"x")
                    s.recv()

                def big(s=s):
                    s.send(b"big")
                    np.frombuffer(s.recv(copy=False).buffer, np.float32)

                results[name]["rtt"].append(_median(rtt, args.n))
                results[name]["big"].append(_median(big, 3))
        for s in socks.values():
            s.close()
    finally:
        proc.kill()
        proc.wait(5)
        for f in os.listdir(tmp):
            os.unlink(os.path.join(tmp, f))
        os.rmdir(tmp)
    rtt = {k: float(np.median(v["rtt"])) for k, v in results.items()}
    big = {k: float(np.median(v["big"])) for k, v in results.items()}
    print(f"median of {args.rounds} alternating rounds ({args.n} round trips, 3 64 MiB replies each)")
    print("| transport | small round trip | 64 MiB reply |")
    print("|---|---|---|")
    for k in endpoints:
        print(f"| {k} | {rtt[k] * 1e6:.1f} us | {big[k] * 1e3:.1f} ms ({MB64 / big[k] / 1e9:.2f} GB/s) |")
    print(f"ipc / tcp: round trip {rtt['ipc'] / rtt['tcp']:.2f}, 64 MiB {big['ipc'] / big['tcp']:.2f}")


if __name__ == "__main__":
    main()
