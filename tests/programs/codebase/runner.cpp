// The runner: its own constants are guarded macros with a prefix (K10_*), as a codebase's
// tuning script would sed them.
#include <cstdio>
#include "tiles.hpp"
#ifndef K10_BM
#define K10_BM 64
#endif
#ifndef K10_BN
#define K10_BN 64
#endif
int main() {
  long w = tile_work<K10_BM, K10_BN>(1L << 20);
  std::printf("@@RESULT ms=%.3f work=%ld\n", 1.0 + w * 1e-4, w);
  return 0;
}
