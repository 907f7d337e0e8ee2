"""``nbdist export --tf MODEL.py --out DIR [--checkpoint PATH]``: a model built by an nbdist
script, written for real TensorFlow as a MetaGraph and a TensorFlow checkpoint.

MODEL.py runs with ``__name__ == "nbdist_export"`` (so its ``if __name__ == "__main__":``
training loop does not) and builds its graph in the default graph. The command exports that
graph (`to_tensorflow`), with the variables' values from ``--checkpoint`` (an nbdist
checkpoint prefix, or a directory: its latest checkpoint), and writes:

- ``DIR/model.meta``: TensorFlow's MetaGraphDef (ops, devices, variable collections, a Saver);
- ``DIR/model.index`` / ``.data-*``: a TensorFlow checkpoint of the values (with ``--checkpoint``).

In TensorFlow::

    saver = tf1.train.import_meta_graph("DIR/model.meta")   # clear_devices=True on one machine
    saver.restore(sess, "DIR/model")
"""

import argparse
import os
import runpy
import sys


def main(argv=None, prog="nbdist export"):
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0])
    parser.add_argument("--tf", metavar="MODEL.py", required=True, help="the script that builds the graph")
    parser.add_argument(
        "--out", required=True, help="the directory to write model.meta (and the checkpoint) to"
    )
    parser.add_argument(
        "--checkpoint", help="an nbdist checkpoint prefix or directory: the variables' values"
    )
    parser.add_argument("--keep", nargs="*", help="export only what these ops or tensors need")
    parser.add_argument("--clear-devices", action="store_true", help="drop the requested devices")
    args = parser.parse_args(argv)

    from nbdist.export.to_tf import to_tensorflow  # noqa: PLC0415 - TensorFlow loads only when run
    from nbdist.graph.graph import get_default_graph, reset_default_graph  # noqa: PLC0415
    from nbdist.train.checkpoint_management import latest_checkpoint  # noqa: PLC0415

    checkpoint = args.checkpoint
    if checkpoint and os.path.isdir(checkpoint):
        checkpoint = latest_checkpoint(checkpoint)
        if checkpoint is None:
            parser.error(f"--checkpoint {args.checkpoint!r}: the directory holds no nbdist checkpoint")
    reset_default_graph()
    runpy.run_path(args.tf, run_name="nbdist_export")
    graph = get_default_graph()
    if not graph.get_operations():
        parser.error(f"--tf {args.tf!r} built no ops in the default graph")
    exported = to_tensorflow(graph, checkpoint=checkpoint, keep=args.keep, clear_devices=args.clear_devices)
    os.makedirs(args.out, exist_ok=True)
    prefix = os.path.join(args.out, "model")
    meta = exported.export_meta_graph(prefix + ".meta")
    print(f"wrote {meta}: {len(exported.graph.get_operations())} ops, {len(exported.variables)} variables")
    if exported.values:
        print(f"wrote {exported.save(prefix)}: the values of {len(exported.values)} variables")
    return 0


if __name__ == "__main__":
    sys.exit(main())
