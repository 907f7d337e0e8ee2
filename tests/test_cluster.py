"""Tests for nbdist/runtime/cluster.py: ClusterSpec, addresses and TF_CONFIG."""

import json

import numpy as np
import pytest

from nbdist.runtime.cluster import (
    ClusterSpec,
    cluster_from_tf_config,
    format_address,
    is_local_host,
    parse_address,
)

DENSE = {"ps": ["localhost:2222"], "worker": ["localhost:2223", "localhost:2224"]}
SPARSE = {"ps": ["ps0:2222"], "worker": {1: "w1:2222", 3: "w3:2222"}}


# ---------------------------------------------------------------- construction, every input form


def test_dense_lists_give_tasks_by_position():
    cluster = ClusterSpec(DENSE)
    assert cluster.task_address("worker", 1) == "localhost:2224"


def test_tuple_of_addresses_is_accepted_like_a_list():
    assert ClusterSpec({"ps": ("a:1", "b:2")}) == ClusterSpec({"ps": ["a:1", "b:2"]})


def test_sparse_dict_with_int_keys():
    cluster = ClusterSpec(SPARSE)
    assert cluster.task_indices("worker") == [1, 3]


def test_sparse_dict_with_numeric_string_keys_equals_int_keys():
    assert ClusterSpec({"worker": {"1": "w1:2222", "3": "w3:2222"}}) == ClusterSpec(
        {"worker": {1: "w1:2222", 3: "w3:2222"}}
    )


def test_sparse_dict_accepts_numpy_integer_keys():
    assert ClusterSpec({"worker": {np.int64(2): "w:1"}}).task_indices("worker") == [2]


def test_copy_of_cluster_spec_is_equal_and_independent():
    original = ClusterSpec(DENSE)
    copy = ClusterSpec(original)
    assert copy == original
    assert copy._cluster_spec is not original._cluster_spec


def test_json_string_is_accepted():
    assert ClusterSpec(json.dumps(DENSE)) == ClusterSpec(DENSE)


def test_json_bytes_are_accepted():
    assert ClusterSpec(json.dumps(DENSE).encode()) == ClusterSpec(DENSE)


def test_cluster_def_form_is_accepted():
    cluster_def = {"job": [{"name": "ps", "tasks": {0: "a:1"}}, {"name": "worker", "tasks": {"2": "b:1"}}]}
    assert ClusterSpec(cluster_def).as_dict() == {"ps": ["a:1"], "worker": {2: "b:1"}}


def test_job_named_job_with_address_list_is_a_plain_job():
    assert ClusterSpec({"job": ["a:1"]}).jobs == ["job"]


def test_bytes_job_name_and_address_are_decoded():
    assert ClusterSpec({b"ps": [b"a:1"]}).as_dict() == {"ps": ["a:1"]}


def test_empty_cluster_is_falsy():
    assert not ClusterSpec({})


def test_non_empty_cluster_is_truthy():
    assert ClusterSpec(DENSE)


def test_empty_job_is_allowed_and_has_no_tasks():
    cluster = ClusterSpec({"ps": []})
    assert (cluster.num_tasks("ps"), cluster.job_tasks("ps"), cluster.as_dict()) == (0, [], {"ps": {}})


# ---------------------------------------------------------------- wrong types


def test_cluster_of_wrong_type_is_a_type_error_quoting_it():
    with pytest.raises(TypeError, match=r"`cluster` must be a dict.*got \['a:1'\]"):
        ClusterSpec(["a:1"])


def test_tasks_of_wrong_type_is_a_type_error_naming_job():
    with pytest.raises(TypeError, match=r"tasks for job 'ps' must be a list.*got 'a:1'"):
        ClusterSpec({"ps": "a:1"})


def test_non_string_address_is_a_type_error_quoting_it():
    with pytest.raises(TypeError, match=r"job 'ps' task 1: address must be a string 'host:port', got 2222"):
        ClusterSpec({"ps": ["a:1", 2222]})


def test_non_string_job_name_is_a_type_error():
    with pytest.raises(TypeError, match=r"job name must be a string, got 7"):
        ClusterSpec({7: ["a:1"]})


def test_float_task_index_is_a_type_error():
    with pytest.raises(TypeError, match=r"task index in job 'ps' must be an integer, got 1.5"):
        ClusterSpec({"ps": {1.5: "a:1"}})


def test_bool_task_index_is_a_type_error():
    with pytest.raises(TypeError, match=r"must be an integer, got True"):
        ClusterSpec({"ps": {True: "a:1"}})


# ---------------------------------------------------------------- bad values


def test_address_without_port_names_job_and_task():
    with pytest.raises(ValueError, match=r"job 'worker' task 1: address 'w1' has no port"):
        ClusterSpec({"worker": ["w0:1", "w1"]})


def test_non_numeric_port_is_rejected():
    with pytest.raises(ValueError, match=r"job 'ps' task 0: port 'http' in 'a:http' is not a number"):
        ClusterSpec({"ps": ["a:http"]})


@pytest.mark.parametrize("port", ["0", "65536"])
def test_out_of_range_port_is_rejected(port):
    with pytest.raises(ValueError, match=rf"port {port} in 'a:{port}' is out of range; ports are 1..65535"):
        ClusterSpec({"ps": [f"a:{port}"]})


def test_empty_host_is_rejected():
    with pytest.raises(ValueError, match=r"job 'ps' task 0: address ':2222' has an empty host"):
        ClusterSpec({"ps": [":2222"]})


def test_duplicate_address_names_both_tasks():
    with pytest.raises(
        ValueError, match=r"'localhost:2222' is used by both /job:ps/task:0 and /job:worker/task:1"
    ):
        ClusterSpec({"ps": ["localhost:2222"], "worker": ["localhost:2223", "localhost:2222"]})


def test_duplicate_address_ignores_host_case():
    with pytest.raises(ValueError, match=r"used by both /job:ps/task:0 and /job:ps/task:1"):
        ClusterSpec({"ps": ["Host:1", "host:1"]})


def test_empty_job_name_is_rejected():
    with pytest.raises(ValueError, match=r"job name is empty"):
        ClusterSpec({"": ["a:1"]})


@pytest.mark.parametrize("name", ["work er", "ps/0", "1ps", "ps:1", "worker-gpu"])
def test_invalid_job_name_characters_are_rejected(name):
    with pytest.raises(ValueError, match=r"job name .* is invalid: it must start with a letter"):
        ClusterSpec({name: ["a:1"]})


def test_negative_task_index_is_rejected():
    with pytest.raises(ValueError, match=r"task index -1 in job 'ps' is negative"):
        ClusterSpec({"ps": {-1: "a:1"}})


def test_non_numeric_string_task_index_is_rejected():
    with pytest.raises(ValueError, match=r"task index 'one' in job 'ps' is not a non-negative integer"):
        ClusterSpec({"ps": {"one": "a:1"}})


def test_same_index_as_int_and_string_is_rejected():
    with pytest.raises(ValueError, match=r"job 'ps' gives task index 0 twice \('0'\)"):
        ClusterSpec({"ps": {0: "a:1", "0": "b:1"}})


def test_invalid_json_is_a_value_error_quoting_it():
    with pytest.raises(ValueError, match=r"cluster JSON is not valid .*'\{ps'"):
        ClusterSpec("{ps")


def test_json_that_is_not_an_object_is_rejected():
    with pytest.raises(ValueError, match=r"cluster JSON must be an object"):
        ClusterSpec.from_json('["a:1"]')


def test_cluster_def_with_repeated_job_is_rejected():
    with pytest.raises(ValueError, match=r"job 'ps' is given twice in the ClusterDef"):
        ClusterSpec({"job": [{"name": "ps", "tasks": {}}, {"name": "ps", "tasks": {}}]})


# ---------------------------------------------------------------- queries


def test_jobs_are_sorted():
    assert ClusterSpec({"worker": ["a:1"], "chief": ["b:1"], "ps": ["c:1"]}).jobs == ["chief", "ps", "worker"]


def test_num_tasks_counts_sparse_tasks():
    assert ClusterSpec(SPARSE).num_tasks("worker") == 2


def test_task_indices_are_sorted():
    assert ClusterSpec({"worker": {5: "a:1", 0: "b:1", 2: "c:1"}}).task_indices("worker") == [0, 2, 5]


def test_job_tasks_has_none_at_missing_indices():
    assert ClusterSpec(SPARSE).job_tasks("worker") == [None, "w1:2222", None, "w3:2222"]


def test_task_address_accepts_numpy_integer():
    assert ClusterSpec(DENSE).task_address("worker", np.int32(0)) == "localhost:2223"


@pytest.mark.parametrize("method", ["num_tasks", "task_indices", "job_tasks"])
def test_unknown_job_lists_known_jobs(method):
    with pytest.raises(ValueError, match=r"No such job in cluster: 'chief'; known jobs: \['ps', 'worker'\]"):
        getattr(ClusterSpec(DENSE), method)("chief")


def test_task_address_of_unknown_job_lists_known_jobs():
    with pytest.raises(ValueError, match=r"No such job in cluster: 'chief'; known jobs: \['ps', 'worker'\]"):
        ClusterSpec(DENSE).task_address("chief", 0)


def test_unknown_task_index_names_job_index_and_valid_indices():
    with pytest.raises(ValueError, match=r"No task with index 2 in job 'worker'; valid indices: \[1, 3\]"):
        ClusterSpec(SPARSE).task_address("worker", 2)


def test_string_task_index_in_task_address_is_a_type_error():
    with pytest.raises(TypeError, match=r"task index for job 'worker' must be an integer, got '0'"):
        ClusterSpec(DENSE).task_address("worker", "0")


# ---------------------------------------------------------------- as_dict, repr, equality


def test_as_dict_gives_lists_for_dense_jobs():
    assert ClusterSpec(DENSE).as_dict() == DENSE


def test_as_dict_gives_dicts_for_sparse_jobs():
    assert ClusterSpec(SPARSE).as_dict() == {"ps": ["ps0:2222"], "worker": {1: "w1:2222", 3: "w3:2222"}}


def test_as_dict_of_dense_dict_input_is_a_list():
    assert ClusterSpec({"ps": {1: "b:1", 0: "a:1"}}).as_dict() == {"ps": ["a:1", "b:1"]}


def test_as_dict_is_a_copy():
    cluster = ClusterSpec(DENSE)
    cluster.as_dict()["ps"].append("x:1")
    assert cluster.num_tasks("ps") == 1


def test_repr_is_readable_and_sorted():
    cluster = ClusterSpec({"worker": ["localhost:2223"], "ps": ["localhost:2222"]})
    assert repr(cluster) == "ClusterSpec({'ps': ['localhost:2222'], 'worker': ['localhost:2223']})"


def test_repr_of_sparse_job_shows_indices():
    assert repr(ClusterSpec({"worker": {1: "w:1"}})) == "ClusterSpec({'worker': {1: 'w:1'}})"


def test_equal_specs_from_different_forms():
    assert ClusterSpec({"ps": ["a:1"]}) == ClusterSpec({"ps": {"0": "a:1"}})


def test_different_specs_are_not_equal():
    assert ClusterSpec({"ps": ["a:1"]}) != ClusterSpec({"ps": ["a:2"]})


def test_spec_equals_a_dict_of_the_same_cluster():
    assert ClusterSpec(DENSE) == DENSE


def test_spec_is_not_equal_to_an_invalid_dict():
    assert ClusterSpec(DENSE) != {"ps": 3}


def test_spec_is_not_equal_to_other_types():
    assert ClusterSpec(DENSE) != "ps"


def test_equal_specs_hash_equal():
    assert hash(ClusterSpec({"ps": ["a:1"]})) == hash(ClusterSpec({"ps": {0: "a:1"}}))


# ---------------------------------------------------------------- round trips


@pytest.mark.parametrize("cluster", [DENSE, SPARSE, {}, {"ps": []}])
def test_json_round_trip(cluster):
    spec = ClusterSpec(cluster)
    assert ClusterSpec.from_json(spec.to_json()) == spec


@pytest.mark.parametrize("cluster", [DENSE, SPARSE])
def test_as_dict_round_trip(cluster):
    spec = ClusterSpec(cluster)
    assert ClusterSpec(spec.as_dict()) == spec


@pytest.mark.parametrize("cluster", [DENSE, SPARSE])
def test_cluster_def_round_trip(cluster):
    spec = ClusterSpec(cluster)
    assert ClusterSpec(spec.as_cluster_def()) == spec


def test_to_json_is_sorted_and_stable():
    assert ClusterSpec({"worker": ["b:1"], "ps": ["a:1"]}).to_json() == '{"ps": ["a:1"], "worker": ["b:1"]}'


# ---------------------------------------------------------------- runtime helpers


def test_iter_tasks_is_sorted_by_job_then_index():
    assert list(ClusterSpec(SPARSE).iter_tasks()) == [
        ("ps", 0, "ps0:2222"),
        ("worker", 1, "w1:2222"),
        ("worker", 3, "w3:2222"),
    ]


def test_find_task_returns_job_and_index():
    assert ClusterSpec(SPARSE).find_task("w3:2222") == ("worker", 3)


def test_find_task_ignores_host_case():
    assert ClusterSpec(DENSE).find_task("LOCALHOST:2222") == ("ps", 0)


def test_find_task_of_unknown_address_is_none():
    assert ClusterSpec(DENSE).find_task("localhost:9999") is None


def test_find_task_of_malformed_address_is_rejected():
    with pytest.raises(ValueError, match=r"address 'localhost' has no port"):
        ClusterSpec(DENSE).find_task("localhost")


# ---------------------------------------------------------------- parse_address


def test_parse_address_splits_host_and_port():
    assert parse_address("ps0.example.com:2222") == ("ps0.example.com", 2222)


def test_parse_address_unbrackets_ipv6():
    assert parse_address("[::1]:2222") == ("::1", 2222)


def test_ipv6_address_is_valid_in_a_cluster():
    assert ClusterSpec({"ps": ["[::1]:2222"]}).find_task("[::1]:2222") == ("ps", 0)


def test_unbracketed_ipv6_is_rejected():
    with pytest.raises(ValueError, match=r"IPv6 host in '::1:2222' must be bracketed"):
        parse_address("::1:2222")


def test_unclosed_bracket_is_rejected():
    with pytest.raises(ValueError, match=r"address '\[::1:2222' has an unclosed '\['"):
        parse_address("[::1:2222")


def test_bracketed_non_ipv6_is_rejected():
    with pytest.raises(ValueError, match=r"bracketed host 'foo' in '\[foo\]:1' is not an IPv6 address"):
        parse_address("[foo]:1")


def test_bracketed_ipv6_without_port_is_rejected():
    with pytest.raises(ValueError, match=r"address '\[::1\]' has no port"):
        parse_address("[::1]")


def test_address_with_scheme_is_rejected():
    with pytest.raises(ValueError, match=r"address 'grpc://a:1' has a scheme; drop it"):
        parse_address("grpc://a:1")


def test_host_with_invalid_characters_is_rejected():
    with pytest.raises(ValueError, match=r"host 'a b' in 'a b:1' has invalid characters"):
        parse_address("a b:1")


def test_parse_address_of_non_string_is_a_type_error():
    with pytest.raises(TypeError, match=r"task address must be a string 'host:port', got \('a', 1\)"):
        parse_address(("a", 1))


@pytest.mark.parametrize("address", ["localhost:2222", "[::1]:2222", "10.0.0.1:1"])
def test_format_address_inverts_parse_address(address):
    assert format_address(*parse_address(address)) == address


# ---------------------------------------------------------------- is_local_host


@pytest.mark.parametrize("host", ["localhost", "LocalHost", "127.0.0.1", "127.1.2.3", "::1", "[::1]"])
def test_loopback_hosts_are_local(host):
    assert is_local_host(host)


# "0.0.0.0" is data here (a host that is not loopback), nothing binds to it.
@pytest.mark.parametrize("host", ["10.0.0.1", "example.com", "::2", "0.0.0.0", "128.0.0.1"])  # noqa: S104
def test_other_hosts_are_not_local(host):
    assert not is_local_host(host)


# ---------------------------------------------------------------- TF_CONFIG


def _env(config):
    return {"TF_CONFIG": json.dumps(config)}


def test_tf_config_gives_cluster_job_and_index():
    env = _env({"cluster": DENSE, "task": {"type": "worker", "index": 1}})
    assert cluster_from_tf_config(env) == (ClusterSpec(DENSE), "worker", 1)


def test_tf_config_reads_os_environ_by_default(monkeypatch):
    monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": DENSE, "task": {"type": "ps", "index": 0}}))
    assert cluster_from_tf_config()[1:] == ("ps", 0)


def test_tf_config_index_defaults_to_zero():
    assert cluster_from_tf_config(_env({"cluster": DENSE, "task": {"type": "ps"}}))[2] == 0


def test_tf_config_accepts_numeric_string_index():
    assert cluster_from_tf_config(_env({"cluster": DENSE, "task": {"type": "worker", "index": "1"}}))[2] == 1


def test_tf_config_with_sparse_cluster():
    env = _env({"cluster": SPARSE, "task": {"type": "worker", "index": 3}})
    assert cluster_from_tf_config(env)[0].task_indices("worker") == [1, 3]


def test_tf_config_unset_is_explained():
    with pytest.raises(ValueError, match=r"TF_CONFIG is not set; set it to JSON like"):
        cluster_from_tf_config({})


def test_tf_config_invalid_json_is_quoted():
    with pytest.raises(ValueError, match=r"TF_CONFIG is not valid JSON .*'\{cluster'"):
        cluster_from_tf_config({"TF_CONFIG": "{cluster"})


def test_tf_config_without_cluster_is_rejected():
    with pytest.raises(ValueError, match=r'TF_CONFIG has no "cluster" entry'):
        cluster_from_tf_config(_env({"task": {"type": "worker", "index": 0}}))


def test_tf_config_without_task_is_rejected():
    with pytest.raises(ValueError, match=r'TF_CONFIG has no "task"'):
        cluster_from_tf_config(_env({"cluster": DENSE}))


def test_tf_config_task_not_in_cluster_is_rejected():
    with pytest.raises(
        ValueError, match=r"TF_CONFIG task 'worker' index 2 is not in its cluster ClusterSpec"
    ):
        cluster_from_tf_config(_env({"cluster": DENSE, "task": {"type": "worker", "index": 2}}))


def test_tf_config_negative_index_is_rejected():
    with pytest.raises(ValueError, match=r'task index -1 of TF_CONFIG "task" is negative'):
        cluster_from_tf_config(_env({"cluster": DENSE, "task": {"type": "worker", "index": -1}}))


def test_tf_config_bad_cluster_names_the_entry():
    with pytest.raises(ValueError, match=r"job 'ps' task 0: address 'a' has no port"):
        cluster_from_tf_config(_env({"cluster": {"ps": ["a"]}, "task": {"type": "ps", "index": 0}}))


# ---------------------------------------------------------------- parity with TensorFlow


@pytest.fixture(scope="module")
def tf_cluster_spec():
    tf = pytest.importorskip("tensorflow")
    return tf.compat.v1.train.ClusterSpec


@pytest.mark.tf
@pytest.mark.parametrize("cluster", [DENSE, SPARSE, {"ps": {1: "b:1", 0: "a:1"}}])
def test_matches_tensorflow(tf_cluster_spec, cluster):
    ours, theirs = ClusterSpec(cluster), tf_cluster_spec(cluster)
    assert (ours.as_dict(), repr(ours), sorted(theirs.jobs)) == (theirs.as_dict(), repr(theirs), ours.jobs)
    for job in ours.jobs:
        assert (ours.job_tasks(job), ours.task_indices(job)) == (
            theirs.job_tasks(job),
            theirs.task_indices(job),
        )
