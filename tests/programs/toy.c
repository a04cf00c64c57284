/* A deterministic "kernel" for search tests: its time is a smooth bowl over A and B with
   a little ripple, so model-based searches have something to learn and results are exact. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "toy.h"

#ifndef A
#define A 0
#endif
#ifndef B
#define B 0
#endif

int main(void) {
    const char *log = getenv("KSWEEP_TEST_LOG");
    if (log) {
        FILE *f = fopen(log, "a");
        if (f) { fprintf(f, "A=%d B=%d\n", A, B); fclose(f); }
    }
    const char *nap = getenv("TOY_SLEEP_MS");
    if (nap) usleep(1000 * atoi(nap));
    double ms = TOY_BASE + (A - 7) * (A - 7) * 0.37 + (B - 4) * (B - 4) * 0.21 + ((A * 7 + B * 3) % 5) * 0.05;
    printf("@@RESULT ms=%.4f checksum=%d\n", ms, TOY_CHECKSUM);
    return 0;
}
