"""`tf.metrics`: streaming metrics with local state, each returning ``(value, update_op)``."""

from nbdist._facade import export_all as _export_all
from nbdist._facade import unsupported as _unsupported
from nbdist.ops import metrics_at_k as _metrics_at_k
from nbdist.ops import metrics_confusion as _metrics_confusion
from nbdist.ops import metrics_ops as _metrics_ops
from nbdist.ops import metrics_thresholds as _metrics_thresholds

_export_all(globals(), _metrics_ops)  # accuracy, mean, the means built on it, mean_per_class_accuracy
_export_all(globals(), _metrics_confusion)  # the counts, precision, recall, auc, errors, mean_iou
_export_all(globals(), _metrics_at_k)  # *_at_k, *_at_top_k, average_precision_at_k
_export_all(globals(), _metrics_thresholds)  # *_at_thresholds, sensitivity / specificity searches
__all__ = list(_metrics_ops.__all__)
__all__ += _metrics_confusion.__all__
__all__ += _metrics_at_k.__all__
__all__ += _metrics_thresholds.__all__


def __getattr__(name):
    return _unsupported("tf.metrics", name)
