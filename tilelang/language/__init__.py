"""The `T` namespace (`import tilelang.language as T`): thin builders that create IR.

No lowering logic lives here; see tilelang.tileop and tilelang.transform.
"""

from ..ir.dtype import (
    DataType,
    bfloat16,
    float4_e2m1fn,
    float8_e4m3fn,
    float8_e5m2,
    float16,
    float32,
    float64,
    int4,
    int8,
    int16,
    int32,
    int64,
    tfloat32,
    uint4,
    uint8,
    uint16,
    uint32,
    uint64,
)
from ..ir.dtype import (
    bool_ as bool,  # noqa: A004
)
from ..ir.dtype import dtype as dtype
from .conv import c2d_im2col, im2col
from .extern import (
    access_ptr,
    assume,
    attr,
    call_extern,
    call_intrin,
    call_packed,
    call_pure_extern,
    disable_warp_group_reg_alloc,
    evaluate,
    import_source,
)
from .hopper import (
    ClusterKernel,
    WarpSpecialize,
    barrier_arrive,
    barrier_wait,
    block_rank_in_cluster,
    cluster_arrive,
    cluster_arrive_relaxed,
    cluster_sync,
    cluster_wait,
    dec_max_nreg,
    fence_proxy_async,
    inc_max_nreg,
    mbarrier_arrive,
    mbarrier_arrive_expect_tx,
    mbarrier_expect_tx,
    mbarrier_wait_parity,
    set_max_nreg,
    sync_threads,
    tma_copy,
    tma_store_arrive,
    tma_store_wait,
    wait_wgmma,
    wgmma_gemm,
    ws,
)
from .kernel import (
    Kernel,
    Macro,
    Ref,
    alloc_barrier,
    alloc_buffer,
    alloc_cluster_barrier,
    alloc_fragment,
    alloc_global,
    alloc_local,
    alloc_reducer,
    alloc_shared,
    alloc_var,
    allocate,
    macro,
    prim_func,
)
from .loops import (
    Parallel,
    Persistent,
    Pipelined,
    Serial,
    Unroll,
    Vectorized,
    grid,
    parallel,
    serial,
    unroll,
    vectorized,
)
from .math import *  # noqa: F403
from .math import abs, max, min, pow, round  # noqa: A004
from .ops import (
    GemmWarpPolicy,
    annotate_compile_flags,
    annotate_layout,
    annotate_pass_configs,
    async_copy,
    atomic_add,
    atomic_addx2,
    atomic_addx4,
    atomic_max,
    atomic_min,
    clear,
    copy,
    cumsum,
    device_assert,
    fill,
    finalize_reducer,
    gemm,
    print,  # noqa: A004
    reduce,
    reduce_absmax,
    reduce_abssum,
    reduce_bitand,
    reduce_bitor,
    reduce_bitxor,
    reduce_max,
    reduce_mean,
    reduce_min,
    reduce_sum,
    reducer_init,
    reducer_update,
    use_swizzle,
)
from .random import rng_init, rng_rand, rng_rand_float
from .thread import (
    comm_reducer,
    get_block_binding,
    get_block_bindings,
    get_block_extent,
    get_block_extents,
    get_lane_idx,
    get_thread_binding,
    get_thread_bindings,
    get_thread_extent,
    get_thread_extents,
    get_warp_group_idx,
    get_warp_idx,
    get_warp_idx_sync,
    shfl_down,
    shfl_sync,
    shfl_up,
    shfl_xor,
    shuffle_elect,
    thread_binding,
    tvm_thread_allreduce,
)
from .types import Buffer_ as Buffer
from .types import Tensor, const, dynamic, empty, symbolic
from .views import reshape, view

float = float32  # noqa: A001
half = float16
double = float64
int = int32  # noqa: A001
uint = uint32
short = int16
long = int64
float8_e4m3 = float8_e4m3fn


def __getattr__(name: str):
    # Layout objects live in tilelang.layout; imported lazily to keep `import tilelang` fast.
    if name in ("Layout", "Fragment"):
        from .. import layout

        return getattr(layout, name)
    from ..errors import UnknownNameError

    raise UnknownNameError(
        f"`T.{name}` is not part of the TileLang language",
        None,
        "check the spelling; the README lists every supported T.* name",
    )
