"""docs/api.md is what `docs/gen_api.py` writes from the facade - its coverage table against the
installed TensorFlow included (CI has TF): a name added, or a test that calls one, without
regenerating the page fails here."""

import subprocess
import sys

from procs import REPO


def test_docs_api_md_is_up_to_date():
    out = subprocess.run(
        [sys.executable, "docs/gen_api.py", "--check"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert out.returncode == 0, out.stderr[-2000:] + "\nrun: python docs/gen_api.py"
