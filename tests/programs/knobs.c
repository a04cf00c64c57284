/* A program with a knob that changes it (TILE) and one that changes nothing (UNROLL_HINT:
 * guarded, so -D sets it, but never used: every value builds the same program). With
 * KSWEEP_TEST_LOG set, every run appends a line to that file: a test counts the runs. */
#include <stdio.h>
#include <stdlib.h>

#ifndef TILE
#define TILE 1
#endif
#ifndef UNROLL_HINT
#define UNROLL_HINT 4
#endif

int main(void) {
    const char *log = getenv("KSWEEP_TEST_LOG");
    if (log) {
        FILE *f = fopen(log, "a");
        if (f) {
            fprintf(f, "run\n");
            fclose(f);
        }
    }
    printf("@@RESULT ms=%d.5 checksum=1\n", TILE);
    return 0;
}
