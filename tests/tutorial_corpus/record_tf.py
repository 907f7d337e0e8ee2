"""Records real TensorFlow's results for the tutorial-style corpus into tf_outputs.json.

    .venv/bin/python tests/tutorial_corpus/record_tf.py [program.py ...]

Runs each program (all of `corpus.PROGRAMS`, or those named) under real TF (``--tf``), and
writes its result keyed by the program file's sha256 and the TF version, so that
tests/test_tutorial_corpus.py compares nbdist's run with it without starting TensorFlow. Run
it after changing a program and commit the JSON; the test re-runs TF itself (comparing only,
writing nothing) for a program whose hash or TF version does not match the record.
"""

import json
import sys
import tempfile
import time

import corpus


def main(names):
    version = corpus.tf_version()
    if version is None:
        sys.exit("record_tf.py needs the tensorflow package (pip install -e '.[tf]')")
    recorded = json.loads(corpus.OUTPUTS.read_text()) if corpus.OUTPUTS.exists() else {"programs": {}}
    for name in names or sorted(corpus.PROGRAMS):
        started = time.monotonic()
        with tempfile.TemporaryDirectory() as log_dir:
            result = corpus.run(name, "tf", log_dir)
        recorded["programs"][name] = {"sha256": corpus.sha256(name), "tensorflow": version, "result": result}
        print(f"{name}: {time.monotonic() - started:.1f} s, {json.dumps(result['chief'])[:300]}", flush=True)
    recorded["programs"] = dict(sorted(recorded["programs"].items()))
    corpus.OUTPUTS.write_text(json.dumps(recorded, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
