"""A training run as one self-contained HTML file: graph, placement, loss curves, one step's timeline.

Pure like `nbdist.notebook.render`: data in, an HTML string out; every picture comes from the
same drawing code the widgets use (`render.draw_graph`, `placement_chart.placement_figure`,
`dashboard_plot.dashboard_figure`, `trace.timeline_svg`) and is inlined as SVG, so the file opens
anywhere, copied alone, with no network and no other file. ``nbdist demo`` writes it.

    html_text = run_report_html(run_metadata, history, title="nbdist demo", facts={"mode": "async"})
    Path("report.html").write_text(html_text)

Without Graphviz's `dot` the graph section says how to install it (and carries the DOT
source); everything else is drawn by matplotlib and by hand-written SVG.
"""

import html
import io

from nbdist.notebook import dashboard_plot, i18n, placement_chart, render, trace

_CSS = """
body { font-family: FONTS; margin: 24px auto; max-width: 1200px; color: #222; }
h1 { font-size: 22px; } h2 { font-size: 17px; margin-top: 28px; border-bottom: 1px solid #ddd; }
p.what { color: #555; font-size: 13px; max-width: 900px; }
table.nbdist-facts td { padding: 2px 12px 2px 0; font-size: 13px; vertical-align: top; }
.nbdist-picture { overflow: auto; border: 1px solid #ddd; padding: 4px; }
.nbdist-picture svg { max-width: 100%; height: auto; }
"""


_HTML_LANG = {"en": "en", "zh": "zh-Hans"}


def _chart_svg(make_figure, lang):
    """The ``<svg>`` of the Figure `make_figure()` draws, made and drawn with `lang`'s fonts."""
    import matplotlib  # noqa: PLC0415 - matplotlib is imported only when drawing

    with matplotlib.rc_context(i18n.font_rc(lang)):
        return figure_svg(make_figure())


def figure_svg(fig):
    """The ``<svg>`` element of a matplotlib Figure (no XML prolog, no DOCTYPE: inlinable)."""
    buf = io.StringIO()
    fig.savefig(buf, format="svg")
    text = buf.getvalue()
    return text[text.find("<svg") :]


def _section(title, what, body, css_class):
    return (
        f'<section class="{css_class}"><h2>{html.escape(title)}</h2>'
        f'<p class="what">{what}</p>{body}</section>'
    )


def _graph_section(run_metadata, lang):
    drawing = render.draw_graph(run_metadata)
    if drawing.svg is not None:
        body = f'<div class="nbdist-picture nbdist-graph">{render.fit_to_width(drawing.svg)}</div>'
    else:  # no `dot` (or too large): the install hints and the DOT source, from render
        body = f'<div class="nbdist-graph">{drawing.html}</div>'
    what = (
        "The placed &amp; partitioned graph of the traced step: one box and one colour per task, each "
        "name scope collapsed into one box with its number of ops. Each red edge carries tensors sent "
        "from one task to another (<code>_Send</code>/<code>_Recv</code> pairs the master inserted); one "
        "label per pair of tasks gives what crosses between them in all: tensors and bytes measured."
    )
    return _section(i18n.text(lang, "h_graph"), what, body, "nbdist-report-graph")


def _placement_section(run_metadata, lang):
    rows = placement_chart.placement_summary(run_metadata)
    chart = _chart_svg(lambda: placement_chart.placement_figure(rows, lang=lang), lang)
    table = placement_chart.placement_html(rows)
    body = f'{table}<div class="nbdist-picture nbdist-placement-chart">{chart}</div>'
    what = "Which task holds which variables, runs how many ops, and sends how many bytes per step."
    return _section(i18n.text(lang, "h_placement"), what, body, "nbdist-report-placement")


def _curves_section(history, lang):
    chart = _chart_svg(lambda: dashboard_plot.dashboard_figure(history, lang=lang), lang)
    what = (
        "Loss per replica as reported during training (one line per worker task), the global step, "
        "and each worker's steps per second."
    )
    body = f'<div class="nbdist-picture nbdist-loss">{chart}</div>'
    return _section(i18n.text(lang, "h_curves"), what, body, "nbdist-report-curves")


def _timeline_section(run_metadata, lang):
    events = trace.step_events(run_metadata)
    what = (
        "One traced step, one band per task: grey bars are service calls (<code>RunStep</code> at the "
        "master, <code>RunGraph</code> at each worker service), coloured bars are ops, red arrows join "
        "each <code>_Send</code> to its <code>_Recv</code>. Hover a bar for its name and duration."
    )
    body = f'<div class="nbdist-picture nbdist-timeline">{trace.timeline_svg(events)}</div>'
    return _section(i18n.text(lang, "h_timeline"), what, body, "nbdist-report-timeline")


def run_report_html(run_metadata, history, title="nbdist run", facts=None, lang="en"):
    """The report of a run as one HTML document (a str) with every picture inline.

    Args:
        run_metadata: a `tf.RunMetadata` of one ``FULL_TRACE`` step of a distributed session
            (it holds the partition graphs and the step's timings).
        history: a `metrics_history.MetricsHistory` of the run's ``metric`` events (loss per replica).
        title: the page's heading.
        facts: ``{label: value}`` shown as a table under the title (mode, cluster, speed, ...).
        lang: the language of the headings and the charts' titles and labels (`i18n.LANGS`);
            the explanations under the headings stay in English.

    Raises:
        ValueError: `run_metadata` holds no partition graphs or no trace (see `graph_model`).
    """
    rows = "".join(
        f"<tr><td><b>{html.escape(str(k))}</b></td><td>{html.escape(str(v))}</td></tr>"
        for k, v in (facts or {}).items()
    )
    sections = [
        _graph_section(run_metadata, lang),
        _placement_section(run_metadata, lang),
        _curves_section(history, lang),
        _timeline_section(run_metadata, lang),
    ]
    css = _CSS.replace("FONTS", i18n.CSS_FONTS[lang])
    return (
        f'<!DOCTYPE html>\n<html lang="{_HTML_LANG[lang]}"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title><style>{css}</style></head>"
        f'<body><h1>{html.escape(title)}</h1><table class="nbdist-facts">{rows}</table>'
        f"{''.join(sections)}</body></html>\n"
    )
