"""`nbdist.notebook.graph_model`: tasks, their colours, and the normalised graph every view draws."""

import pytest

from nbdist.notebook import graph_model as gm
from traced_steps import CROSSINGS, build_model, traced_steps


@pytest.fixture(scope="module")
def traced():
    with traced_steps(ps_tasks=2) as model:
        yield model


# -- tasks and colours ---------------------------------------------------------------------------
def test_task_label_drops_replica_and_device():
    assert gm.task_label("/job:ps/replica:0/task:1/device:CPU:0") == "/job:ps/task:1"
    assert gm.task_label("/job:worker") == "/job:worker"
    assert gm.task_label("") == ""


def test_every_task_gets_its_own_colour_and_jobs_share_a_hue():
    tasks = [f"/job:{job}/task:{i}" for job in ("ps", "worker", "chief", "eval") for i in range(4)]
    colors = [gm.task_color(t) for t in tasks]
    assert len(set(colors)) == len(tasks)
    r, g, b = (int(gm.task_color("/job:ps/task:3")[i : i + 2], 16) for i in (1, 3, 5))
    assert r > g > b  # ps tasks are all orange
    assert gm.task_color("/job:worker/task:8") not in {
        gm.task_color(f"/job:worker/task:{i}") for i in range(8)
    }


@pytest.mark.parametrize("job", ["ps", "worker", "chief", "evaluator"])
def test_the_tasks_of_one_job_get_clearly_different_shades_of_its_hue(job):
    """Colour distance (CIE76 delta E; 2.3 is just noticeable): tasks 0 and 1 at least 20 apart,
    any two of the first eight at least 12, their task boxes' tints at least 8."""
    colors = [gm.task_color(f"/job:{job}/task:{i}") for i in range(8)]
    assert gm.color_distance(colors[0], colors[1]) >= 20
    assert min(gm.color_distance(a, b) for i, a in enumerate(colors) for b in colors[i + 1 :]) >= 12
    assert gm.color_distance(gm.tint(colors[0]), gm.tint(colors[1])) >= 8
    hues = {"ps": lambda r, g, b: r > b, "worker": lambda r, g, b: b > r}  # still orange, still blue
    for c in colors if job in hues else ():
        assert hues[job](*(int(c[i : i + 2], 16) for i in (1, 3, 5))), c


def test_colour_distance_is_the_distance_in_cielab():
    assert gm.color_distance("#000000", "#ffffff") == pytest.approx(100, abs=0.01)
    assert gm.color_distance("#69ccfd", "#69ccfd") == 0
    assert gm.color_distance("#ff0000", "#fe0000") < 1


def test_a_task_has_the_same_colour_before_and_after_placement():
    placed = gm.task_label("/job:worker/replica:0/task:1/device:CPU:0")
    assert gm.task_color(placed) == gm.task_color("/job:worker/task:1")


def test_names_that_are_not_devices_sort_last_and_are_grey():
    tasks = ["notebook", "/job:worker/task:1", "/job:ps/task:0", "/job:worker/task:0"]
    assert sorted(tasks, key=gm.task_sort_key) == [
        "/job:ps/task:0",
        "/job:worker/task:0",
        "/job:worker/task:1",
        "notebook",
    ]
    assert gm.task_color("notebook") == gm.UNPLACED_COLOR


def test_format_bytes_and_specs():
    assert [gm.format_bytes(n) for n in (0, 24, 2048, 3 * 2**20)] == ["0 B", "24 B", "2.0 KiB", "3.0 MiB"]
    assert (
        gm.format_spec("float32", [None, 3]) == "float32[?,3]"
        and gm.format_spec("int64", None) == "int64[...]"
    )
    assert gm.nbytes_of(gm.graph_model(build_model().graph).by_name["w"].output[0][0], [3, 2]) == 24


# -- the normalised graph -------------------------------------------------------------------------------
def test_a_graph_gives_the_requested_devices():
    model = gm.graph_model(build_model().graph)
    assert model.mode == "requested" and model.task["w"] == "/job:ps/task:0" and model.task["init"] == ""


def test_a_traced_step_gives_the_placed_partitions_and_their_pairs(traced):
    model = gm.graph_model(traced.md)
    assert model.mode == "placed" and len(model.pairs()) == CROSSINGS
    assert model.tasks() == ["/job:ps/task:0", "/job:ps/task:1", "/job:worker/task:0"]
    recv = next(
        model.by_name[r] for _, r in model.pairs() if model.by_name[r].attr["tensor_name"] == "w/read:0"
    )
    assert model.pair_bytes(recv) == 24


def test_what_a_fetch_needs_follows_recv_to_send(traced):
    needed = gm.graph_model(traced.md).needed("model/MatMul")
    assert {"w", "w/read", "x", "model/MatMul"} <= needed
    assert any(name.startswith("_send/") for name in needed) and "model/Mean" not in needed


def test_drawing_a_tensor_means_its_graph_and_only_what_it_needs():
    model = build_model()
    assert gm.split_fetch(model.loss, None) == (model.graph, model.loss)
    assert gm.split_fetch(model.graph, "x") == (model.graph, "x")
    assert gm.fetch_name(model.w) == "w" and gm.fetch_name("model/Mean:0") == "model/Mean"


def test_scopes_collapse_to_one_group_per_task():
    model = gm.graph_model(build_model().graph)
    id_of, groups = gm.display_groups(model, model.nodes, collapse=True, expanded=())
    assert id_of["model/MatMul"] == "model@/job:worker/task:0"
    task, scope, members = groups["model@/job:worker/task:0"]
    assert (task, scope, len(members)) == ("/job:worker/task:0", "model", 5)


def test_numbered_scopes_on_different_tasks_are_no_series():
    """replica_0 .. replica_5, one per worker, stay one node each with its own name and count."""
    from nbdist.notebook import replicated_training as rt

    model = gm.graph_model(rt.build_in_graph(6, 2)["graph"])
    _, groups = gm.display_groups(model, model.nodes, collapse=True, expanded=())
    on_worker_3 = {scope for task, scope, _ in groups.values() if task == "/job:worker/task:3"}
    assert {"replica_3", "gradients_3"} <= on_worker_3
    assert not any("[" in (scope or "") for scope in on_worker_3)
