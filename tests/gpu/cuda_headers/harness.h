// Minimal self-checking harness for the tl/ header GPU tests.
//
// Every test program prints one line per check, "PASS <name>" or
// "FAIL <name> <details>" (or "SKIP <name> <reason>"), and main() returns
// tl_test::finish(): 0 iff nothing failed.
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#define CUDA_CHECK(expr)                                                                                   \
  do {                                                                                                     \
    cudaError_t err_ = (expr);                                                                             \
    if (err_ != cudaSuccess) {                                                                             \
      std::printf("FAIL cuda_call %s:%d %s -> %s\n", __FILE__, __LINE__, #expr, cudaGetErrorString(err_)); \
      std::exit(2);                                                                                        \
    }                                                                                                      \
  } while (0)

namespace tl_test {

inline int& failures() {
  static int n = 0;
  return n;
}

// Collects mismatches of one named check; prints the first few.
class Check {
 public:
  explicit Check(std::string name) : name_(std::move(name)) {}
  Check(const Check&) = delete;
  ~Check() { done(); }

  // Record a failure (printf-style detail) when !ok.  Returns ok.
  bool expect(bool ok, const char* fmt = "", ...) {
    if (!ok) {
      if (bad_ < 5) {
        char buf[512];
        va_list ap;
        va_start(ap, fmt);
        std::vsnprintf(buf, sizeof(buf), fmt, ap);
        va_end(ap);
        details_ += std::string(details_.empty() ? "" : "; ") + buf;
      }
      ++bad_;
    }
    return ok;
  }

  void done() {
    if (finished_) return;
    finished_ = true;
    if (bad_ == 0) {
      std::printf("PASS %s\n", name_.c_str());
    } else {
      std::printf("FAIL %s (%d mismatches) %s\n", name_.c_str(), bad_, details_.c_str());
      ++failures();
    }
    std::fflush(stdout);
  }

  int bad() const { return bad_; }

 private:
  std::string name_;
  std::string details_;
  int bad_ = 0;
  bool finished_ = false;
};

inline void skip(const char* name, const char* why) {
  std::printf("SKIP %s %s\n", name, why);
  std::fflush(stdout);
}

inline int finish() {
  std::printf("%s: %d failed check(s)\n", failures() ? "FAILED" : "ALL PASSED", failures());
  return failures() ? 1 : 0;
}

// Compute capability as 10 * major + minor.
inline int device_cc() {
  int dev = 0;
  CUDA_CHECK(cudaGetDevice(&dev));
  cudaDeviceProp prop;
  CUDA_CHECK(cudaGetDeviceProperties(&prop, dev));
  return prop.major * 10 + prop.minor;
}

// Deterministic xorshift generator.
struct Rng {
  uint64_t s;
  explicit Rng(uint64_t seed) : s(seed * 0x9E3779B97F4A7C15ull + 1) {}
  uint32_t next() {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return static_cast<uint32_t>(s >> 11);
  }
  // Uniform integer in [lo, hi].
  int range(int lo, int hi) { return lo + static_cast<int>(next() % static_cast<uint32_t>(hi - lo + 1)); }
  float uniform(float lo, float hi) { return lo + (hi - lo) * (next() & 0xFFFFFF) / float(0x1000000); }
};

// RAII device buffer.
template <class T>
struct DeviceBuffer {
  T* ptr = nullptr;
  size_t n = 0;
  explicit DeviceBuffer(size_t count) : n(count) { CUDA_CHECK(cudaMalloc(&ptr, count * sizeof(T) + 16)); }
  DeviceBuffer(const std::vector<T>& host) : DeviceBuffer(host.size()) { upload(host); }
  ~DeviceBuffer() { cudaFree(ptr); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  void upload(const std::vector<T>& host) {
    CUDA_CHECK(cudaMemcpy(ptr, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
  }
  std::vector<T> download() const {
    std::vector<T> host(n);
    CUDA_CHECK(cudaMemcpy(host.data(), ptr, n * sizeof(T), cudaMemcpyDeviceToHost));
    return host;
  }
  void fill_bytes(int byte) { CUDA_CHECK(cudaMemset(ptr, byte, n * sizeof(T))); }
};

inline void sync_or_die(const char* what) {
  cudaError_t err = cudaDeviceSynchronize();
  if (err != cudaSuccess) {
    std::printf("FAIL %s kernel error: %s\n", what, cudaGetErrorString(err));
    std::exit(3);
  }
}

inline bool close(double got, double ref, double rtol, double atol) {
  if (std::isnan(ref)) return std::isnan(got);
  if (std::isinf(ref)) return got == ref;
  return std::fabs(got - ref) <= atol + rtol * std::fabs(ref);
}

}  // namespace tl_test
