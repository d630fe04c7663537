"""The lab as a click-only app. ``python -m echomq_lab.widgets.app [voila options] notebooks`` (what
``make app`` runs) is plain Voilà on the notebooks folder (pages without code, widgets live,
options passed through), except that the browser opens the hub page rather than the file list.
"""

from __future__ import annotations

import threading
import webbrowser

from jupyter_server.utils import url_path_join
from voila.app import Voila  # type: ignore[import-untyped]

#: The page the browser opens first: the course's hub.
HUB = "00-the-record-hash.ipynb"


class App(Voila):  # type: ignore[misc]
    """Voilà whose browser opens on the hub page of the folder it serves."""

    def launch_browser(self) -> None:
        """Open the hub page in the default browser (in a thread, as Voilà does)."""
        try:
            browser = webbrowser.get(self.browser or None)
        except webbrowser.Error as exc:
            self.log.warning("No web browser found: %s.", exc)
            return
        url = url_path_join(self.connection_url, "voila", "render", HUB)
        if self.identity_provider.token_generated:
            url += f"?token={self.identity_provider.token}"
        self.log.info("Opening the hub page: %s", url)
        threading.Thread(
            target=browser.open, args=(url,), kwargs={"new": self.webbrowser_open_new}, daemon=True
        ).start()


if __name__ == "__main__":
    App.launch_instance()  # runs until interrupted (Ctrl+C)
