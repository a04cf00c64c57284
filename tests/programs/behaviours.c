/* A program whose behaviour is chosen at compile time, to exercise every status:
 * MODE 0 ok, 1 hang (with a child), 2 segfault, 3 abort, 4 exit 3, 5 CUDA error text,
 * 6 no result, 7 wrong checksum, 8 prints 200 MB then a result, 9 compile error,
 * 10 slow ok (sleeps SLEEP_MS), 11 prints without end (a hang that floods its output).
 * X is the reported time. With KSWEEP_TEST_LOG set, every
 * execution that gets to its end appends a line to that file. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef MODE
#define MODE 0
#endif
#ifndef X
#define X 1
#endif
#ifndef SLEEP_MS
#define SLEEP_MS 0
#endif
#if MODE == 9
#error "intentional compile error for the test"
#endif

static void log_run(void) {
    const char *path = getenv("KSWEEP_TEST_LOG");
    if (!path) return;
    FILE *f = fopen(path, "a");
    if (!f) return;
    fprintf(f, "MODE=%d X=%d\n", MODE, X);
    fclose(f);
}

int main(void) {
    if (SLEEP_MS) usleep(SLEEP_MS * 1000);
    switch (MODE) {
    case 1:
        if (fork() == 0) for (;;) pause();  /* a child that would outlive a naive kill */
        for (;;) pause();
    case 2: { volatile int *p = NULL; *p = 1; break; }
    case 3: abort();
    case 4: fprintf(stderr, "setup failed: bad input\n"); return 3;
    case 5: fprintf(stderr, "CUDA error at kernel.cu:42: an illegal memory access was encountered\n"); return 1;
    case 6: printf("done, but nothing machine-readable\n"); return 0;
    case 7: log_run(); printf("@@RESULT ms=%d checksum=2.5\n", X); return 0;
    case 8: {
        static char line[1024];
        memset(line, 'x', sizeof line - 1);
        line[sizeof line - 1] = '\n';
        for (int i = 0; i < 200 * 1024; ++i) fwrite(line, 1, sizeof line, stdout);
        log_run();
        printf("@@RESULT ms=%d checksum=1.0\n", X);
        return 0;
    }
    case 11: {
        static char line[1024];
        memset(line, 'y', sizeof line - 1);
        line[sizeof line - 1] = '\n';
        for (;;) fwrite(line, 1, sizeof line, stdout);
    }
    default:
        log_run();
        printf("human readable: %d ms\n@@RESULT ms=%d gflops=%g checksum=1.0\n", X, X, 100.0 / X);
        return 0;
    }
    return 0;
}
