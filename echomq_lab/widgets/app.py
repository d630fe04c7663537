"""The lab as a click-only app. ``python -m echomq_lab.widgets.app [voila options] notebooks`` (what
``make app`` runs) is plain Voilà on the notebooks folder (pages without code, widgets live,
options passed through), except that the browser opens the hub page rather than the file list,
and that every page asks nothing of another origin: Voilà's page template links two Font Awesome
stylesheets from a CDN, which the app leaves out (its own bundle carries the same icons and
fonts, served by the app itself); and that each page keeps the reader's self-check answers and
place in the browser (``answers.js``, as the static site does), presses the answers again and
scrolls back to the place once the page is live, and has a "Start over" button that forgets both
(``app_page.js``).
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
import threading
import webbrowser
from pathlib import Path

from jupyter_server.utils import url_path_join
from voila.app import Voila  # type: ignore[import-untyped]

#: The page the browser opens first: the course's hub.
HUB = "00-the-record-hash.ipynb"
#: What the page template asks of a CDN; Voilà's bundle (served by the app) has these icons.
CDN_LINKS = (
    '<link rel="stylesheet" href="https://cdn.jsdelivr.net/npm/@fortawesome/fontawesome-free@^5'
    '/css/all.min.css" type="text/css" />',
    '<link rel="stylesheet" href="https://cdn.jsdelivr.net/npm/@fortawesome/fontawesome-free@^5'
    '/css/v4-shims.min.css" type="text/css" />',
)
#: The reader's answers and place on a page, kept in the browser (shared with the static site).
ANSWERS_JS = Path(__file__).with_name("answers.js")
#: The app's page script: answers and place kept and given back, and a "Start over" button.
PAGE_JS = Path(__file__).with_name("app_page.js")
#: The page template: Voilà's own ``lab`` template, less the CDN links, with the reader's
#: answers and place kept.
_OWN_TEMPLATE = (
    "{%- extends 'voila/templates/lab/index.html.j2' -%}\n"
    "{%- block notebook_css -%}{%- autoescape false -%}\n"
    "{{ super()" + "".join(f" | replace({link!r}, '')" for link in CDN_LINKS) + " }}\n"
    "{%- endautoescape -%}{%- endblock notebook_css -%}\n"
    "{% block footer_js %}{{ super() }}{% raw %}<script>\n"
    + ANSWERS_JS.read_text(encoding="utf-8") + PAGE_JS.read_text(encoding="utf-8")
    + "</script>{% endraw %}{% endblock footer_js %}\n"
)


def own_template_folder() -> str:
    """A temporary folder holding the app's page template (removed when the app exits)."""
    folder = Path(tempfile.mkdtemp(prefix="echomq-app-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    (folder / "index.html.j2").write_text(_OWN_TEMPLATE, encoding="utf-8")
    return str(folder)


class App(Voila):  # type: ignore[misc]
    """Voilà whose browser opens on the hub page of the folder it serves, its pages asking
    nothing of another origin."""

    def setup_template_dirs(self) -> None:
        """Voilà's template folders, with the app's own page template found first."""
        super().setup_template_dirs()
        if self.voila_configuration.template == "lab":
            paths: list[str] = list(getattr(self, "template_paths"))  # noqa: B009 (untyped)
            self.template_paths = [own_template_folder(), *paths]

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
