// debug.h.  Run as:
//   test_debug print   -- device_print for every scalar type (the pytest driver
//                         checks the printed lines)
//   test_debug assert  -- TL_DEVICE_ASSERT with a false condition must print
//                         the message and abort the kernel
#include "harness.h"
#include "tl/all.h"

using namespace tl_test;

__global__ void print_kernel(int three) {
  if (blockIdx.x != 1 || threadIdx.x != 2) return;  // one printing thread: block 1, thread 2
  const float f = 1.5f;
  tl::device_print("tlprint-msg");
  tl::device_print("tlprint-bool", three == 3);
  tl::device_print("tlprint-i8", static_cast<int8_t>(-7));
  tl::device_print("tlprint-u8", static_cast<uint8_t>(200));
  tl::device_print("tlprint-i16", static_cast<int16_t>(-300));
  tl::device_print("tlprint-u16", static_cast<uint16_t>(60000));
  tl::device_print("tlprint-i32", -123456 * three / 3);
  tl::device_print("tlprint-u32", 4000000000u);
  tl::device_print("tlprint-i64", -1234567890123LL);
  tl::device_print("tlprint-u64", 18000000000000000000ull);
  tl::device_print("tlprint-f32", f);
  tl::device_print("tlprint-f64", 0.1);
  tl::device_print("tlprint-f16", __float2half(-2.25f));
  tl::device_print("tlprint-bf16", __float2bfloat16(3.0f));
  tl::device_print("tlprint-e4m3", tl::cvt<tl::fp8_e4m3_t>(0.5f));
  tl::device_print("tlprint-e5m2", tl::cvt<tl::fp8_e5m2_t>(-4.0f));
  tl::device_print("tlprint-ptr", static_cast<const void*>(nullptr));
}

__global__ void assert_kernel(int value) {
  TL_DEVICE_ASSERT(value != 42 || threadIdx.x != 5, "value must not be 42");
}

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "print";
  if (mode == "print") {
    print_kernel<<<2, 4>>>(3);
    sync_or_die("print");
    std::printf("PASS device_print_ran\n");
    return finish();
  }
  // A passing assertion first: no output, no error.
  assert_kernel<<<1, 32>>>(7);
  sync_or_die("assert_ok");
  std::printf("PASS device_assert_true_is_silent\n");
  std::fflush(stdout);
  assert_kernel<<<1, 32>>>(42);
  const cudaError_t err = cudaDeviceSynchronize();
  Check check("device_assert_traps");
  check.expect(err != cudaSuccess, "kernel with a failing TL_DEVICE_ASSERT returned success");
  std::printf("assert error: %s\n", cudaGetErrorString(err));
  check.done();
  return finish();
}
