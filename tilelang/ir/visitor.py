"""Generic visitors and mutators over the IR.

A `Visitor` walks every child of every node; override `visit_<ClassName>`
and call `self.generic_visit(node)` to continue into children. A `Mutator`
rebuilds a node only when one of its children changed (so unchanged
subtrees keep their identity); `buffer_map` substitutes buffers everywhere
they appear. Neither ever mutates its input.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from .buffer import Buffer
from .expr import BinaryOp, BufferLoad, FloatImm, IntImm, PrimExpr, StringImm, Var, binary
from .node import _CHILD_FIELDS, FrozenDict, Node, child_fields

# Nodes whose fields are plain values (a name or a constant and a dtype), never nodes: walks
# stop at them without looking at their fields — they are most of the nodes of any IR.
LEAF_NODES = frozenset({Var, IntImm, FloatImm, StringImm})


def _handler(visitor_cls: type, node_cls: type) -> Any:
    """`visitor_cls.visit_<NodeClass>` (a plain function) or None, looked up once per pair: the
    table lives on the visitor class itself, so a class made per call takes it along when it goes."""
    table = visitor_cls.__dict__.get("_visit_handlers")
    if table is None:
        table = {}
        visitor_cls._visit_handlers = table
    try:
        return table[node_cls]
    except KeyError:
        fn = table[node_cls] = getattr(visitor_cls, "visit_" + node_cls.__name__, None)
        return fn


class Visitor:
    def visit(self, node: Any) -> None:
        if isinstance(node, Node):
            fn = _handler(type(self), type(node))
            if fn is not None:
                fn(self, node)
            else:
                self.generic_visit(node)
        elif isinstance(node, (tuple, list)):
            for x in node:
                self.visit(x)

    def generic_visit(self, node: Node) -> None:
        if type(node) in LEAF_NODES:
            return
        for name in child_fields(type(node)):
            v = getattr(node, name)
            if isinstance(v, (Node, tuple, list)):
                self.visit(v)

    # Buffers are definitions, not children: visit their shapes only on demand.
    def visit_Buffer(self, node: Buffer) -> None:
        pass


class Mutator:
    def __init__(self, buffer_map: dict | None = None) -> None:
        self.buffer_map: dict[Buffer, Buffer] = dict(buffer_map or {})

    def visit(self, node: Any) -> Any:
        if isinstance(node, Node):
            fn = _handler(type(self), type(node))
            if fn is not None:
                return fn(self, node)
            return self.generic_visit(node)
        if isinstance(node, tuple):
            out = tuple(self.visit(x) for x in node)
            return node if all(a is b for a, b in zip(out, node)) else out
        if isinstance(node, FrozenDict):
            return node
        return node

    def generic_visit(self, node: Node) -> Node:
        if type(node) in LEAF_NODES:
            return node
        changes = {}
        for name in child_fields(type(node)):
            v = getattr(node, name)
            if isinstance(v, (Node, tuple)):
                nv = self.visit(v)
                if nv is not v:
                    changes[name] = nv
        return replace(node, **changes) if changes else node

    def visit_Buffer(self, node: Buffer) -> Buffer:
        return self.buffer_map.get(node, node)


class SplicingMutator(Mutator):
    """A Mutator whose statement rewrites may return a `SeqStmt` in place of one statement:
    the enclosing sequence takes its statements in line, so an `Allocate` a rewrite emits
    stays in scope to the end of the enclosing list."""

    def visit_SeqStmt(self, n: Any) -> Any:
        from .stmt import SeqStmt

        out: list = []
        changed = False
        for s in n.stmts:
            x = self.visit(s)
            changed |= x is not s
            out.extend(x.stmts if isinstance(x, SeqStmt) and x is not s else (x,))
        return replace(n, stmts=tuple(out)) if changed else n


class _FreeVars(Visitor):
    def __init__(self) -> None:
        self.found: dict[Var, None] = {}
        self.bound: set[Var] = set()

    def visit_Var(self, node: Var) -> None:
        if node not in self.bound:
            self.found.setdefault(node, None)

    def visit_For(self, node) -> None:
        self.bound.add(node.var)
        self.generic_visit(node)

    def visit_LetStmt(self, node) -> None:
        self.visit(node.value)
        self.bound.add(node.var)

    def visit_KernelLaunch(self, node) -> None:
        self.bound.update(node.block_vars)
        self.generic_visit(node)


def free_vars_of(node: Any) -> list[Var]:
    v = _FreeVars()
    v.visit(node)
    return list(v.found)


def uses_var(node: Any, var: Var) -> bool:
    """Whether `var` occurs free in `node`. Compares by identity: `var in free_vars_of(node)`
    would ask `==` of IR variables, which builds a comparison instead of answering."""
    return any(v is var for v in free_vars_of(node))


def substitute(node: Any, mapping: dict[Var, Any]) -> Any:
    """Replace Vars by expressions (ints/floats are converted) everywhere in `node`,
    including inside buffer shapes."""
    from ..errors import TileLangError
    from .expr import as_expr

    if not mapping:
        return node
    emap = {k: as_expr(v) for k, v in mapping.items()}

    class _Sub(Mutator):
        def visit_Var(self, n: Var) -> PrimExpr:
            return emap.get(n, n)

        def visit_BinaryOp(self, n: BinaryOp) -> PrimExpr:
            a, b = self.visit(n.a), self.visit(n.b)
            if a is n.a and b is n.b:
                return n
            try:  # folding may now divide by a zero constant: report it at the expression
                return binary(n.op, a, b)
            except TileLangError as err:
                raise err.with_span(n.span) from None

        def visit_Buffer(self, b: Buffer) -> Buffer:
            hit = self.buffer_map.get(b)
            if hit is not None:
                return hit
            shape = tuple(self.visit(d) for d in b.shape)
            nb = b if all(x is y for x, y in zip(shape, b.shape)) else replace(b, shape=shape)
            self.buffer_map[b] = nb
            return nb

    return _Sub().visit(node)


def collect(node: Any, pred: Callable[[Any], bool]) -> list:
    """All nodes under `node` (pre-order) for which `pred` holds — the nodes a `Visitor` walks
    (a Buffer is tested, its fields are not walked), by a plain recursive walk: the analysis and
    several passes call this hundreds of times per kernel."""
    out: list = []
    table = _CHILD_FIELDS
    leaves = LEAF_NODES
    node_types = (Node, tuple, list)

    def walk(n: Any) -> None:
        if isinstance(n, Node):
            if pred(n):
                out.append(n)
            cls = type(n)
            if cls in leaves:
                return
            if cls.__name__ == "Buffer":  # Visitor.visit_Buffer: definitions are not children
                return
            names = table.get(cls) or child_fields(cls)
            for name in names:
                v = getattr(n, name)
                if isinstance(v, node_types):
                    walk(v)
        elif isinstance(n, tuple | list):
            for x in n:
                walk(x)

    walk(node)
    return out


def buffers_loaded(node: Any) -> set[Buffer]:
    return {n.buffer for n in collect(node, lambda n: isinstance(n, BufferLoad))}
