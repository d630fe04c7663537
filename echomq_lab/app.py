"""The lab as a click-only app: ``python -m echomq_lab.app [voila options] notebooks`` (what
``make app`` runs) is plain Voilà on the notebooks folder, every page shown without its code and
its widgets live, except that the browser opens the hub page (:data:`HUB`), not the file list.
Voilà's own options pass through (``--port=N``, ``--no-browser``, ``--token``, ...).
"""

from __future__ import annotations

import sys
import threading
import webbrowser

from jupyter_server.utils import url_path_join
from voila.app import Voila  # type: ignore[import-untyped]

#: The page the browser opens first: the course's hub.
HUB = "00-the-record-hash.ipynb"


def hub_url(connection_url: str, token: str = "") -> str:
    """The address of the hub page on a Voilà server at ``connection_url`` (base URL included)."""
    url = url_path_join(connection_url, "voila", "render", HUB)
    return f"{url}?token={token}" if token else url


class App(Voila):  # type: ignore[misc]
    """Voilà whose browser opens on the hub page of the folder it serves."""

    def launch_browser(self) -> None:
        """Open :func:`hub_url` in the default browser (in a thread, as Voilà does)."""
        try:
            browser = webbrowser.get(self.browser or None)
        except webbrowser.Error as exc:
            self.log.warning("No web browser found: %s.", exc)
            return
        token = self.identity_provider.token if self.identity_provider.token_generated else ""
        url = hub_url(self.connection_url, token)
        self.log.info("Opening the hub page: %s", url)
        threading.Thread(
            target=browser.open, args=(url,), kwargs={"new": self.webbrowser_open_new}, daemon=True
        ).start()


def main(argv: list[str] | None = None) -> None:
    """Run the app until interrupted (Ctrl+C)."""
    App.launch_instance(argv=sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    main()
