"""The main job as a command: `nbdist demo` / `python -m nbdist demo` / `python -m nbdist.demo`.

Real clusters of server processes on 127.0.0.1, a real SIGINT to a real demo process, and the
HTML report checked for being self-contained (the browser check is test_browser_report.py).
"""

import html.parser
import importlib
import io
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import psutil
import pytest

from nbdist import demo
from procs import REPO, wait_gone

OPTIONS = [
    "--mode",
    "--backup-workers",
    "--workers",
    "--ps",
    "--steps",
    "--batch",
    "--seed",
    "--report",
    "--no-report",
    "--lang",
]


def server_children():
    """PIDs of this process's `nbdist.server` children (a LocalCluster's tasks)."""
    return [
        c.pid
        for c in psutil.Process().children(recursive=True)
        if "nbdist.server" in " ".join(c.cmdline()[:3])
    ]


def run_demo(argv, cwd):
    """`demo.main` in `cwd`; returns (exit code, everything it printed, bar included)."""
    out = io.StringIO()
    old = os.getcwd()
    os.chdir(cwd)
    try:
        code = demo.main(argv, out=out)
    finally:
        os.chdir(old)
    assert server_children() == [], "the demo left server processes"
    return code, out.getvalue()


class ExternalRefs(html.parser.HTMLParser):
    """Every attribute that could make a browser fetch something, and every tag that loads code."""

    def __init__(self):
        super().__init__()
        self.refs, self.tags = [], []

    def handle_starttag(self, tag, attrs):
        if tag in ("script", "link", "iframe", "object", "embed"):
            self.tags.append(tag)
        for name, value in attrs:
            if name in ("src", "href", "xlink:href", "srcset", "data") and value is not None:
                self.refs.append(value)


# What only a synchronous step runs: each gradient into its accumulator on the ps, a token from the queue.
SYNC_OPS = {"AccumulatorApplyGradient", "sync_token_q", "QueueDequeueV2"}


def traced_step(report, section):
    """Node names and op types drawn in one picture of the report's traced step."""
    picture = report.split(f'class="nbdist-picture {section}">', 1)[1].split("</svg>", 1)[0]
    return set(re.findall(r"[A-Za-z_][\w/]*", picture))


# -- no processes --------------------------------------------------------------------------------------
def test_help_describes_every_option_in_plain_text():
    text = demo.parser("nbdist demo").format_help()
    assert text.startswith("usage: nbdist demo")
    lines = text.splitlines()
    for option in OPTIONS:
        i = next(
            i
            for i, line in enumerate(lines)
            if line.strip().startswith(option + " ") or line.strip() == option
        )
        rest = re.sub(r"^\s*--[\w-]+( [A-Z{]\S*)?", "", lines[i]).strip() or lines[i + 1].strip()
        assert len(rest) > 10, f"{option} has no help text: {lines[i]!r}"
    assert "``" not in text and ":class:" not in text and "::" not in text  # no raw reStructuredText
    assert "{in-graph,async,sync}" in text


def test_the_step_rate_is_measured_over_more_than_one_step():
    rate = demo.StepRate(window=4)
    for t in (0.0, 5.0):  # the first step also ships the graph: no rate from it alone
        rate.step(t)
        assert rate.per_s is None
    for t in (5.5, 6.0, 6.5, 7.0, 7.5):
        rate.step(t)
    assert rate.per_s == pytest.approx(4 / 2.0)  # the last 4 steps, not the slow first one


def test_a_burst_of_steps_with_one_time_is_one_point_not_a_rate_of_millions():
    # Between-graph, a window's metric events arrive in one message; steps come 20 at a time,
    # all stamped with one time, every 0.2 s (100 steps/s).
    progress = demo.Progress(300, io.StringIO(), io.StringIO())
    for burst in range(15):
        for step in range(20 * burst + 1, 20 * burst + 21):
            progress.advance(step, when=1000.0 + 0.2 * burst)
    progress.close()
    assert progress.rate.per_s == pytest.approx(100.0)
    assert progress.rate.steps >= demo.RATE_WINDOW


def test_the_rate_uses_the_workers_time_stamps():
    progress = demo.Progress(300, io.StringIO(), io.StringIO())
    for step in range(1, 101):  # the events arrive together, stamped 10 ms apart by the worker
        progress.event(
            {
                "kind": "metric",
                "task": "/job:worker/task:0",
                "step": step,
                "time": 5.0 + step / 100,
                "metrics": {"loss": 1.0},
            }
        )
    progress.close()
    assert progress.rate.per_s == pytest.approx(100.0)


def test_console_script_and_module_entry_points():
    pyproject = (Path(REPO) / "pyproject.toml").read_text()  # (tomllib is Python 3.11+)
    target = re.search(r'^\[project\.scripts\][^\[]*^nbdist = "([\w.]+):(\w+)"', pyproject, re.M | re.S)
    assert target, "pyproject.toml declares no `nbdist` console script"
    entry = getattr(importlib.import_module(target.group(1)), target.group(2))
    assert entry is importlib.import_module("nbdist.__main__").main
    assert re.search(r'^    "tqdm>=', pyproject, re.M)
    for argv in (["-m", "nbdist", "demo", "--help"], ["-m", "nbdist.demo", "--help"]):
        proc = subprocess.run(
            [sys.executable, *argv], capture_output=True, text=True, timeout=60, check=False, cwd=REPO
        )
        assert proc.returncode == 0 and "--no-report" in proc.stdout, proc.stderr
    proc = subprocess.run(
        [sys.executable, "-m", "nbdist", "dmeo"], capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 2 and "invalid choice: 'dmeo'" in proc.stderr


def refused(argv, tmp_path, capsys):
    """`demo.main(argv)` must exit 2 before starting a cluster; returns what it printed to stderr."""
    with pytest.raises(SystemExit) as exit_info:
        run_demo(argv, tmp_path)  # (before the checks: it trained, then failed or succeeded)
    assert exit_info.value.code == 2
    assert list(tmp_path.iterdir()) == []
    return capsys.readouterr().err


def test_a_report_path_in_a_missing_folder_is_refused_before_training(tmp_path, capsys):
    err = refused(["--steps", "1", "--workers", "1", "--report", "/nonexistent/dir/r.html"], tmp_path, capsys)
    assert "usage: " in err and "cluster ready" not in err
    assert "--report '/nonexistent/dir/r.html': its folder '/nonexistent/dir' does not exist" in err
    assert "create it first (mkdir -p), choose another path, or pass --no-report" in err


def test_a_report_path_that_is_a_folder_is_refused_before_training(tmp_path, capsys):
    (tmp_path / "out").mkdir()
    err = refused(
        ["--steps", "1", "--workers", "1", "--report", str(tmp_path / "out")], tmp_path / "out", capsys
    )
    assert f"--report {str(tmp_path / 'out')!r}: is a folder; give a file name in it, e.g. --report " in err


@pytest.mark.parametrize("mode", ["async", "in-graph"])
def test_backup_workers_outside_sync_mode_are_refused(tmp_path, capsys, mode):
    argv = ["--mode", mode, "--backup-workers", "1", "--steps", "1", "--workers", "2", "--no-report"]
    err = refused(argv, tmp_path, capsys)
    assert f"--backup-workers 1 needs --mode sync (got --mode {mode})" in err
    assert "add --mode sync, or leave --backup-workers out" in err


# -- real clusters ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def in_graph_run(tmp_path_factory):
    cwd = tmp_path_factory.mktemp("demo")
    code, text = run_demo(["--steps", "80", "--workers", "2"], cwd)
    return code, text, cwd


@pytest.mark.slow
def test_in_graph_demo_trains_writes_the_report_here_and_stops(in_graph_run):
    code, text, cwd = in_graph_run
    assert code == 0, text
    assert "cluster ready in" in text and "/job:worker/task:1  pid" in text
    assert re.search(r"80/80 .*loss w0 \d\.\d{3} w1 \d\.\d{3}, [\d.]+ steps/s", text), text[-600:]
    summary = re.search(
        r"in-graph: trained 80 global steps in [\d.]+ s \(([\d.]+) steps/s over the last", text
    )
    assert summary and float(summary.group(1)) > 0
    report = cwd / demo.DEFAULT_REPORT
    assert f"report: {report}" in text and report.stat().st_size > 10_000
    assert text.rstrip().endswith("cluster stopped.")
    accuracy = float(re.search(r"accuracy ([\d.]+)%", text).group(1))
    assert accuracy > 80


@pytest.mark.slow
def test_the_report_copied_alone_has_everything_in_it(in_graph_run, tmp_path):
    _, _, cwd = in_graph_run
    alone = tmp_path / "empty"
    alone.mkdir()
    copy = Path(shutil.copy(cwd / demo.DEFAULT_REPORT, alone))
    assert [p.name for p in alone.iterdir()] == [copy.name]
    text = copy.read_text()
    refs = ExternalRefs()
    refs.feed(text)
    assert refs.tags == []
    assert [r for r in refs.refs if not r.startswith(("#", "data:"))] == []
    assert "url(http" not in text and "@import" not in text
    for section in ("nbdist-graph", "nbdist-placement-chart", "nbdist-loss", "nbdist-timeline"):
        assert re.search(rf'class="nbdist-picture {section}"><svg', text), section
    graph = text.split('class="nbdist-picture nbdist-graph">', 1)[1].split("</svg>", 1)[0]
    for task in ("/job:ps/task:0", "/job:worker/task:0", "/job:worker/task:1"):
        assert task in graph
    assert "_Send/_Recv pairs" in graph
    loss = text.split('class="nbdist-picture nbdist-loss">', 1)[1].split("</svg>", 1)[0]
    assert loss.count('id="line2d_') >= 3  # a curve per replica and the global step
    assert "nbdist-placement-table" in text and "RunStep" in text


@pytest.mark.slow
def test_sync_demo_with_a_backup_worker_trains_and_every_worker_stops(tmp_path):
    args = ["--mode", "sync", "--workers", "3", "--backup-workers", "1", "--steps", "60"]
    code, text = run_demo([*args, "--report", str(tmp_path / "s.html")], tmp_path)
    assert code == 0, text
    per_worker = dict(re.findall(r"(worker:\d) (\d+)", text.split("steps per worker:", 1)[1].splitlines()[0]))
    assert set(per_worker) == {"worker:0", "worker:1", "worker:2"}
    assert re.search(r"sync: trained (5\d|6\d) global steps", text), text[-600:]
    report = (tmp_path / "s.html").read_text()
    assert "SyncReplicasOptimizer, 2 of 3 gradients per step" in report
    for section in ("nbdist-graph", "nbdist-timeline"):  # a real synchronous step was traced
        names = traced_step(report, section)
        assert names >= SYNC_OPS, (section, SYNC_OPS - names)
    assert "ConditionalAccumulator" in traced_step(report, "nbdist-graph")  # the accumulators, drawn


@pytest.mark.slow
def test_async_demo_each_worker_is_its_own_client(tmp_path):
    code, text = run_demo(
        ["--mode", "async", "--steps", "80", "--report", str(tmp_path / "a.html")], tmp_path
    )
    assert code == 0, text
    per_worker = dict(re.findall(r"(worker:\d) (\d+)", text.split("steps per worker:", 1)[1].splitlines()[0]))
    assert set(per_worker) == {"worker:0", "worker:1"} and all(int(n) > 0 for n in per_worker.values())
    assert re.search(r"async: trained (8\d) global steps", text), text[-600:]
    report = (tmp_path / "a.html").read_text()
    assert "between-graph replication, asynchronous" in report and "worker 0&#x27;s own steps" in report
    for section in ("nbdist-graph", "nbdist-timeline"):  # worker 0's own update, nothing synchronous
        names = traced_step(report, section)
        assert "ApplyAdam" in names and names.isdisjoint(SYNC_OPS), (section, names & SYNC_OPS)
    assert [p.name for p in tmp_path.iterdir()] == ["a.html"]


@pytest.mark.slow
def test_without_graphviz_the_report_has_the_rest_and_says_how_to_get_it(tmp_path, monkeypatch):
    (tmp_path / "bin").mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))  # no `dot` on it
    code, text = run_demo(["--steps", "20"], tmp_path)
    assert code == 0, text
    report = (tmp_path / demo.DEFAULT_REPORT).read_text()
    assert "Graph not drawn:" in report and "sudo apt-get install graphviz" in report
    assert "DOT source" in report
    for section in ("nbdist-placement-chart", "nbdist-loss", "nbdist-timeline"):
        assert re.search(rf'class="nbdist-picture {section}"><svg', report), section


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["in-graph", "async"])
def test_ctrl_c_stops_the_cluster_and_prints_one_line(tmp_path, mode):
    env = {**os.environ, "PYTHONPATH": REPO}
    proc = subprocess.Popen(
        [sys.executable, "-m", "nbdist", "demo", "--mode", mode, "--steps", "1000000", "--no-report"],
        cwd=tmp_path,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        children = []
        while time.monotonic() < deadline:  # wait until training runs: a bar with a rate
            children = [c.pid for c in psutil.Process(proc.pid).children()]
            if len(children) == 3 and _bar_shows_a_rate(proc):
                break
            time.sleep(0.2)
        else:
            pytest.fail("the demo did not start training within 60 s")
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    assert proc.returncode == demo.EXIT_INTERRUPTED
    everything = out + proc._bar_text + err
    assert "Traceback" not in everything and "zmq" not in everything, everything[-2000:]
    lines = [line for line in out.splitlines() if line.strip()]
    assert lines[0].startswith("cluster ready in") and len(lines) == 5, lines  # ready, 3 tasks, 1 line
    assert re.fullmatch(r"interrupted at step \d+: cluster stopped\.", lines[-1]), lines[-1]
    assert wait_gone(children, 5.0)


def _bar_shows_a_rate(proc):
    """Reads what the bar wrote so far (non-blocking) and says whether it shows steps/s."""
    buf = getattr(proc, "_bar_text", "")
    while select.select([proc.stderr], [], [], 0)[0]:
        chunk = os.read(proc.stderr.fileno(), 65536).decode(errors="replace")
        if not chunk:
            break
        buf += chunk
    proc._bar_text = buf
    return "steps/s" in buf


# -- in Chinese (--lang zh) --------------------------------------------------------------------------------
def test_lang_is_in_the_help_and_a_chinese_lang_env_makes_zh_the_default(monkeypatch):
    assert "--lang {en,zh}" in demo.parser("nbdist demo").format_help()
    monkeypatch.setenv("LANG", "zh_CN.UTF-8")
    assert demo.parser().parse_args([]).lang == "zh"
    monkeypatch.setenv("LANG", "en_US.UTF-8")
    assert demo.parser().parse_args([]).lang == "en"
    assert demo.parser().parse_args(["--lang", "zh"]).lang == "zh"


def test_zh_demo_prints_and_reports_in_chinese_with_every_glyph_drawn(tmp_path):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        code, text = run_demo(
            ["--lang", "zh", "--steps", "30", "--report", str(tmp_path / "zh.html")], tmp_path
        )
    missing = [str(w.message) for w in caught if "missing from" in str(w.message)]
    assert missing == [], f"matplotlib lacks CJK glyphs (apt-get install fonts-wqy-microhei): {missing[:3]}"
    assert code == 0, text
    assert "集群已就绪" in text and "训练中" in text and "训练了 30 个全局步" in text
    assert text.rstrip().endswith("集群已停止。")
    report = (tmp_path / "zh.html").read_text(encoding="utf-8")
    assert '<html lang="zh-Hans">' in report and "<h1>nbdist 演示 · in-graph</h1>" in report
    for heading in ("切分后的计算图", "设备放置", "各副本的损失曲线", "单步时间线"):
        assert f"<h2>{heading}</h2>" in report
    assert "<b>准确率</b>" in report and "<b>集群</b>" in report
    # the charts' glyphs are drawn as paths from a CJK font (matplotlib names each glyph by its font)
    assert 'id="WenQuanYiMicroHei-' in report or 'id="NotoSansCJK' in report
