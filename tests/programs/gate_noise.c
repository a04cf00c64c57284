/* A program whose reported time is noisy, from a seeded generator rather than the machine:
 * ms = COST * (1 + 0.1 * (X - 1)) * f, with f = 1.6 at a chance of 20% (a run the machine
 * slowed down) and else uniform within 1 +- 3%. Each run draws from the hash of $NOISE_SEED
 * and its own number, the count kept in the file $NOISE_COUNTER (bumped by every run), so the
 * n-th run draws the same on a busy machine and an idle one (which config that run is follows
 * the order the runs took). COST is the "code": the planted regression doubles it. */
#include <stdio.h>
#include <stdlib.h>

#ifndef COST
#define COST 10.0
#endif
#ifndef X
#define X 1
#endif

static unsigned long long mix(unsigned long long z) { /* splitmix64's finaliser */
  z += 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

static double uniform(unsigned long long *state) { /* in [0, 1) */
  *state = mix(*state);
  return (double)(*state >> 11) / 9007199254740992.0;
}

int main(void) {
  const char *path = getenv("NOISE_COUNTER"), *seed = getenv("NOISE_SEED");
  long n = 0;
  if (path) {
    FILE *f = fopen(path, "r");
    if (f) { if (fscanf(f, "%ld", &n) != 1) n = 0; fclose(f); }
    f = fopen(path, "w");
    if (f) { fprintf(f, "%ld\n", n + 1); fclose(f); }
  }
  unsigned long long state = mix((seed ? strtoull(seed, NULL, 10) : 0ULL) * 1000003ULL + (unsigned long long)n);
  double slow = uniform(&state), within = uniform(&state);
  double f = slow < 0.2 ? 1.6 : 1.0 + 0.03 * (2.0 * within - 1.0);
  printf("@@RESULT ms=%.6f\n", COST * (1.0 + 0.1 * (X - 1)) * f);
  return 0;
}
