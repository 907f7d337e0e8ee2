"""Sniffs one interface of this network namespace (a raw AF_PACKET socket) until stdin closes.

    python sniff.py IFACE PATTERN_HEX MAX_SECONDS

Prints ``sniffing`` once capturing, then at the end one JSON line: ``{"packets", "nbytes",
"found"}``: how much it saw and whether PATTERN (a known byte run of a fed tensor) was in any
packet. Needs CAP_NET_RAW.
"""

import json
import select
import socket
import sys
import time

ETH_P_ALL = 0x0003


def main():
    iface, pattern, max_s = sys.argv[1], bytes.fromhex(sys.argv[2]), float(sys.argv[3])
    sniffer = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    sniffer.bind((iface, 0))
    print("sniffing", flush=True)
    packets = nbytes = 0
    found = False
    deadline = time.monotonic() + max_s
    done = False
    while not done and time.monotonic() < deadline:
        ready, _, _ = select.select([sniffer, sys.stdin], [], [], 0.1)
        done = sys.stdin in ready and not sys.stdin.readline()  # closed: the traffic is over
        while True:  # (drains what arrived before stdin closed too)
            try:
                frame = sniffer.recv(65536, socket.MSG_DONTWAIT)
            except BlockingIOError:
                break
            packets += 1
            nbytes += len(frame)
            found = found or pattern in frame
    print(json.dumps({"packets": packets, "nbytes": nbytes, "found": found}), flush=True)


if __name__ == "__main__":
    main()
