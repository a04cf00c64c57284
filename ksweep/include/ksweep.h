// ksweep.h — the measurement a ksweep harness needs, in a few lines (header only).
//
//   #include <ksweep.h>        // nvcc -I$(ksweep include) ...   (or -I{ksweep_include} in a spec)
//
//   ksweep::Timer timer(stream);                       // L2 flush buffer, events
//   ksweep::Stats s = timer.time([&] { kernel<<<g, b, 0, stream>>>(...); });
//   ksweep::Result()
//       .add("ms", s.median).add("p20_ms", s.p20).add("p80_ms", s.p80)
//       .add("gflops", 2.0 * M * N * K / s.median / 1e6).add("checksum", checksum)
//       .print();                                      // @@RESULT ms=... p20_ms=... ...
//
// What it does, and why:
// - warm-up first (module load, first-touch and clock ramp stay out of the numbers);
// - repetitions sized by a time budget (about target_ms of GPU time, within [min_reps, max_reps]),
//   so a 10 us kernel and a 100 ms kernel are both measured well;
// - each repetition timed by its own pair of CUDA events, the L2 cache flushed before it (outside
//   the events) by writing a buffer twice its size: a kernel is not timed on a warm cache it will
//   not have in a real run;
// - the median and the 20th/80th percentiles, never the mean (one preempted repetition would move it);
// - poison() fills an output with 0xFF bytes (NaN for floats) before a checked launch, so an element
//   the kernel never writes cannot pass a check;
// - Result prints one @@RESULT line with every value finite or the word nan (ksweep refuses a
//   non-finite objective: the run is NO_RESULT, never a silent winner);
// - KSWEEP_CHECK(call) prints "CUDA error: <name> (<string>) at file:line" and exits 1: ksweep
//   classifies it as CUDA_ERROR;
// - under compute-sanitizer (ksweep runs the leaders under it before naming BEST, with
//   KSWEEP_SANITIZER set to the tool's name) Timer::time runs fn() once, untimed by a loop: a
//   sanitizer slows a kernel 10-100x, and one checked launch is what it needs. sanitizer() says
//   which tool, for a program that has a loop of its own to skip.
// The statistics and Result are plain C++ (usable from a host-only program built by g++).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace ksweep {

struct Stats {
  double median = NAN, p20 = NAN, p80 = NAN, min = NAN;
  int reps = 0;
};

// The compute-sanitizer tool this process runs under ("memcheck", "racecheck", ...), or nullptr:
// KSWEEP_SANITIZER, which ksweep sets; else "compute-sanitizer" when compute-sanitizer started
// the process by hand (it sets NV_SANITIZER_INJECTION_PORT_BASE for the processes it checks, as
// compute-sanitizer 2025.3 was seen to do; older ones name their library in CUDA_INJECTION64_PATH).
inline const char *sanitizer() {
  const char *tool = std::getenv("KSWEEP_SANITIZER");
  if (tool && *tool) return tool;
  if (std::getenv("NV_SANITIZER_INJECTION_PORT_BASE")) return "compute-sanitizer";
  const char *injection = std::getenv("CUDA_INJECTION64_PATH");
  if (injection && std::strstr(injection, "sanitizer")) return "compute-sanitizer";
  return nullptr;
}

// Median and 20th/80th percentiles (nearest rank) of samples, in their own unit.
inline Stats stats(std::vector<float> v) {
  Stats s;
  s.reps = static_cast<int>(v.size());
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  auto rank = [&](double q) { return v[std::min(n - 1, static_cast<size_t>(q * (n - 1) + 0.5))]; };
  s.median = n % 2 ? v[n / 2] : 0.5 * (static_cast<double>(v[n / 2 - 1]) + v[n / 2]);
  s.p20 = rank(0.2);
  s.p80 = rank(0.8);
  s.min = v.front();
  return s;
}

// Two functions timed against each other in alternating blocks.
struct Paired {
  Stats a, b;          // over the blocks' medians
  double ratio = NAN;  // the sum of b's block medians over the sum of a's (> 1: a is faster)
  int pairs = 0;
  std::vector<float> blocks_a, blocks_b;  // each block's median, in the order timed
};

// Time a and b in alternating blocks, a b | b a | a b | b a ..., each time_x() returning one
// block's median: a drift of clocks or power capping over the measurement weighs on both alike
// (a linear drift cancels exactly over an even number of pairs), where timing all of a, then
// all of b, gives the drift to one of them. Plain C++: Timer::paired gives it CUDA blocks.
template <class TA, class TB>
Paired alternate(int pairs, TA &&time_a, TB &&time_b) {
  std::vector<float> va, vb;
  for (int i = 0; i < pairs; ++i) {
    if (i % 2 == 0) {
      va.push_back(static_cast<float>(time_a()));
      vb.push_back(static_cast<float>(time_b()));
    } else {
      vb.push_back(static_cast<float>(time_b()));
      va.push_back(static_cast<float>(time_a()));
    }
  }
  Paired p;
  p.pairs = pairs;
  p.a = stats(va);
  p.b = stats(vb);
  p.blocks_a = va;
  p.blocks_b = vb;
  double sa = 0, sb = 0;
  for (int i = 0; i < pairs; ++i) sa += va[i], sb += vb[i];
  if (sa > 0) p.ratio = sb / sa;
  return p;
}

// One @@RESULT line: name=value pairs, printed in the order added.
class Result {
 public:
  Result &add(const std::string &name, double value) {
    kv_.emplace_back(name, value);
    return *this;
  }
  std::string line() const {
    std::string out = "@@RESULT";
    char buf[64];
    for (const auto &p : kv_) {
      if (std::isfinite(p.second))
        std::snprintf(buf, sizeof buf, "%.9g", p.second);
      else
        std::snprintf(buf, sizeof buf, "nan");
      out += " " + p.first + "=" + buf;
    }
    return out;
  }
  void print() const {
    std::printf("%s\n", line().c_str());
    std::fflush(stdout);
  }

 private:
  std::vector<std::pair<std::string, double>> kv_;
};

}  // namespace ksweep

#if defined(__CUDACC__) || defined(KSWEEP_WITH_CUDA)
#include <cuda_runtime.h>

#define KSWEEP_CHECK(call)                                                                      \
  do {                                                                                          \
    cudaError_t ksweep_err_ = (call);                                                           \
    if (ksweep_err_ != cudaSuccess) {                                                           \
      std::fprintf(stderr, "CUDA error: %s (%s) at %s:%d\n", cudaGetErrorName(ksweep_err_),    \
                   cudaGetErrorString(ksweep_err_), __FILE__, __LINE__);                        \
      std::exit(1);                                                                             \
    }                                                                                           \
  } while (0)

namespace ksweep {

struct TimeOptions {
  float target_ms = 100.0f;  // GPU time the repetitions should fill
  int warmup = 2;            // calls before any is timed
  int min_reps = 10;
  int max_reps = 2000;
  bool flush_l2 = true;  // write a buffer of twice the L2 size before each repetition
  // GPU time a spin kernel holds the stream before the repetitions, so that all of them are
  // queued while it spins: a short kernel is then timed without the host's launch gaps
  float queue_ahead_ms = 0.0f;
};

static __global__ void ksweep_spin_kernel(long long ns) {
  unsigned long long start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  for (;;) {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    if (static_cast<long long>(now - start) >= ns) break;
  }
}

// Fill n elements of a device array with 0xFF bytes (NaN for float, double and half).
template <class T>
inline void poison(T *device_ptr, size_t n, cudaStream_t stream = 0) {
  KSWEEP_CHECK(cudaMemsetAsync(device_ptr, 0xFF, n * sizeof(T), stream));
}

class Timer {
 public:
  explicit Timer(cudaStream_t stream = 0, TimeOptions options = TimeOptions()) : s_(stream), o_(options) {
    int device = 0, l2 = 0;
    KSWEEP_CHECK(cudaGetDevice(&device));
    KSWEEP_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
    flush_bytes_ = o_.flush_l2 && l2 > 0 ? 2 * static_cast<size_t>(l2) : 0;
    if (flush_bytes_) KSWEEP_CHECK(cudaMalloc(&flush_, flush_bytes_));
  }
  ~Timer() {
    if (flush_) cudaFree(flush_);
  }
  Timer(const Timer &) = delete;
  Timer &operator=(const Timer &) = delete;

  // Time fa() against fb() in 2 * pairs alternating blocks (alternate() above), each block a
  // time() of the options given: e.g. a fused kernel against a library baseline, both under
  // the same clocks. Paired::ratio = fb's time over fa's.
  template <class FA, class FB>
  Paired paired(FA &&fa, FB &&fb, int pairs = 4) {
    return alternate(pairs, [&] { return time(fa).median; }, [&] { return time(fb).median; });
  }

  // Time fn() (which enqueues work on the timer's stream): warm-up, then repetitions by time
  // budget, each between its own events, the L2 flushed before each; statistics in ms.
  template <class F>
  Stats time(F &&fn) {
    if (sanitizer()) return once(fn);  // one checked launch: no warm-up, no repetitions
    cudaEvent_t a, b;
    KSWEEP_CHECK(cudaEventCreate(&a));
    KSWEEP_CHECK(cudaEventCreate(&b));
    for (int i = 0; i < o_.warmup; ++i) fn();
    flush();
    KSWEEP_CHECK(cudaEventRecord(a, s_));
    fn();  // an estimate of one call
    KSWEEP_CHECK(cudaEventRecord(b, s_));
    KSWEEP_CHECK(cudaEventSynchronize(b));
    float one = 0.f;
    KSWEEP_CHECK(cudaEventElapsedTime(&one, a, b));
    KSWEEP_CHECK(cudaEventDestroy(a));
    KSWEEP_CHECK(cudaEventDestroy(b));
    const int reps = std::min(o_.max_reps, std::max(o_.min_reps, static_cast<int>(o_.target_ms / std::max(one, 1e-3f))));
    std::vector<cudaEvent_t> ev(2 * reps);
    for (auto &e : ev) KSWEEP_CHECK(cudaEventCreate(&e));
    if (o_.queue_ahead_ms > 0) ksweep_spin_kernel<<<1, 1, 0, s_>>>(static_cast<long long>(o_.queue_ahead_ms * 1e6));
    for (int r = 0; r < reps; ++r) {
      flush();
      KSWEEP_CHECK(cudaEventRecord(ev[2 * r], s_));
      fn();
      KSWEEP_CHECK(cudaEventRecord(ev[2 * r + 1], s_));
    }
    KSWEEP_CHECK(cudaStreamSynchronize(s_));
    KSWEEP_CHECK(cudaGetLastError());
    std::vector<float> ms(reps);
    for (int r = 0; r < reps; ++r) KSWEEP_CHECK(cudaEventElapsedTime(&ms[r], ev[2 * r], ev[2 * r + 1]));
    for (auto &e : ev) KSWEEP_CHECK(cudaEventDestroy(e));
    return stats(ms);
  }

 private:
  // fn() once between two events, the whole measurement under a sanitizer
  template <class F>
  Stats once(F &&fn) {
    cudaEvent_t a, b;
    KSWEEP_CHECK(cudaEventCreate(&a));
    KSWEEP_CHECK(cudaEventCreate(&b));
    KSWEEP_CHECK(cudaEventRecord(a, s_));
    fn();
    KSWEEP_CHECK(cudaEventRecord(b, s_));
    KSWEEP_CHECK(cudaEventSynchronize(b));
    KSWEEP_CHECK(cudaGetLastError());
    float ms = 0.f;
    KSWEEP_CHECK(cudaEventElapsedTime(&ms, a, b));
    KSWEEP_CHECK(cudaEventDestroy(a));
    KSWEEP_CHECK(cudaEventDestroy(b));
    return stats({ms});
  }
  void flush() {
    if (flush_) KSWEEP_CHECK(cudaMemsetAsync(flush_, r_++ & 0xFF, flush_bytes_, s_));
  }
  cudaStream_t s_;
  TimeOptions o_;
  void *flush_ = nullptr;
  size_t flush_bytes_ = 0;
  int r_ = 0;
};

}  // namespace ksweep
#endif
