/* Compile-time proof that the native launcher (`cuda/native/launcher.c`, which calls a
 * function pointer of `launch_fn_t` below) may call HIP's hipModuleLaunchKernel: the two
 * prototypes pass every argument in the same registers and stack slots and return an int.
 * Nothing here runs; compile it with
 *   cc -std=c11 -fsyntax-only -D__HIP_PLATFORM_AMD__ -I<rocm>/include launch_abi.c
 * (tests/hip/test_hip_runtime.py does, against Debian's /usr/include/hip). */
#include <hip/hip_runtime_api.h>

typedef int (*launch_fn_t)(void *func, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                           unsigned smem, void *stream, void **params, void **extra);

/* the exact prototype the launcher relies on, parameter for parameter */
typedef hipError_t (*hip_launch_t)(hipFunction_t f, unsigned int gridDimX, unsigned int gridDimY,
                                   unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                                   unsigned int blockDimZ, unsigned int sharedMemBytes, hipStream_t stream,
                                   void **kernelParams, void **extra);
_Static_assert(__builtin_types_compatible_p(__typeof__(&hipModuleLaunchKernel), hip_launch_t),
               "hipModuleLaunchKernel's prototype changed: re-check the native launcher's launch_fn_t");

/* the types that differ in name only: same size and class (integer / pointer), so the same
   registers on every ABI HIP runs on (x86-64 System V, aarch64) */
_Static_assert(sizeof(hipError_t) == sizeof(int), "hipError_t is returned as an int");
_Static_assert(sizeof(hipFunction_t) == sizeof(void *), "hipFunction_t is a pointer");
_Static_assert(sizeof(hipStream_t) == sizeof(void *), "hipStream_t is a pointer");
_Static_assert(hipSuccess == 0, "the launcher treats 0 as success");

