"""LSP handlers for navigation (definition, hover text, completion, signature help), the
source-editing quick fixes and *Copy generated source of this tile op*.

Protocol conversion only: the features live in navigation.py, quickfix.py and
tileop_source.py. `register(server)` adds the handlers; server.py's hover and code-action
handlers call `hover_text` and `code_actions` here.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from pathlib import Path

from lsprotocol import types as t

from . import quickfix
from .actions import ActionError
from .bindings import analyze_module
from .navigation import Navigator, import_aliases
from .tileop_source import tile_op_at, tile_op_source
from .worker import WorkerError

log = logging.getLogger(__name__)

CMD_COPY_OP_SOURCE = "tilelang.copyTileOpSource"
FIX_CODES = {"smem-overflow": quickfix.smem_fixes, "reg-pressure": quickfix.spill_fixes}
KINDS = {
    "function": t.CompletionItemKind.Function,
    "class": t.CompletionItemKind.Class,
    "variable": t.CompletionItemKind.Variable,
    "module": t.CompletionItemKind.Module,
    "key": t.CompletionItemKind.Property,
}

navigator = Navigator()
_fix_cache: OrderedDict[tuple, list[quickfix.Fix]] = OrderedDict()
_tuning_cache: OrderedDict[tuple, tuple[float, dict | None]] = OrderedDict()
TUNING_TTL_S = 30.0


def _text(ls, uri: str) -> tuple[str, str]:
    return ls._doc_for(uri)


def _server_pos(ls, uri: str, pos: t.Position) -> tuple[int, int]:
    doc = ls.workspace.get_text_document(uri)
    p = doc.position_codec.position_from_client_units(doc.lines, pos)
    return p.line, p.character


def _client_range(ls, uri: str, lines: list[str], line: int, col: int, end_line: int, end_col: int) -> t.Range:
    doc = ls.workspace.get_text_document(uri)
    codec = doc.position_codec
    padded = lines + [""]
    return t.Range(
        start=codec.position_to_client_units(padded, t.Position(line=line, character=col)),
        end=codec.position_to_client_units(padded, t.Position(line=end_line, character=end_col)),
    )


def hover_text(ls, uri: str, pos: t.Position) -> str | None:
    try:
        text, _ = _text(ls, uri)
    except OSError:
        return None
    line, col = _server_pos(ls, uri, pos)
    return navigator.hover(text, line, col)


def register(server) -> None:
    @server.feature(t.TEXT_DOCUMENT_DEFINITION)
    def definition(ls, params: t.DefinitionParams):
        text, _ = _text(ls, params.text_document.uri)
        line, col = _server_pos(ls, params.text_document.uri, params.position)
        got = navigator.definition(text, line, col)
        if got is None:
            return None
        path, dline, dcol, dend = got
        rng = t.Range(start=t.Position(line=dline, character=dcol), end=t.Position(line=dline, character=dend))
        return t.Location(uri=Path(path).as_uri(), range=rng)

    @server.feature(
        t.TEXT_DOCUMENT_COMPLETION, t.CompletionOptions(trigger_characters=[".", '"', "'"], resolve_provider=False)
    )
    def completion(ls, params: t.CompletionParams):
        uri = params.text_document.uri
        text, _ = _text(ls, uri)
        line, col = _server_pos(ls, uri, params.position)
        items = []
        lines = text.splitlines()
        for c in navigator.completions(text, line, col):
            item = t.CompletionItem(
                label=c.label,
                kind=KINDS.get(c.kind, t.CompletionItemKind.Text),
                detail=c.detail or None,
                documentation=t.MarkupContent(kind=t.MarkupKind.Markdown, value=c.documentation)
                if c.documentation
                else None,
                sort_text=c.sort_text,
            )
            if c.replace_start is not None:
                rng = _client_range(ls, uri, lines, line, c.replace_start, line, col)
                item.text_edit = t.TextEdit(range=rng, new_text=c.insert_text or c.label)
                item.filter_text = c.label
            elif c.insert_text:
                item.insert_text = c.insert_text
            items.append(item)
        return t.CompletionList(is_incomplete=False, items=items) if items else None

    @server.feature(
        t.TEXT_DOCUMENT_SIGNATURE_HELP, t.SignatureHelpOptions(trigger_characters=["(", ","], retrigger_characters=[])
    )
    def signature_help(ls, params: t.SignatureHelpParams):
        uri = params.text_document.uri
        text, _ = _text(ls, uri)
        line, col = _server_pos(ls, uri, params.position)
        sig = navigator.signature_help(text, line, col)
        if sig is None:
            return None
        info = t.SignatureInformation(
            label=sig.label,
            documentation=t.MarkupContent(kind=t.MarkupKind.Markdown, value=sig.documentation)
            if sig.documentation
            else None,
            parameters=[t.ParameterInformation(label=p) for p in sig.params],
            active_parameter=sig.active,
        )
        return t.SignatureHelp(signatures=[info], active_signature=0, active_parameter=sig.active)

    @server.command(CMD_COPY_OP_SOURCE)
    async def copy_tile_op_source(ls, *args):
        if len(args) == 1 and isinstance(args[0], list | tuple):
            args = tuple(args[0])
        if len(args) < 4:
            raise ValueError("expected arguments [uri, function_name, first_line, last_line]")
        uri, name, start, end = str(args[0]), str(args[1]), int(args[2]), int(args[3])
        quiet = bool(args[4]) if len(args) > 4 else False
        text, path = ls._doc_for(uri)
        try:
            got = await asyncio.to_thread(tile_op_source, text, path, name, start, end, ls.settings)
        except (ActionError, WorkerError) as e:
            msg = str(e) if isinstance(e, ActionError) else e.message
            ls.show(msg, t.MessageType.Error)
            return {"error": msg}
        lines = got.text.count("\n")
        if not quiet:
            ls.show(f"{name} line {start}: {lines} line(s) of {got.language} source\n{got.text}")
        return {"text": got.text, "runs": got.runs, "lines": lines, "language": got.language}


def _wants(only: list[str], kind: str) -> bool:
    return not only or any(kind == k or kind.startswith(k + ".") or k == "" for k in only)


def _workspace_edit(ls, uri: str, old: str, fix: quickfix.Fix, version) -> t.WorkspaceEdit:
    lines = old.splitlines()
    edits = [t.TextEdit(range=_client_range(ls, uri, lines, *e[:4]), new_text=e[4]) for e in fix.edits]
    doc = t.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version)
    return t.WorkspaceEdit(document_changes=[t.TextDocumentEdit(text_document=doc, edits=edits)])


def _analyse_fn(ls, path: str, name: str):
    """The analysis of kernel `name` in an edited text, as the diagnostics it would get."""
    s = ls.settings

    def analyse(text: str) -> list[dict] | None:
        res = ls.analyzer.analyse(path, text, None, s.target, s.timeout_ms / 1000)
        fr = res.function_named(name) if res is not None and res.syntax is None else None
        if fr is None:
            return None
        codes = {d.get("code") for d in fr.diagnostics}
        if codes & {"timeout", "crash", "unavailable"}:
            return None
        return list(fr.diagnostics) + list((fr.info or {}).get("diagnostics") or [])

    return analyse


async def code_actions(ls, params: t.CodeActionParams, only: list[str]) -> list[t.CodeAction]:
    """Quick fixes for the diagnostics in the request, and the kernel / tile-op actions at the cursor."""
    uri = params.text_document.uri
    try:
        text, path = ls._doc_for(uri)
        fns = analyze_module(text)
    except (OSError, SyntaxError):
        return []
    state = ls.session.docs.get(uri)
    version = state.version if state else None
    out: list[t.CodeAction] = []
    if _wants(only, "quickfix"):
        for diag in params.context.diagnostics:
            code = diag.code if isinstance(diag.code, str) else None
            if code not in FIX_CODES or diag.source not in (None, "tilelang"):
                continue
            line1 = diag.range.start.line + 1
            fn = next((f for f in fns if f.start_line <= line1 <= f.end_line), None)
            if fn is None:
                continue
            key = (uri, text, fn.name, code, ls.settings.target)
            fixes = _fix_cache.get(key)
            if fixes is None:
                try:
                    fixes = await asyncio.to_thread(FIX_CODES[code], text, fn.name, _analyse_fn(ls, path, fn.name))
                except Exception:  # noqa: BLE001 - a failed search (libcst cannot parse, ...) offers no fix
                    log.exception("quick-fix search failed")
                    fixes = []
                _fix_cache[key] = fixes
                while len(_fix_cache) > 32:
                    _fix_cache.popitem(last=False)
            for fix in fixes:
                out.append(
                    t.CodeAction(
                        title=fix.title,
                        kind=t.CodeActionKind.QuickFix,
                        diagnostics=[diag],
                        is_preferred=fix is fixes[0],
                        edit=_workspace_edit(ls, uri, text, fix, version),
                    )
                )
    line1 = params.range.start.line + 1
    fn = next((f for f in fns if f.start_line <= line1 <= f.end_line), None)
    if fn is None:
        return out
    if _wants(only, "refactor.rewrite"):
        analysed = state.usable().function_named(fn.name) if state and state.usable() else None
        try:
            pin = quickfix.pin_fix(text, fn.name, analysed.fn if analysed else None)
            if pin is not None:
                edit = _workspace_edit(ls, uri, text, pin, version)
                out.append(t.CodeAction(title=pin.title, kind=pin.kind, edit=edit))
            tuned = await _tuning_action(ls, uri, text, path, fn, version)
            if tuned is not None:
                out.append(tuned)
        except Exception:  # noqa: BLE001 - the other actions are still offered
            log.exception("refactoring actions failed")
    if _wants(only, "source.tilelang.copyTileOpSource"):
        aliases = {a for a, m in import_aliases(text).items() if m == "tilelang.language"} | {"T"}
        op = tile_op_at(text, line1, aliases)
        if op is not None and fn.def_line < op[0] <= fn.end_line:
            title = f"Copy generated source of this tile op ({op[2]}, line {op[0]})"
            cmd = t.Command(title=title, command=CMD_COPY_OP_SOURCE, arguments=[uri, fn.name, op[0], op[1]])
            out.append(t.CodeAction(title=title, kind="source.tilelang.copyTileOpSource", command=cmd))
    return out


def _is_autotuned(text: str, fn) -> bool:
    lines = text.splitlines()[fn.start_line - 1 : fn.def_line]
    return any("autotune" in ln for ln in lines if ln.lstrip().startswith("@"))


async def _tuning_action(ls, uri: str, text: str, path: str, fn, version) -> t.CodeAction | None:
    if not _is_autotuned(text, fn):
        return None
    # editors ask for code actions on every cursor move: one cache lookup per text and 30 s
    key = (path, fn.name, "\n".join(text.splitlines()[fn.start_line - 1 : fn.end_line]))
    hit = _tuning_cache.get(key)
    if hit is not None and time.monotonic() - hit[0] < TUNING_TTL_S:
        found = hit[1]
    else:
        req = {"op": "tuning", "source": text, "path": path, "function": fn.name, "target": ls.settings.target}
        try:
            msg = await asyncio.to_thread(ls.worker.call, req, 10.0)
        except WorkerError as e:
            log.info("tuning-cache lookup failed: %s", e.message)
            return None
        found = msg.get("result")
        _tuning_cache[key] = (time.monotonic(), found)
        while len(_tuning_cache) > 64:
            _tuning_cache.popitem(last=False)
    if not found:
        return None
    values = {k: v for k, v in found["config"].items() if k != "pass_configs"}
    new, skipped = quickfix.apply_values(text, fn.name, values)
    if new == text:
        return None
    applied = ", ".join(f"{k}={v!r}" for k, v in values.items() if k not in skipped)
    title = f"Apply the autotuner's best config ({applied})"
    if found.get("latency") is not None:
        title += f" — {found['latency']:.3f} ms"
    if skipped:
        title += f"; not written: {', '.join(skipped)}"
    fix = quickfix.Fix(title, new, quickfix.text_edits(text, new), "refactor.rewrite")
    return t.CodeAction(title=title, kind=fix.kind, edit=_workspace_edit(ls, uri, text, fix, version))
