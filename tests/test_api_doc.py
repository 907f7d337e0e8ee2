"""docs/api.md is what `docs/gen_api.py` writes from the facade - its coverage table against the
installed TensorFlow included (CI has TF): a name added, or a test that calls one, without
regenerating the page fails here. Rendered in this process (TensorFlow is loaded once, by the
`tf1` fixture the parity tests share)."""

import importlib.util

from procs import REPO


def test_docs_api_md_is_up_to_date(tf1):
    spec = importlib.util.spec_from_file_location("gen_api", f"{REPO}/docs/gen_api.py")
    gen_api = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen_api)
    text = gen_api.render()
    assert gen_api.OUT.read_text(encoding="utf-8") == text, (
        "docs/api.md is out of date: run python docs/gen_api.py"
    )
