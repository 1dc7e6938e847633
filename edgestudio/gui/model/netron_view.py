"""The Netron tab: the netron package's viewer in QtWebEngine, fully offline.

As shipped, Netron's page looks up the user's country on the web, shows a blocking cookie banner,
sends analytics, and locks itself 180 days after its build (ARCHITECTURE.md). Here it runs from a
custom ``netron:`` URL scheme (no TCP port at all): the scheme handler serves the package's files
and this one model; ``index.html`` is rewritten with version 0.0.0 (Netron skips telemetry for
unpackaged builds) and today's date; a script at document creation answers the consent cookie;
and a request interceptor blocks everything that is not local. External links open in the
system browser.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import mimetypes
import os
import re
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import QBuffer, QByteArray, QIODevice, QTimer, QUrl, Signal
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

SCHEME = b"netron"
HOST = "app"
ALLOWED_SCHEMES = frozenset({"netron", "data", "blob", "about"})
INSTALL_HINT = (
    "<h3>The Netron view needs QtWebEngine</h3>"
    "<p>Install the optional extra to see this model in Netron, fully offline:</p>"
    "<pre>pip install 'edgestudio[netron]'</pre>"
    "<p>(PySide6-Addons for QtWebEngine, about 180 MB, and the netron package.) "
    "The native Graph tab works without it.</p>"
)
COOKIE_SHIM = """
Object.defineProperty(document, 'cookie', {
  configurable: false,
  get: function () { return 'consent=' + Date.now(); },
  set: function (value) { }
});
"""

# Netron writes shapes between U+3008 and U+3009, which the usual Linux fonts lack: our small
# font (resources/fonts/make_brackets_font.py) goes first in Netron's font stacks for exactly
# those code points; every other character keeps Netron's fonts.
BRACKETS_FONT = "edgestudio-brackets.ttf"
_NETRON_FONTS = (
    '-apple-system, BlinkMacSystemFont, "Segoe WPC", "Segoe UI", "Ubuntu", '
    '"Droid Sans", sans-serif, "PingFang SC"'
)
BRACKETS_STYLE = (
    "<style>@font-face { font-family: 'EdgeStudio Brackets'; "
    f"src: url('{BRACKETS_FONT}') format('truetype'); unicode-range: U+3008-3009, U+2026; }}"
    "body, button, .sidebar, .node-item text, .node-argument > text, .edge-label "
    f"{{ font-family: 'EdgeStudio Brackets', {_NETRON_FONTS} !important; }}</style>"
)

_available: bool | None = None
# Profiles stay referenced here until their page is gone (Python would otherwise free a profile
# as soon as its NetronView is collected, possibly before the page).
_LIVE_PROFILES: set[object] = set()


def _release_profile(profile: object) -> None:
    _LIVE_PROFILES.discard(profile)
    with contextlib.suppress(RuntimeError):  # at exit Qt may have freed it already
        profile.deleteLater()  # type: ignore[attr-defined]


@functools.cache
def _web_classes() -> tuple[type, type, type]:
    """The scheme handler, request interceptor and page classes (QtWebEngine imported lazily)."""
    from PySide6.QtWebEngineCore import (
        QWebEnginePage,
        QWebEngineUrlRequestInfo,
        QWebEngineUrlRequestInterceptor,
        QWebEngineUrlRequestJob,
        QWebEngineUrlSchemeHandler,
    )

    class Handler(QWebEngineUrlSchemeHandler):
        """Serves the rewritten index, netron's own files and the one model, nothing else."""

        def __init__(
            self, parent: Any, view: weakref.ref[NetronView], index: str, root: Path
        ) -> None:
            super().__init__(parent)
            self._view, self._index, self._root = view, index.encode("utf-8"), root

        def requestStarted(self, job: QWebEngineUrlRequestJob) -> None:
            url = job.requestUrl()
            path = url.path().lstrip("/")
            view = self._view()
            data: bytes | None = None
            if view is None or url.host() != HOST:
                data = None
            elif path in ("", "index.html"):
                data = self._index
            elif path == f"model/{view.model_path.name}":
                data = view.model_path.read_bytes()
            elif path == BRACKETS_FONT:
                from edgestudio.resources import ROOT

                data = (ROOT / "fonts" / BRACKETS_FONT).read_bytes()
            elif "/" not in path and (self._root / path).is_file():
                data = (self._root / path).read_bytes()
            if data is None or view is None:
                job.fail(QWebEngineUrlRequestJob.Error.UrlNotFound)
                return
            view.served.append(path)
            mime = mimetypes.guess_type(path or "index.html")[0] or "application/octet-stream"
            if path.endswith(".js"):
                mime = "text/javascript"
            buffer = QBuffer(job)
            buffer.setData(QByteArray(data))
            buffer.open(QIODevice.OpenModeFlag.ReadOnly)
            job.reply(mime.encode(), buffer)

    class Interceptor(QWebEngineUrlRequestInterceptor):
        """Blocks every request that is not local (and records what the page asked for)."""

        def __init__(self, parent: Any, view: weakref.ref[NetronView]) -> None:
            super().__init__(parent)
            self._view = view

        def interceptRequest(self, info: QWebEngineUrlRequestInfo) -> None:
            url = info.requestUrl()
            view = self._view()
            if view is not None:
                view.intercepted.append(url.toString())
            if url.scheme() not in ALLOWED_SCHEMES:
                if view is not None:
                    view.blocked_requests.append(url.toString())
                info.block(True)

    class Page(QWebEnginePage):
        """Keeps navigation local; links go to the system browser."""

        def acceptNavigationRequest(
            self, url: QUrl | str, kind: QWebEnginePage.NavigationType, main_frame: bool
        ) -> bool:
            url = QUrl(url)
            if url.scheme() in ALLOWED_SCHEMES:
                return True
            if url.scheme() in ("http", "https", "mailto"):
                QDesktopServices.openUrl(url)
            return False

        def createWindow(self, kind: QWebEnginePage.WebWindowType) -> QWebEnginePage:
            return Page(self.profile(), self)  # its first navigation opens externally

    return Handler, Interceptor, Page


def netron_dir() -> Path | None:
    """The installed netron package's folder (its viewer files), or None."""
    import importlib.util

    spec = importlib.util.find_spec("netron")
    if spec is None:
        return None
    # The package's search path, not its origin: in a frozen app the code lives in an archive
    # while the viewer files sit in the folder this names.
    if spec.submodule_search_locations:
        return Path(next(iter(spec.submodule_search_locations)))
    return Path(spec.origin).parent if spec.origin else None


def prepare_web_engine() -> bool:
    """Register the ``netron:`` scheme; must run before the QApplication is created.

    Returns whether QtWebEngine and netron are available. Safe to call more than once.
    """
    global _available
    if _available is not None:
        return _available
    try:
        from PySide6 import QtWebEngineWidgets  # noqa: F401  (must load before QApplication)
        from PySide6.QtWebEngineCore import QWebEngineUrlScheme
    except ImportError:
        _available = False
        return False
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        # Chromium refuses to run its sandbox as root.
        os.environ.setdefault("QTWEBENGINE_DISABLE_SANDBOX", "1")
    os.environ.setdefault(
        "QTWEBENGINE_CHROMIUM_FLAGS",
        "--disable-background-networking --disable-component-update --no-first-run --disable-sync",
    )
    scheme = QWebEngineUrlScheme(SCHEME)
    scheme.setSyntax(QWebEngineUrlScheme.Syntax.Host)
    flags = QWebEngineUrlScheme.Flag
    scheme.setFlags(
        flags.SecureScheme | flags.LocalScheme | flags.LocalAccessAllowed | flags.CorsEnabled
    )
    QWebEngineUrlScheme.registerScheme(scheme)
    _available = netron_dir() is not None
    return _available


def rewritten_index(html: str, model_name: str, today: dt.datetime | None = None) -> str:
    """Netron's index.html with version 0.0.0, today's date, our model as its file, and the
    font for the brackets it writes shapes between."""
    now = (today or dt.datetime.now(dt.timezone.utc)).strftime("%Y-%m-%d %H:%M:%S")
    html = re.sub(
        r'<meta name="version" content="[^"]*">', '<meta name="version" content="0.0.0">', html
    )
    html = re.sub(
        r'<meta name="date" content="[^"]*">', f'<meta name="date" content="{now}">', html
    )
    file_meta = f'<meta name="file" content="model/{model_name}">'
    html = html.replace('<meta charset="utf-8">', f'<meta charset="utf-8">\n{file_meta}', 1)
    return html.replace("</head>", f"{BRACKETS_STYLE}\n</head>", 1)


class NetronView(QWidget):
    """A Netron viewer for one model file, or an explanation when QtWebEngine is missing."""

    loaded = Signal(bool)

    def __init__(self, model_path: Path, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("netron_view")
        self.model_path = model_path
        self.blocked_requests: list[str] = []
        self.served: list[str] = []
        self.intercepted: list[str] = []  # every request the page made, as the interceptor saw it
        self.web: Any = None  # a QWebEngineView when QtWebEngine is installed
        self.page_loaded = False  # set once the page finished loading (or failed to)
        self.drawn = False  # Netron shows the graph (or its error): its page is 'default'
        self._drawn_polls = 0
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        if not prepare_web_engine():
            self.notice = QLabel(INSTALL_HINT)
            self.notice.setWordWrap(True)
            layout.addWidget(self.notice)
            return
        self._build(layout)

    def _build(self, layout: QVBoxLayout) -> None:
        from PySide6.QtWebEngineCore import QWebEngineProfile, QWebEngineScript
        from PySide6.QtWebEngineWidgets import QWebEngineView

        handler_class, interceptor_class, page_class = _web_classes()
        found = netron_dir()
        assert found is not None
        index = rewritten_index((found / "index.html").read_text("utf-8"), self.model_path.name)
        # A profile must outlive its pages: it has no parent and is deleted once the page is.
        self.web = QWebEngineView(self)
        self.profile = profile = QWebEngineProfile()  # off the record: no disk, no cookies
        # The handler and interceptor hold the view weakly: a reference cycle through them would
        # leave the view to the cyclic collector, whose finalising of QtWebEngine objects while a
        # Chromium thread waits on the GIL inside our handler deadlocked the process.
        self._handler = handler_class(self.profile, weakref.ref(self), index, found)
        self._interceptor = interceptor_class(self.profile, weakref.ref(self))
        self.profile.installUrlSchemeHandler(SCHEME, self._handler)
        self.profile.setUrlRequestInterceptor(self._interceptor)
        script = QWebEngineScript()
        script.setName("consent-cookie")
        script.setInjectionPoint(QWebEngineScript.InjectionPoint.DocumentCreation)
        script.setWorldId(QWebEngineScript.ScriptWorldId.MainWorld)
        script.setSourceCode(COOKIE_SHIM)
        self.profile.scripts().insert(script)
        self.page = page_class(self.profile, self.web)
        _LIVE_PROFILES.add(self.profile)
        self.page.destroyed.connect(lambda *_: _release_profile(profile))
        self.web.setPage(self.page)
        self.web.loadFinished.connect(self._on_load_finished)
        layout.addWidget(self.web)
        self.web.load(QUrl(f"netron://{HOST}/index.html"))

    def shutdown(self) -> None:
        """Tear the web page down now (closing), rather than leave it to the garbage collector.

        The page stops loading, the profile drops our handler and interceptor, and the view
        and its page are deleted (the profile follows, see ``_release_profile``).
        """
        if self.web is None:
            return
        with contextlib.suppress(RuntimeError):  # Qt may have deleted them already
            self.web.stop()
            self.profile.removeAllUrlSchemeHandlers()
            self.profile.setUrlRequestInterceptor(None)  # type: ignore[arg-type]  # None removes it
            self.web.deleteLater()  # with its child, the page
        self.web = None
        self.page_loaded = True
        self.drawn = True

    def _on_load_finished(self, ok: bool) -> None:
        self.page_loaded = True
        self.loaded.emit(ok)
        if ok:
            self._poll_drawn()
        else:
            self.drawn = True

    def _poll_drawn(self) -> None:
        """Netron reads and lays the model out after its page has loaded ('welcome spinner'
        meanwhile); it is drawn once the page is 'default', or failed on 'welcome message'.
        Polled every 150 ms, at most a minute (a model it cannot lay out is then settled)."""

        def seen(classes: object) -> None:
            text = str(classes or "")
            self._drawn_polls += 1
            if "default" in text or "message" in text or self._drawn_polls > 400:
                self.drawn = True
            elif self.web is not None:
                QTimer.singleShot(150, self._poll_drawn)

        self.run_js("document.body.className", seen)

    def is_settled(self) -> bool:
        """True when there is nothing more to wait for: no web view, or Netron has drawn the
        model (or said why it cannot)."""
        return self.web is None or (self.page_loaded and self.drawn)

    def run_js(self, code: str, callback: Callable[[object], None]) -> None:
        """Run JavaScript in the page; ``callback`` gets the result (tests, diagnostics)."""
        if self.web is not None:
            self.page.runJavaScript(code, 0, callback)
