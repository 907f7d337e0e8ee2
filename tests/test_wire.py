"""The wire format: round trips, signatures, bounds, and refusal of anything but data."""

import pickle

import numpy as np
import pytest

from nbdist.runtime.net import wire

KEY = b"k" * 32


def roundtrip(body, key=None):
    return wire.decode(wire.encode("Test", 7, body, key), key)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64", "uint8", "bool", "float16"])
def test_numeric_arrays_round_trip_exactly(dtype):
    arr = (np.arange(24).reshape(2, 3, 4) % 5).astype(dtype)
    out = roundtrip({"t": arr})["t"]
    assert out.dtype == arr.dtype and out.shape == arr.shape
    np.testing.assert_array_equal(out, arr)


def test_scalars_and_empty_arrays_keep_their_shape():
    out = roundtrip({"s": np.array(3.5, np.float32), "e": np.zeros((0, 3))})
    assert out["s"].shape == () and out["s"] == 3.5
    assert out["e"].shape == (0, 3)


def test_non_contiguous_arrays_are_sent_by_value():
    arr = np.arange(12.0).reshape(3, 4).T
    np.testing.assert_array_equal(roundtrip({"t": arr})["t"], arr)


def test_string_tensors_travel_as_bytes():
    arr = np.array([[b"a", b"bc"], [b"", b"\xff"]], dtype=object)
    out = roundtrip({"t": arr})["t"]
    assert out.dtype == object and out.tolist() == arr.tolist()


def test_nested_bodies_keep_structure_and_tuples():
    body = {"feeds": [np.ones(2), {"x": (1, "a")}], "n": None}
    out = roundtrip(body)
    np.testing.assert_array_equal(out["feeds"][0], np.ones(2))
    assert out["feeds"][1] == {"x": (1, "a")} and out["n"] is None


def test_header_carries_type_and_request_id():
    msg = roundtrip({})
    assert (msg["type"], msg["id"], msg["v"]) == ("Test", 7, wire.PROTOCOL_VERSION)


def test_large_tensors_are_not_copied_into_the_header():
    arr = np.ones(1 << 20, np.float32)
    frames = wire.encode("Test", 1, {"t": arr})
    assert len(frames[0]) < 200 and memoryview(frames[1]).nbytes == arr.nbytes


def test_small_arrays_travel_inside_the_header_and_arrive_writable():
    small, large = np.arange(256, dtype=np.float32), np.arange(257, dtype=np.float32)  # 1024 / 1028 B
    frames = wire.encode("Test", 1, {"small": small, "large": large}, KEY)
    assert len(frames) == 2  # signature and header (with `small`), `large`
    out = wire.decode(frames, KEY)
    np.testing.assert_array_equal(out["small"], small)
    np.testing.assert_array_equal(out["large"], large)
    out["small"][0] = 7.0  # a kernel may update a received tensor in place


def test_an_inline_tensor_must_match_its_header():
    import msgpack

    inline = msgpack.ExtType(5, msgpack.packb(["<f4", [3], b"\x00" * 8]))
    header = msgpack.packb({"v": wire.PROTOCOL_VERSION, "type": "Test", "id": 1, "t": inline})
    with pytest.raises(wire.WireError, match=r"inline tensor has 8 bytes, its header says <f4\[3\]"):
        wire.decode([wire.join_head(b"", header)])


def test_signed_messages_verify_with_the_key():
    assert roundtrip({"a": 1}, KEY)["a"] == 1


def test_unsigned_message_is_refused_when_a_key_is_set():
    frames = wire.encode("Test", 1, {"a": 1}, key=None)
    with pytest.raises(wire.WireError, match="unsigned message refused") as info:
        wire.decode(frames, KEY)
    assert info.value.code == "UNAUTHENTICATED"


def test_tampered_tensor_frame_fails_the_signature():
    frames = wire.encode("Test", 1, {"t": np.zeros(512)}, KEY)  # 4 KiB: a frame of its own
    frames[1] = np.ones(512).tobytes()
    with pytest.raises(wire.WireError, match="bad message signature"):
        wire.decode(frames, KEY)


def test_wrong_key_fails_the_signature():
    with pytest.raises(wire.WireError, match="bad message signature"):
        wire.decode(wire.encode("Test", 1, {}, b"x" * 32), KEY)


def test_other_protocol_versions_are_refused():
    import msgpack

    frames = [wire.join_head(b"", msgpack.packb({"v": 99, "type": "Test", "id": 3}))]
    with pytest.raises(wire.WireError, match="protocol version 99 is not supported") as info:
        wire.decode(frames)
    assert info.value.request_id == 3


def test_garbage_header_is_a_wire_error():
    with pytest.raises(wire.WireError, match="undecodable message header"):
        wire.decode([wire.join_head(b"", b"\xc1\xff\x00garbage")])


def test_a_pickle_is_never_unpickled():
    frames = [wire.join_head(b"", pickle.dumps({"type": "Test", "v": 1}))]
    with pytest.raises(wire.WireError):
        wire.decode(frames)


def test_tensor_frame_size_must_match_its_header():
    frames = wire.encode("Test", 1, {"t": np.zeros(512)})
    frames[1] = b"\x00" * 8
    with pytest.raises(wire.WireError, match="has 8 bytes, header says 4096"):
        wire.decode(frames)


def test_unreferenced_frames_are_refused():
    frames = [*wire.encode("Test", 1, {}), b"extra"]
    with pytest.raises(wire.WireError, match="not referenced"):
        wire.decode(frames)


def test_too_few_frames_are_refused():
    with pytest.raises(wire.WireError, match="at least 1 frame"):
        wire.decode([])


def test_a_first_frame_shorter_than_its_signature_length_is_refused():
    # A 2-frame message of protocol 1 (an older nbdist): an empty signature frame first.
    with pytest.raises(wire.WireError, match=r"signature length.*same version on every task"):
        wire.decode([b"", b"\x83\xa1v\x01"])
    with pytest.raises(wire.WireError, match="signature length"):
        wire.decode([bytes((32,)) + b"short"])


def test_a_small_message_is_one_frame_and_its_signature_covers_every_byte():
    frames = wire.encode("RunStep", 1, {"feeds": {"x:0": np.ones(4, np.float32)}}, KEY)
    assert len(frames) == 1 and frames[0][0] == 32
    for at in (1, 40, len(frames[0]) - 1):  # in the signature, the header, its last byte
        tampered = bytearray(frames[0])
        tampered[at] ^= 1
        with pytest.raises(wire.WireError, match="bad message signature"):
            wire.decode([bytes(tampered)], KEY)


def test_objects_that_are_not_data_cannot_be_sent():
    with pytest.raises(TypeError, match="cannot send a object over the wire"):
        wire.encode("Test", 1, {"x": object()})


def test_error_replies_re_raise_as_the_same_class_with_the_task():
    from nbdist import errors

    body = wire.error_body(errors.NotFoundError("n1", None, "gone"), "/job:ps/task:0")
    with pytest.raises(errors.NotFoundError, match=r"^\[/job:ps/task:0\] gone"):
        wire.raise_error(body)
