"""``nbdist COMMAND`` (the console script) and ``python -m nbdist COMMAND``.

Commands:
    demo    a local cluster trains a model; writes an HTML report (``nbdist demo --help``)
    export  a model built by an nbdist script, for real TensorFlow (``nbdist export --help``)
    k8s     Kubernetes manifests for a ps/worker cluster (``nbdist k8s --help``)
    keys    ``nbdist keys new DIR``: a cluster's signing key and CURVE keypair
    server  one task of a cluster (``python -m nbdist.server``; ``nbdist server --help``)
"""

import argparse
import sys

_COMMANDS = {
    "demo": "start a local cluster, train a model across it, write an HTML report, stop the cluster",
    "export": "write a model built by an nbdist script as a TensorFlow MetaGraph and checkpoint (--tf)",
    "k8s": "write Kubernetes manifests (Services, StatefulSets, the key's Secret) for a ps/worker cluster",
    "keys": "`keys new DIR`: write a cluster's signing key and CURVE keypair (mode 0600)",
    "server": "serve one task of a cluster on this host (as python -m nbdist.server)",
}


def main(argv=None):
    """Dispatches to a command's own `main`; returns the exit code."""
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = argparse.ArgumentParser(
        prog="nbdist",
        description="nbdist: TensorFlow 1.x's distributed programming model on numpy + ZeroMQ.",
        epilog="commands:\n"
        + "\n".join(f"  {name:8}{text}" for name, text in _COMMANDS.items())
        + "\n\n`nbdist COMMAND --help` describes a command's options.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("command", choices=sorted(_COMMANDS), help="what to run (see below)")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="the command's own options")
    if not argv:
        parser.print_help()
        return 2
    ns = parser.parse_args(argv[:1])  # only the command: its options are its own parser's
    if ns.command == "export":
        from nbdist.export import cli  # noqa: PLC0415 - loads TensorFlow only when run

        return cli.main(argv[1:], prog="nbdist export")
    if ns.command == "k8s":
        from nbdist import k8s  # noqa: PLC0415 - each command loads only what it needs

        return k8s.main(argv[1:], prog="nbdist k8s")
    if ns.command == "server":
        from nbdist import server  # noqa: PLC0415

        return server.run(argv[1:], prog="nbdist server")  # exits the process when the server stops
    if ns.command == "keys":
        from nbdist import keys  # noqa: PLC0415

        return keys.main(argv[1:], prog="nbdist keys")
    from nbdist import demo  # noqa: PLC0415 - loads the runtime and notebook layers only when run

    return {"demo": demo.main}[ns.command](argv[1:], prog=f"nbdist {ns.command}")


if __name__ == "__main__":
    sys.exit(main())
