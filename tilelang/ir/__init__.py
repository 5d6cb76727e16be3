"""The tile IR: dtypes, expressions, buffers, statements, tile ops, PrimFunc."""

from .buffer import Buffer, BufferRegion, Range, make_buffer
from .dtype import DataType, dtype
from .expr import (
    And,
    BinaryOp,
    Broadcast,
    BufferLoad,
    Call,
    Cast,
    Compare,
    FloatImm,
    IntImm,
    Not,
    Or,
    PrimExpr,
    Ramp,
    Select,
    StringImm,
    Var,
    as_expr,
    binary,
    call,
    cast,
    compare,
    const_int,
    select,
    structural_equal,
    structural_hash,
)
from .function import PrimFunc
from .node import EMPTY, FrozenDict, Node
from .span import NO_SPAN, Span
from .stmt import (
    Allocate,
    AnnotateLayout,
    Atomic,
    Break,
    BufferStore,
    Continue,
    Copy,
    CumSum,
    DeviceAssert,
    Evaluate,
    Fill,
    FinalizeReducer,
    For,
    Gemm,
    Hint,
    IfThenElse,
    KernelLaunch,
    LetStmt,
    Print,
    Reduce,
    ReducerInit,
    ReducerUpdate,
    SeqStmt,
    Stmt,
    TileOp,
    While,
    seq,
    stmts_of,
)
from .visitor import Mutator, Visitor, collect, free_vars_of, substitute

__all__ = [n for n in dir() if not n.startswith("_")]
