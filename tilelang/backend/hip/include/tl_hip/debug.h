// tl_hip/debug.h -- T.device_assert on AMDGPU.
//
//   device_assert_fail(msg, file, line)
//       prints "<file>:<line>: device assertion failed: <msg> block=(..) thread=.." (device
//       printf, ROCm's hostcall buffer) and ends the wave with s_trap (__builtin_trap): the
//       dispatch fails and the HIP runtime reports the queue error.
// T.print needs nothing from here: the generated code calls printf itself.
#pragma once

#include <stdio.h>

#include "common.h"

namespace tl {

TL_DEVICE void device_assert_fail(const char* msg, const char* file, int line) {
  printf("%s:%d: device assertion failed: %s block=(%d,%d,%d) thread=%d\n", file, line, msg, (int)blockIdx.x,
         (int)blockIdx.y, (int)blockIdx.z, (int)threadIdx.x);
  __builtin_trap();
}

}  // namespace tl
