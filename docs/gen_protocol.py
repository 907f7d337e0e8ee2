"""Writes docs/protocol.md's message tables from `nbdist.runtime.protocol`, the one place
messages are defined.

    python docs/gen_protocol.py           # rewrite the tables in docs/protocol.md
    python docs/gen_protocol.py --check   # exit 1 if they are out of date

Only the text between the ``<!-- protocol.py: SERVICE -->`` and ``<!-- end -->`` markers is
written; everything else in docs/protocol.md is prose kept by hand.
"""

import argparse
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from nbdist.runtime import protocol  # noqa: E402 - after the path set-up: the checkout's protocol

DOC = ROOT / "docs" / "protocol.md"
_BLOCK = re.compile(r"(<!-- protocol\.py: (\w+) -->\n)(.*?)(<!-- end -->)", re.S)


def _reply(cls):
    if cls.REPLY is None:
        return "none (one-way)"
    return f"`{cls.REPLY.TYPE} {{{protocol.shown_fields(cls.REPLY).replace('`', '')}}}`"


def table(service):
    """The markdown table of `service`'s requests (``master``, ``worker``, ``server``, ``exec``
    or ``client``)."""
    replies = {c.REPLY for c in protocol.MESSAGES if c.REPLY is not None}
    requests = [c for c in protocol.MESSAGES if service == c.SERVICE and c not in replies]
    heading = "| message | body | reply |" if service == "client" else "| request | body | reply |"
    rows = [heading, "|---|---|---|"]
    for cls in requests:
        body = protocol.shown_fields(cls) or "(empty)"
        if cls.NOTE:
            body += f" ({cls.NOTE})"
        rows.append(f"| `{cls.TYPE}` | {body} | {_reply(cls) if service != 'client' else '—'} |")
    return "\n".join(rows) + "\n"


def render(text):
    def block(m):
        return m.group(1) + table(m.group(2)) + m.group(4)

    return _BLOCK.sub(block, text)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if docs/protocol.md is out of date")
    args = parser.parse_args(argv)
    text = DOC.read_text()
    new = render(text)
    if args.check:
        if new != text:
            print("docs/protocol.md's message tables are out of date: run python docs/gen_protocol.py")
            return 1
        return 0
    DOC.write_text(new)
    print("wrote", DOC.relative_to(ROOT))
    return 0


if __name__ == "__main__":
    sys.exit(main())
