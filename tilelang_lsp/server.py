"""The LSP front: protocol types live here and nowhere below.

Handlers are thin: they convert between lsprotocol types and the session /
render / actions layers. Every client feature that not all clients have
(showDocument, work-done progress, configuration, inlay-hint refresh,
dynamic registration) is used only when the client advertises it.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import threading
import uuid
from pathlib import Path

from lsprotocol import types as t
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from . import __version__, actions, handlers, render
from .bindings import analyze_document
from .config import Settings
from .documents import Analyzer
from .measure import Measurements
from .regions import parse_document
from .session import DocState, Session
from .worker import Worker, WorkerError, WorkerPool

log = logging.getLogger(__name__)

CMD_SHOW_SOURCE = "tilelang.showGeneratedSource"
CMD_BENCHMARK = "tilelang.benchmarkKernel"
CMD_RESTART = "tilelang.restartServer"
CMD_TRACE = "tilelang.showLoweringTrace"
SEVERITY = {
    "error": t.DiagnosticSeverity.Error,
    "warning": t.DiagnosticSeverity.Warning,
    "info": t.DiagnosticSeverity.Information,
    "hint": t.DiagnosticSeverity.Hint,
}


class TileLangServer(LanguageServer):
    def __init__(self, worker: Worker | WorkerPool | None = None):
        super().__init__("tilelang-lsp", __version__, max_workers=4)
        self.settings = Settings()
        self.worker = worker or WorkerPool()
        self.analyzer = Analyzer(self.worker)
        self.session = Session(self.analyzer, self.settings, self.publish)
        self.loop: asyncio.AbstractEventLoop | None = None
        self.analyzer.measurements = Measurements(self._measured)  # ptxas's figures replace the estimate

    def _measured(self) -> None:
        """A background ptxas run finished (its thread): refresh every document's hints."""
        if self.loop is not None:
            self.loop.call_soon_threadsafe(self.session.reanalyse_all)

    def use_worker(self, worker: Worker | WorkerPool) -> None:
        self.worker = self.analyzer.worker = worker

    # -- capability checks -------------------------------------------------
    def _cap(self, *path: str) -> bool:
        node = self.client_capabilities
        for name in path:
            node = getattr(node, name, None)
            if node is None:
                return False
        return bool(node)

    def supports_show_document(self) -> bool:
        return self._cap("window", "show_document", "support")

    def supports_progress(self) -> bool:
        return self._cap("window", "work_done_progress")

    # -- results -> client -------------------------------------------------
    def publish(self, state: DocState) -> None:
        self.loop = self.loop or asyncio.get_running_loop()
        doc = self.workspace.get_text_document(state.uri)
        result = state.last
        doc_lines = doc.lines  # pygls splits the source on every access: once per publish
        diags = (
            [self._diagnostic(d, state.uri, doc, doc_lines) for d in render.diagnostics(result, state.lines)]
            if result
            else []
        )
        self.text_document_publish_diagnostics(
            t.PublishDiagnosticsParams(uri=state.uri, diagnostics=diags, version=state.version)
        )
        if state.waiters == 0:
            self.refresh_hints()

    def refresh_hints(self) -> None:
        if self._cap("workspace", "inlay_hint", "refresh_support"):
            self.workspace_inlay_hint_refresh(None)

    def _range(self, doc, line: int, col: int, end_line: int, end_col: int, lines=None) -> t.Range:
        lines = doc.lines if lines is None else lines
        return t.Range(start=_client_pos(doc, lines, line, col), end=_client_pos(doc, lines, end_line, end_col))

    def _diagnostic(self, d: render.Diag, uri: str, doc, lines=None) -> t.Diagnostic:
        lines = doc.lines if lines is None else lines
        related = [
            t.DiagnosticRelatedInformation(
                location=t.Location(uri=uri, range=self._range(doc, *r[:4], lines=lines)), message=r[4]
            )
            for r in d.related
        ]
        return t.Diagnostic(
            range=self._range(doc, d.line, d.col, d.end_line, d.end_col, lines),
            message=d.message,
            severity=SEVERITY.get(d.severity, t.DiagnosticSeverity.Error),
            code=d.code or None,
            source="tilelang",
            related_information=related or None,
        )

    def inlay_hints(self, state: DocState, rng: t.Range) -> list[t.InlayHint]:
        result = state.usable()
        if result is None:
            return []
        doc = self.workspace.get_text_document(state.uri)
        lines = state.lines
        extras = {f.fn.name: state.extras_for(f.fn.name, _body(lines, f.fn)) for f in result.functions}
        out = []
        doc_lines = doc.lines  # pygls splits the source on every access: once per request
        for h in render.hints(result, lines, self.settings.inlay_hints, extras):
            if not (rng.start.line <= h.line <= rng.end.line):
                continue
            pos = _client_pos(doc, doc_lines, h.line, h.col)
            out.append(
                t.InlayHint(
                    position=pos, label=h.label, kind=t.InlayHintKind.Type, padding_left=True, tooltip=h.tooltip or None
                )
            )
        return out

    # -- configuration -----------------------------------------------------
    def apply_settings(self, obj) -> None:
        changed = self.settings.update(obj)
        if "timeout_ms" in changed:
            self.analyzer.forget_failures()
        if changed & {"target", "timeout_ms", "trust"}:
            self.session.reanalyse_all()
        if changed:
            self.refresh_hints()

    async def pull_settings(self) -> None:
        if not self._cap("workspace", "configuration"):
            return
        try:
            got = await self.workspace_configuration_async(
                t.ConfigurationParams(items=[t.ConfigurationItem(section="tilelang")])
            )
        except Exception as e:  # noqa: BLE001 - a client that fails here keeps the defaults
            log.warning("workspace/configuration failed: %s", e)
            return
        if got and isinstance(got[0], dict):
            self.apply_settings(got[0])

    # -- commands ----------------------------------------------------------
    def _doc_for(self, uri: str) -> tuple[str, str]:
        state = self.session.docs.get(uri)
        if state is not None:
            return state.text, state.path
        path = to_fs_path(uri) or uri
        return Path(path).read_text(encoding="utf-8"), path

    async def run_with_progress(self, title: str, doing: str, fn, *args):
        """Run blocking `fn(*args, on_event, cancel)` in a thread with $/progress when the client supports it."""
        cancel = threading.Event()
        token = str(uuid.uuid4()) if self.supports_progress() else None
        loop = asyncio.get_running_loop()
        steps = {"ready": ("tilelang imported in a fresh process", 30), "started": (doing, 60)}

        def on_event(ev: str):
            if token and ev in steps:
                msg, pct = steps[ev]
                report = t.WorkDoneProgressReport(message=msg, percentage=pct, cancellable=True)
                loop.call_soon_threadsafe(self.work_done_progress.report, token, report)

        if token:
            try:
                await self.work_done_progress.create_async(token)
                begin = t.WorkDoneProgressBegin(title=title, cancellable=True, message="starting", percentage=0)
                self.work_done_progress.begin(token, begin)
                self.work_done_progress.report(
                    token, t.WorkDoneProgressReport(message="starting a Python process", percentage=5)
                )
                self.work_done_progress.tokens[token].add_done_callback(lambda _f: cancel.set())
            except Exception as e:  # noqa: BLE001
                log.warning("progress unavailable: %s", e)
                token = None
        outcome, error = None, None
        try:
            outcome = await asyncio.to_thread(fn, *args, on_event, cancel)
        except asyncio.CancelledError:
            cancel.set()
            error = "cancelled"
            raise
        except WorkerError as e:
            error = "cancelled" if e.kind == "cancelled" else e.message
        except actions.ActionError as e:
            error = str(e)
        finally:
            if token:
                end = outcome.message if outcome else error or "done"
                self.work_done_progress.end(token, t.WorkDoneProgressEnd(message=end))
        return outcome, error

    def show(self, message: str, kind: t.MessageType = t.MessageType.Info) -> None:
        self.window_show_message(t.ShowMessageParams(type=kind, message=message))

    def set_kernel_hint(self, uri: str, name: str, label: str, prefix: str) -> None:
        state = self.session.docs.get(uri)
        fr = state.usable().function_named(name) if state and state.usable() else None
        if fr is None:
            return
        body = _body(state.lines, fr.fn)
        old = [x for x in state.extras_for(name, body) if not x.startswith(prefix)]
        state.extras[name] = (body, old + [label])
        self.refresh_hints()


def _client_pos(doc, lines: list[str], line: int, col: int) -> t.Position:
    """A position in the client's encoding; on an ASCII line every encoding counts the same
    (pygls' codec walks the line character by character: most of a hint request's time)."""
    if 0 <= line < len(lines) and lines[line].isascii():
        return t.Position(line=line, character=min(col, len(lines[line])))
    return doc.position_codec.position_to_client_units(lines, t.Position(line=line, character=col))


def _body(lines: list[str], fn) -> str:
    return "\n".join(lines[fn.start_line - 1 : fn.end_line])


server = TileLangServer()


@server.feature(t.INITIALIZE)
def on_initialize(ls: TileLangServer, params: t.InitializeParams):
    ls.settings.update(params.initialization_options)  # nothing may be sent to the client before `initialized`


@server.feature(t.INITIALIZED)
async def on_initialized(ls: TileLangServer, params: t.InitializedParams):
    if ls._cap("workspace", "did_change_configuration", "dynamic_registration"):
        reg = t.Registration(
            id=str(uuid.uuid4()), method=t.WORKSPACE_DID_CHANGE_CONFIGURATION, register_options={"section": "tilelang"}
        )
        try:
            await ls.client_register_capability_async(t.RegistrationParams(registrations=[reg]))
        except Exception as e:  # noqa: BLE001
            log.warning("registration failed: %s", e)
    await ls.pull_settings()


@server.feature(t.WORKSPACE_DID_CHANGE_CONFIGURATION)
async def on_config(ls: TileLangServer, params: t.DidChangeConfigurationParams):
    ls.apply_settings(params.settings)
    await ls.pull_settings()


@server.feature(t.SHUTDOWN)
def on_shutdown(ls: TileLangServer, *args):
    ls.worker.stop()
    if ls.analyzer.measurements is not None:
        ls.analyzer.measurements.close()  # kills a running background nvcc


@server.feature(t.TEXT_DOCUMENT_DID_OPEN)
def did_open(ls: TileLangServer, params: t.DidOpenTextDocumentParams):
    td = params.text_document
    ls.session.open(td.uri, to_fs_path(td.uri) or td.uri, td.text, td.version)


@server.feature(t.TEXT_DOCUMENT_DID_CHANGE)
def did_change(ls: TileLangServer, params: t.DidChangeTextDocumentParams):
    doc = ls.workspace.get_text_document(params.text_document.uri)
    ls.session.change(doc.uri, doc.source, params.text_document.version)


@server.feature(t.TEXT_DOCUMENT_DID_CLOSE)
def did_close(ls: TileLangServer, params: t.DidCloseTextDocumentParams):
    ls.session.close(params.text_document.uri)
    ls.text_document_publish_diagnostics(t.PublishDiagnosticsParams(uri=params.text_document.uri, diagnostics=[]))


@server.feature(t.TEXT_DOCUMENT_INLAY_HINT, t.InlayHintOptions(resolve_provider=False))
async def inlay_hint(ls: TileLangServer, params: t.InlayHintParams):
    state = await ls.session.current(params.text_document.uri)
    return ls.inlay_hints(state, params.range) if state else []


handlers.register(server)  # definition, completion, signature help, tile-op source (handlers.py)


@server.feature(t.TEXT_DOCUMENT_HOVER)
async def hover(ls: TileLangServer, params: t.HoverParams):
    names = handlers.hover_text(ls, params.text_document.uri, params.position)  # T.* / tilelang.* names
    state = await ls.session.current(params.text_document.uri, wait=5.0)
    result = state.usable() if state else None
    text = None
    if result is not None:
        doc = ls.workspace.get_text_document(state.uri)
        pos = doc.position_codec.position_from_client_units(doc.lines, params.position)
        text = render.hover(result, state.lines, pos.line, pos.character)
    text = "\n\n---\n\n".join(x for x in (text, names) if x)
    if not text:
        return None
    return t.Hover(contents=t.MarkupContent(kind=t.MarkupKind.Markdown, value=text))


@server.feature(
    t.TEXT_DOCUMENT_CODE_ACTION,
    t.CodeActionOptions(
        code_action_kinds=[t.CodeActionKind.Source, t.CodeActionKind.QuickFix, t.CodeActionKind.RefactorRewrite],
        resolve_provider=False,
    ),
)
async def code_action(ls: TileLangServer, params: t.CodeActionParams):
    only = [getattr(k, "value", k) for k in params.context.only or []]
    extra = await handlers.code_actions(ls, params, only)  # quick fixes, pin / tuned config, tile-op source
    if only and not any(k in ("", "source", "source.tilelang") for k in only):
        return extra or None
    try:
        text, _ = ls._doc_for(params.text_document.uri)
        fns = analyze_document(parse_document(text))  # the kernels that parse, even when the file does not
    except OSError:
        return extra or None
    line1 = params.range.start.line + 1
    fn = next((f for f in fns if f.start_line <= line1 <= f.end_line), None)
    if fn is None:
        return extra or None
    args = [params.text_document.uri, fn.name]
    out = []
    for title, cmd, kind in (
        (f"Compile and show generated source ({fn.name})", CMD_SHOW_SOURCE, "source.tilelang.showGeneratedSource"),
        (f"Benchmark kernel ({fn.name})", CMD_BENCHMARK, "source.tilelang.benchmarkKernel"),
        (f"Show lowering trace ({fn.name})", CMD_TRACE, "source.tilelang.showLoweringTrace"),
    ):
        out.append(t.CodeAction(title=title, kind=kind, command=t.Command(title=title, command=cmd, arguments=args)))
    return extra + out


@server.command(CMD_SHOW_SOURCE)
async def show_generated_source(ls: TileLangServer, *args):
    return await _dump(ls, args, "generate", "Compiling", "compiling")


@server.command(CMD_TRACE)
async def show_lowering_trace(ls: TileLangServer, *args):
    return await _dump(ls, args, "trace", "Lowering", "tracing the passes")


def _untrusted(ls: TileLangServer) -> dict | None:
    """With tilelang.analysis.trust = "none" nothing from the user's files runs, commands included."""
    if ls.settings.trust != "none":
        return None
    msg = 'tilelang.analysis.trust is "none" (e.g. an untrusted workspace): compiling and benchmarking run the file\'s code, so they are off'
    ls.show(msg, t.MessageType.Warning)
    return {"error": msg}


async def _dump(ls: TileLangServer, args: tuple, op: str, title: str, doing: str) -> dict:
    uri, name = _args(args)
    if (refused := _untrusted(ls)) is not None:
        return refused
    text, path = ls._doc_for(uri)
    root = ls.workspace.root_path
    outcome, error = await ls.run_with_progress(
        f"{title} {name}",
        f"{doing} for {ls.settings.target}",
        functools.partial(actions.compile_and_dump, op=op),
        text,
        path,
        root,
        name,
        ls.settings,
    )
    if error:
        ls.show(error, t.MessageType.Error)
        return {"error": error}
    if outcome.hint:
        ls.set_kernel_hint(uri, name, outcome.hint, "ptxas")
    file_uri = Path(outcome.path).as_uri()
    shown = False
    if ls.supports_show_document():
        try:
            page = outcome.path.endswith(".html")  # the lowering trace: a page for the browser
            show = t.ShowDocumentParams(uri=file_uri, take_focus=True, external=page or None)
            res = await ls.window_show_document_async(show)
            shown = bool(res and res.success)
        except Exception as e:  # noqa: BLE001
            log.warning("showDocument failed: %s", e)
    if not shown:
        ls.show(outcome.message)
    return {"path": outcome.path, "uri": file_uri, "shown": shown, "ptxas": (outcome.data or {}).get("ptxas")}


@server.command(CMD_BENCHMARK)
async def benchmark_kernel(ls: TileLangServer, *args):
    uri, name = _args(args)
    if (refused := _untrusted(ls)) is not None:
        return refused
    text, path = ls._doc_for(uri)
    outcome, error = await ls.run_with_progress(
        f"Benchmarking {name}",
        f"compiling and timing for {ls.settings.target}",
        actions.benchmark,
        text,
        path,
        name,
        ls.settings,
    )
    if error:
        ls.show(f"benchmark of {name}: {error}", t.MessageType.Warning if error == "cancelled" else t.MessageType.Error)
        return {"error": error}
    ls.set_kernel_hint(uri, name, outcome.hint, "bench")
    ls.show(outcome.message)
    return {"message": outcome.message, **(outcome.data or {})}


@server.command(CMD_RESTART)
async def restart_server(ls: TileLangServer, *args):
    await asyncio.to_thread(ls.worker.restart)
    ls.analyzer.clear()
    ls.session.reanalyse_all()
    ls.show("TileLang analysis process restarted")
    return {"pid": ls.worker.pid()}


def _args(args) -> tuple[str, str]:
    if len(args) == 1 and isinstance(args[0], list | tuple):
        args = tuple(args[0])
    if len(args) < 2:
        raise ValueError("expected arguments [uri, function_name]")
    return str(args[0]), str(args[1])
