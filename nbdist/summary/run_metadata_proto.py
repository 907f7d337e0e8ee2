"""nbdist's `RunMetadata` (a traced step: per-device op spans, partition graphs) as the bytes of
TF's ``RunMetadata`` protobuf, for `FileWriter.add_run_metadata` (TensorBoard's per-step
compute-time view; TF's ``summary_iterator`` and ``RunMetadata.FromString`` read them).

tensorboardX has no class for ``RunMetadata`` / ``StepStats``, so the few fields nbdist fills are
written in protobuf's wire format directly (step_stats.proto, config.proto):

    RunMetadata      1: step_stats (StepStats)    3: partition_graphs (GraphDef, repeated)
    StepStats        1: dev_stats (DeviceStepStats, repeated)
    DeviceStepStats  1: device    2: node_stats (NodeExecStats, repeated)
    NodeExecStats    1: node_name  2: all_start_micros  4: op_end_rel_micros
                     5: all_end_rel_micros  8: timeline_label
"""

from nbdist.summary.graph_proto import graph_def_proto


def _varint(value):
    value &= (1 << 64) - 1  # negative int64s as protobuf writes them (ten bytes)
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _bytes_field(number, data):
    if isinstance(data, str):
        data = data.encode()
    return _varint(number << 3 | 2) + _varint(len(data)) + data


def _int_field(number, value):
    return _varint(number << 3) + _varint(int(value)) if value else b""


def _node_stats(stats):
    start_us = round(stats["start_s"] * 1e6)
    duration_us = max(0, round((stats["end_s"] - stats["start_s"]) * 1e6))
    return b"".join(
        [
            _bytes_field(1, stats["node_name"]),
            _int_field(2, start_us),
            _int_field(4, duration_us),
            _int_field(5, duration_us),
            _bytes_field(8, f"{stats['node_name']} = {stats.get('op', '')}()"),
        ]
    )


def run_metadata_bytes(run_metadata):
    """The serialized TF ``RunMetadata`` of `run_metadata`: nbdist's (`tf.RunMetadata`) or any
    protobuf with ``SerializeToString`` (real TensorFlow's), written as is.

    Raises:
        TypeError: neither.
    """
    if hasattr(run_metadata, "SerializeToString"):
        return run_metadata.SerializeToString()
    if not hasattr(run_metadata, "step_stats"):
        raise TypeError(f"add_run_metadata() takes a tf.RunMetadata, got {type(run_metadata).__name__}")
    devices = [
        _bytes_field(1, dev.device) + b"".join(_bytes_field(2, _node_stats(s)) for s in dev.node_stats)
        for dev in run_metadata.step_stats.dev_stats
    ]
    step_stats = b"".join(_bytes_field(1, d) for d in devices)
    graphs = [graph_def_proto(g).SerializeToString() for g in run_metadata.partition_graphs]
    return _bytes_field(1, step_stats) + b"".join(_bytes_field(3, g) for g in graphs)
