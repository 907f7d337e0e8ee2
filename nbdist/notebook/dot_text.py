"""DOT text: quoted strings, attribute lists and HTML-like labels, as every drawn graph writes them."""

import html


def dot_quote(text):
    """A DOT double-quoted string; newlines become centred line breaks."""
    return '"' + str(text).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


class HtmlLabel(str):
    """A DOT HTML-like label (written ``<...>``, not quoted)."""


def dot_attrs(**kw):
    """A DOT attribute list; ``class_`` may stand for ``class``."""
    return "[" + ", ".join(f"{k.rstrip('_')}={_value(v)}" for k, v in kw.items()) + "]"


def _value(v):
    return f"<{v}>" if isinstance(v, HtmlLabel) else dot_quote(v)


def padded_label(text):
    """`text` as an HTML-like label with a margin of 2 points, so that the labels Graphviz places
    side by side keep apart however the browser measures the font."""
    lines = "<BR/>".join(html.escape(line) for line in text.split("\n"))
    table = '<TABLE BORDER="0" CELLBORDER="0" CELLPADDING="2" CELLSPACING="0">'
    return HtmlLabel(f"{table}<TR><TD>{lines}</TD></TR></TABLE>")
