"""tests/tf_style/*_test.py are TF-style files run as subprocesses (tests/test_tf_style.py), not collected."""

collect_ignore_glob = ["*_test.py"]
