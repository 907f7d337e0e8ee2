"""``nbdist keys new DIR``: make a cluster's secrets, one set per cluster.

Writes ``DIR/cluster.key`` (the signing key, hex) and ``DIR/curve.key_secret`` (the CURVE
keypair), each of mode 0600 in a directory of mode 0700, and prints how to use them. Copy
the directory to every host and client of the cluster over a secure channel (scp); never put
a key on a command line, where every user of the machine sees it in ``/proc/*/cmdline``.
"""

import argparse
import shlex
import sys


def main(argv=None, prog="nbdist keys"):
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="action", required=True, metavar="new")
    new = sub.add_parser("new", help="write a new cluster key and CURVE keypair into DIR")
    new.add_argument("dir", metavar="DIR", help="the directory to write them into (made if missing)")
    args = parser.parse_args(argv)

    from nbdist.runtime.net import security  # noqa: PLC0415 - fast --help

    try:
        paths = security.new_cluster_keys(args.dir)
    except OSError as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 1
    print(f"export {security.KEY_FILE_ENV}={shlex.quote(paths['signing'])}")
    if "curve" in paths:
        print(f"export {security.CURVE_KEY_FILE_ENV}={shlex.quote(paths['curve'])}")
    else:
        print("# no CURVE keypair: this ZeroMQ has no CURVE support (messages are signed, not encrypted)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
