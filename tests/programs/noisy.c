/* A program whose timing is noisy, from a seeded distribution: each run of config X
 * reads and bumps its own counter in $NOISE_DIR, and reports ms = BASE(X) * (1 + e),
 * e drawn from a fixed sequence (about 0.5% standard deviation). X=3 and X=4 are equally
 * fast (a tie); X=5's first run is lucky (0.8 ms) and every later one slow (1.3 ms): a
 * single measurement crowns it, a confirmation does not. With CHEAT, X=6 reports a time no
 * hardware reaches. */
#include <stdio.h>
#include <stdlib.h>

#ifndef X
#define X 1
#endif

static double base(int x, int n) {
  switch (x) {
  case 1: return 2.0;  /* the default config */
  case 2: return 1.6;
  case 3: return 1.0;
  case 4: return 1.0;
  case 5: return n == 0 ? 0.8 : 1.3;
#ifdef CHEAT
  case 6: return 0.001;
#endif
  default: return 1.5 + 0.1 * x;
  }
}

static double noise(int x, int n) {  /* a fixed, seeded sequence: sum of 4 uniforms, centred */
  unsigned long s = 2654435761UL * (unsigned long)(x * 1000 + n + 1);
  double sum = 0;
  for (int i = 0; i < 4; ++i) {
    s = s * 6364136223846793005UL + 1442695040888963407UL;
    sum += (double)((s >> 33) & 0xFFFFFF) / 16777216.0;
  }
  return (sum - 2.0) * 0.0087;  /* sd of a sum of 4 uniforms is 0.577: about 0.5% */
}

int main(void) {
  const char *dir = getenv("NOISE_DIR");
  int n = 0;
  if (dir) {
    char path[4096];
    snprintf(path, sizeof path, "%s/count_%d", dir, X);
    FILE *f = fopen(path, "r");
    if (f) { if (fscanf(f, "%d", &n) != 1) n = 0; fclose(f); }
    f = fopen(path, "w");
    if (f) { fprintf(f, "%d\n", n + 1); fclose(f); }
  }
  double ms = base(X, n) * (1.0 + noise(X, n));
  printf("@@RESULT ms=%.6f checksum=1.0\n", ms);
  return 0;
}
