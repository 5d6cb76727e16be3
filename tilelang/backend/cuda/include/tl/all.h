// tl/all.h -- every TileLang CUDA header.  Generated kernels include this one
// file.  It compiles for any target from sm_80 upward: Hopper-only helpers
// (stmatrix, mbarrier tx / try_wait, TMA, cluster, fence_proxy_async) are
// declared for sm_90+, wgmma / setmaxnreg for sm_90a only, and fp8 mma.sync
// requires sm_89+ (a static_assert fires when it is used on older targets).
#pragma once

#include "common.h"

#include "atomic.h"
#include "copy.h"
#include "cp_async.h"
#include "debug.h"
#include "ldmatrix.h"
#include "mbarrier.h"
#include "mma.h"
#include "rasterize.h"
#include "reduce.h"
#include "regs.h"
#include "philox.h"
#include "setmaxnreg.h"
#include "sync.h"
#include "tma.h"
#include "wgmma.h"
