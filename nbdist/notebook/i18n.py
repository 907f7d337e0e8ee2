# ruff: noqa: RUF001 - full-width punctuation is right in Chinese text, not a look-alike of ASCII
"""The words ``nbdist demo`` and its HTML report show, in English and in Chinese.

One table per language, one key per phrase; a phrase with ``{fields}`` is a `str.format`
template. The language is passed down (``lang="zh"``) to whatever draws or prints, never
set globally; `font_rc` gives the matplotlib settings a language's glyphs need, for an
``rc_context`` around the figures of that language only.

    text("zh", "cluster_ready", seconds=0.42, ps=1, workers=2)
    with matplotlib.rc_context(font_rc("zh")):
        fig = placement_chart.placement_figure(rows, lang="zh"); svg = figure_svg(fig)

Errors stay in English (they are quoted in issues and searched for).
"""

import os

LANGS = ("en", "zh")

STRINGS = {
    "en": {
        # console (nbdist demo)
        "cluster_ready": "cluster ready in {seconds:.2f} s: {ps} ps, {workers} workers",
        "training": "training",
        "trained": "{mode}: trained {steps} global steps in {seconds:.1f} s",
        "trained_rate": " ({rate:.1f} steps/s over the last {over} steps)",
        "trained_accuracy": "; accuracy {accuracy:.1%}",
        "steps_per_worker": "steps per worker: ",
        "report_written": "report: {path}",
        "cluster_stopped": "cluster stopped.",
        # the report: headings and facts labels
        "report_title": "nbdist demo · {mode}",
        "h_graph": "The partitioned graph",
        "h_placement": "Placement",
        "h_curves": "Loss curves per replica",
        "h_timeline": "Timeline of one step",
        "f_mode": "mode",
        "f_cluster": "cluster",
        "f_training": "training",
        "f_rate": "steps/s",
        "f_accuracy": "accuracy",
        "f_traced": "traced step",
        "f_options": "options",
        # the report's charts
        "c_params": "parameters held (bytes)",
        "c_wire": "bytes per step over the wire",
        "c_sent": "sent",
        "c_received": "received",
        "c_no_device": "no device",
        "c_loss": "loss per replica",
        "c_rate": "steps/s per worker",
        "c_staleness": "staleness of applied gradients (async)",
        "c_dropped": "dropped stale gradients (sync, cumulative)",
        "c_time": "time (s)",
        "c_global_step": "global step",
        "c_waiting": "waiting for metrics…\ntf.report(step=..., loss=...)",
    },
    "zh": {
        "cluster_ready": "集群已就绪，用时 {seconds:.2f} 秒：{ps} 个参数服务器，{workers} 个工作节点",
        "training": "训练中",
        "trained": "{mode}：训练了 {steps} 个全局步，用时 {seconds:.1f} 秒",
        "trained_rate": "（最近 {over} 步每秒 {rate:.1f} 步）",
        "trained_accuracy": "；准确率 {accuracy:.1%}",
        "steps_per_worker": "每个工作节点的步数：",
        "report_written": "报告：{path}",
        "cluster_stopped": "集群已停止。",
        "report_title": "nbdist 演示 · {mode}",
        "h_graph": "切分后的计算图",
        "h_placement": "设备放置",
        "h_curves": "各副本的损失曲线",
        "h_timeline": "单步时间线",
        "f_mode": "模式",
        "f_cluster": "集群",
        "f_training": "训练",
        "f_rate": "每秒步数",
        "f_accuracy": "准确率",
        "f_traced": "追踪的一步",
        "f_options": "选项",
        "c_params": "持有的参数（字节）",
        "c_wire": "每步经网络传输的字节",
        "c_sent": "发送",
        "c_received": "接收",
        "c_no_device": "无设备",
        "c_loss": "各副本的损失",
        "c_rate": "各工作节点每秒步数",
        "c_staleness": "所应用梯度的陈旧度（异步）",
        "c_dropped": "丢弃的陈旧梯度（同步，累计）",
        "c_time": "时间（秒）",
        "c_global_step": "全局步",
        "c_waiting": "等待指标…\ntf.report(step=..., loss=...)",
    },
}

# Fonts with CJK glyphs, first found first (Debian: fonts-wqy-microhei, fonts-noto-cjk); DejaVu
# Sans last, for what they lack. No such font installed: matplotlib warns "Glyph ... missing".
_CJK_FONTS = ["WenQuanYi Micro Hei", "Noto Sans CJK SC", "Noto Sans SC", "Source Han Sans SC", "DejaVu Sans"]

# The report's CSS font stack per language (the browser picks from the fonts it has).
CSS_FONTS = {
    "en": '"DejaVu Sans", sans-serif',
    "zh": '"DejaVu Sans", "WenQuanYi Micro Hei", "Noto Sans CJK SC", "Noto Sans SC", sans-serif',
}


def text(lang, key, **fields):
    """The phrase `key` in `lang` (``"en"`` or ``"zh"``), its ``{fields}`` filled in.

    Raises:
        ValueError: `lang` is not one of `LANGS`.
        KeyError: no phrase `key` (every language has every key: tests/test_i18n.py).
    """
    if lang not in STRINGS:
        raise ValueError(f"lang {lang!r} is not one of {LANGS}; pass --lang en or --lang zh")
    phrase = STRINGS[lang][key]
    return phrase.format(**fields) if fields else phrase


def default_lang(environ=None):
    """``"zh"`` when ``$LANG`` starts with ``zh`` (``zh_CN.UTF-8``, ``zh_TW``...), else ``"en"``."""
    environ = os.environ if environ is None else environ
    return "zh" if environ.get("LANG", "").lower().startswith("zh") else "en"


def font_rc(lang):
    """matplotlib rc settings under which `lang`'s glyphs render (for `matplotlib.rc_context`)."""
    if lang == "zh":
        return {"font.family": "sans-serif", "font.sans-serif": _CJK_FONTS, "axes.unicode_minus": False}
    return {}
