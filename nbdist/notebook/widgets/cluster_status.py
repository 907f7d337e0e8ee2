"""The live status of a `LocalCluster`: an HTML table a background thread rewrites.

`LocalCluster.status_view()` makes one; the table itself is drawn by
`nbdist.notebook.render.status_html` (pure, unit-tested without a browser).
"""

import threading
import weakref

from nbdist.notebook import render
from nbdist.runtime.net import transport


class ClusterStatusView:
    """An `ipywidgets.HTML` table whose value a background thread rewrites (state only)."""

    def __init__(self, cluster, refresh_s):
        import ipywidgets  # noqa: PLC0415 - lazy: `import nbdist` stays light

        self.widget = ipywidgets.HTML(value=render.status_html(cluster.status(), cluster))
        self.widget.add_class("nbdist-cluster-status")
        self._cluster = weakref.ref(cluster)
        self._key = cluster.key
        self._refresh_s = refresh_s
        self._done = threading.Event()
        threading.Thread(target=self._refresh, daemon=True, name="nbdist-status-view").start()

    def _refresh(self):
        addresses = set()
        try:
            while not self._done.wait(self._refresh_s):
                cluster = self._cluster()
                if cluster is None or not cluster.running:
                    return
                rows = cluster.status()
                addresses.update(r["address"] for r in rows)
                if not self._done.is_set():
                    self.widget.value = render.status_html(rows, cluster)
        finally:
            for address in addresses:  # this thread's sockets
                transport.drop_channel(address, self._key)

    def finish(self, cluster):
        """Stops refreshing and shows the final (stopped) state."""
        self._done.set()
        self.widget.value = render.status_html(cluster.status(), cluster)
