"""TF's CTC prefix beam search (its ``CTCBeamSearchDecoder`` with the default scorer), step for
step: a tree of label prefixes (`_Beam`), each with its log probabilities of ending in a blank
and in its label, at the previous step (``old``) and this one (``new``); the leaves are the
`beam_width` best prefixes by total probability. A prefix pushed out of the leaves loses its
probabilities (an inactive child is re-entered later from scratch), as in TF; the paths are
read best first, merging repeated labels if asked.
"""

import numpy as np

_LOG_ZERO = -np.inf


class _Probability:
    __slots__ = ("blank", "label", "total")

    def __init__(self):
        self.reset()

    def reset(self):
        self.blank = self.label = self.total = _LOG_ZERO

    def copy_from(self, other):
        self.blank, self.label, self.total = other.blank, other.label, other.total


class _Beam:
    __slots__ = ("children", "label", "new", "old", "parent")

    def __init__(self, parent, label):
        self.parent, self.label = parent, label
        self.old, self.new = _Probability(), _Probability()
        self.children = None

    @property
    def active(self):
        return self.new.total != _LOG_ZERO

    def labels(self, merge_repeated):
        out, previous, beam = [], -1, self
        while beam.parent is not None:
            if not merge_repeated or beam.label != previous:
                out.append(beam.label)
            previous, beam = beam.label, beam.parent
        return out[::-1]


def _logsumexp(a, b):
    return float(np.logaddexp(a, b))


class _Leaves:
    """TF's ``TopN`` of beams by ``new.total``: at most `width`, the lowest dropped."""

    def __init__(self, width):
        self.width, self.items = width, []

    def push(self, beam):
        self.items.append(beam)
        if len(self.items) > self.width:
            self.items.remove(min(self.items, key=lambda b: b.new.total))

    def bottom(self):
        return min(self.items, key=lambda b: b.new.total)

    def extract(self):
        """The beams best first; the leaves emptied."""
        items = sorted(self.items, key=lambda b: -b.new.total)
        self.items = []
        return items


def _step(leaves, row, blank):
    shifted = row - row.max()
    logp = shifted - np.log(np.exp(shifted).sum())
    branches = leaves.extract()
    for b in branches:
        b.old.copy_from(b.new)
    for b in branches:
        if b.parent is not None:
            if b.parent.active:
                previous = b.parent.old.blank if b.label == b.parent.label else b.parent.old.total
                b.new.label = _logsumexp(b.new.label, previous)
            b.new.label += logp[b.label]
        b.new.blank = b.old.total + logp[blank]
        b.new.total = _logsumexp(b.new.blank, b.new.label)
        leaves.push(b)

    def candidate(p):
        return p.total > _LOG_ZERO and (
            len(leaves.items) < leaves.width or p.total > leaves.bottom().new.total
        )

    for b in branches:
        if not candidate(b.old):
            continue
        if b.children is None:
            b.children = [_Beam(b, label) for label in range(blank)]
        for c in b.children:
            if c.active:
                continue
            c.new.blank = _LOG_ZERO
            previous = b.old.blank if c.label == b.label else b.old.total
            c.new.label = logp[c.label] + previous
            c.new.total = c.new.label
            if candidate(c.new):
                if len(leaves.items) == leaves.width:
                    leaves.bottom().new.reset()
                leaves.push(c)
            else:
                c.old.reset()
                c.new.reset()


def beam_search(logits, beam_width, top_paths, merge_repeated):
    """The `top_paths` best label sequences of one example's logits ``[time, classes]`` (blank
    last), with their log probabilities, best first.

    Raises:
        ValueError: fewer leaves than `top_paths` (TF's message).
    """
    logits = np.asarray(logits, np.float64)
    blank = logits.shape[1] - 1
    root = _Beam(None, -1)
    root.new.total = root.new.blank = 0.0
    leaves = _Leaves(beam_width)
    leaves.push(root)
    for row in logits:
        _step(leaves, row, blank)
    best = leaves.extract()
    if len(best) < top_paths:
        raise ValueError("Less leaves in the beam search than requested.")
    return [(b.labels(merge_repeated), b.new.total) for b in best[:top_paths]]
