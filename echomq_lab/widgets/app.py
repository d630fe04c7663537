"""The lab as a click-only app. ``python -m echomq_lab.widgets.app [voila options] notebooks`` (what
``make app`` runs) is plain Voilà on the notebooks folder (pages without code, widgets live,
options passed through), except that:

- the browser opens the hub page rather than the file list; the file list (``/``) is the one the
  server draws (Voilà's "classic" list: the one its browser script draws stays empty);
- no page asks anything of another origin: Voilà's templates link Font Awesome stylesheets from
  a CDN (the page template two, the list of pages one), which the app leaves out (its own
  bundle carries the same icons and fonts, served by the app itself);
- each page keeps the reader's self-check answers, their verdicts and the place in the browser
  (``answers.js``, as the static site does), presses the answers again and scrolls back to the
  place once the page is live, has a bar with "← previous · hub · next →" and a "Start over"
  button that forgets the page's answers and place (``app_page.js``); the hub shows which
  checks of each page the reader has answered, and a summary of the module (``progress.js``);
- each page's note on how it comes alive in JupyterLab is left out (here it runs by itself);
- a page's kernel left idle for :data:`CULL_IDLE_S` seconds with no tab connected to it is
  shut down (looked for every :data:`CULL_EVERY_S` seconds): Jupyter's own kernel culling,
  whose options (``--MappingKernelManager.cull_idle_timeout=S``, ``cull_interval``,
  ``cull_connected``) still win when given.
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

from echomq_lab.widgets.progress import course_script

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
#: The reader's progress, shown on the hub (shared with the static site).
PROGRESS_JS = Path(__file__).with_name("progress.js")
#: A page's kernel idle this long (seconds) with no tab connected is shut down.
CULL_IDLE_S = 600
#: How often the app looks for such kernels (seconds).
CULL_EVERY_S = 60
#: The tag of each page's note on how it comes alive in JupyterLab (tools/course.py: RUN_TAG).
RUN_TAG = "how-to-run"
#: The app's page script: answers and place kept and given back, and a "Start over" button.
PAGE_JS = Path(__file__).with_name("app_page.js")
#: The page template: Voilà's own ``lab`` template, less the CDN links, with the reader's
#: answers and place kept.
_OWN_TEMPLATE = (
    "{%- extends 'voila/templates/lab/index.html.j2' -%}\n"
    "{%- block notebook_css -%}{%- autoescape false -%}\n"
    "{{ super()" + "".join(f" | replace({link!r}, '')" for link in CDN_LINKS) + " }}\n"
    f"<style>.celltag_{RUN_TAG} {{ display: none; }}</style>\n"
    "{%- endautoescape -%}{%- endblock notebook_css -%}\n"
    "{% block footer_js %}{{ super() }}{% raw %}"
    + course_script() + "<script>\n"
    + ANSWERS_JS.read_text(encoding="utf-8") + PROGRESS_JS.read_text(encoding="utf-8")
    + PAGE_JS.read_text(encoding="utf-8")
    + "</script>{% endraw %}{% endblock footer_js %}\n"
)
#: The frame of the app's other pages (the list of pages): Voilà's own, less the CDN link its
#: base page has outside any block.
_OWN_FRAME = """<!DOCTYPE HTML>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>{% block title %}echomq lab{% endblock %}</title>
  <meta name="viewport" content="width=device-width, initial-scale=1.0">
  {% block stylesheets %}{% if include_css %}{{ include_css("static/index.css") }}
  {% if theme == 'dark' %}{{ include_css("static/theme-dark.css") }}
  {% elif theme == 'light' %}{{ include_css("static/theme-light.css") }}
  {% else %}{{ include_lab_theme(theme) }}{% endif %}{% endif %}{% endblock %}
  {% block meta %}{% endblock %}
</head>
<body data-base-url="{{ base_url }}voila/" data-voila="voila">
  <noscript><div id="noscript">The app's pages need JavaScript.</div></noscript>
  <div>{% block body %}{% endblock %}</div>
  {% block scripts %}{% endblock %}
</body>
</html>
"""


def own_template_folder() -> str:
    """A temporary folder holding the app's page template (removed when the app exits)."""
    folder = Path(tempfile.mkdtemp(prefix="echomq-app-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    (folder / "index.html.j2").write_text(_OWN_TEMPLATE, encoding="utf-8")
    (folder / "page.html").write_text(_OWN_FRAME, encoding="utf-8")
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

    def initialize(self, argv: list[str] | None = None) -> None:
        """Voilà's start, with the list of pages (``/``) drawn by the server unless the options
        say otherwise: the list Voilà draws in the browser stays empty here."""
        super().initialize(argv)
        if "classic_tree" not in self.config.VoilaConfiguration:
            self.voila_configuration.classic_tree = True

    def init_settings(self) -> dict[str, object]:
        """Voilà's settings, with idle kernels culled (:data:`CULL_IDLE_S`, every
        :data:`CULL_EVERY_S` seconds) unless the options say otherwise."""
        kernels = self.config.MappingKernelManager
        if "cull_idle_timeout" not in kernels:
            kernels.cull_idle_timeout = CULL_IDLE_S
        if "cull_interval" not in kernels:
            kernels.cull_interval = CULL_EVERY_S
        settings: dict[str, object] = super().init_settings()
        return settings

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
