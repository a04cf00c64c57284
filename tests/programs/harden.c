/* A program for the hardening's tests, built by gcc. X is its reported time. FAULT names the
 * sanitizer tool that finds a fault in it (0 none, 1 memcheck, 2 racecheck, 3 initcheck,
 * 4 synccheck): under that tool (KSWEEP_SANITIZER, which ksweep sets) it says "planted fault",
 * which the fake compute-sanitizer of tests/test_harden.py reports as that tool's finding.
 * NOISE makes its checksum move within the check's tolerance from one process to the next.
 * SLOW sleeps 30 s under a sanitizer (a tool's run that times out). Under a sanitizer it says
 * so (a timing loop would run once there, as ksweep.h's does). With SCALE (a shape's input size)
 * the checksum is SCALE times larger; without, a shape does not change it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef X
#define X 1
#endif
#ifndef FAULT
#define FAULT 0
#endif
#ifndef NOISE
#define NOISE 0
#endif
#ifndef SLOW
#define SLOW 0
#endif

static const char *TOOLS[] = {"", "memcheck", "racecheck", "initcheck", "synccheck"};

int main(void) {
    const char *tool = getenv("KSWEEP_SANITIZER");
    if (tool) {
        printf("under %s: one timed repetition\n", tool);
        if (FAULT && strcmp(tool, TOOLS[FAULT]) == 0) fprintf(stderr, "planted fault\n");
        if (SLOW) sleep(30);
    }
    double checksum = 1.0;
#if NOISE
    checksum += 1e-9 * (double)(getpid() % 997 + 1);
#endif
#ifdef SCALE
    checksum *= SCALE;
#endif
    printf("@@RESULT ms=%d checksum=%.12f\n", X, checksum);
    return 0;
}
