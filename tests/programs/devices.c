/* Reports the GPU it was pinned to, and whether a run on another GPU was alive at the
 * same time: @@RESULT ms=X dev=<CUDA_VISIBLE_DEVICES> overlap=<0|1> checksum=1.0
 *
 * With RENDEZVOUS_DIR set, a run creates DIR/started-<dev> and waits (up to WAIT_MS)
 * until a file of another device exists there: two runs overlapped in time exactly when
 * it finds one. The files stay, so only the first run on each device ever waits. With
 * KSWEEP_TEST_LOG set, each run appends "X=<X> dev=<dev>" to that file at its end.
 * start=<s> is CLOCK_MONOTONIC at the start of main (the clock of Python's time.monotonic). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifndef X
#define X 1
#endif
#ifndef WAIT_MS
#define WAIT_MS 30000
#endif
#ifndef SLEEP_MS
#define SLEEP_MS 0
#endif

static int other_device_started(const char *dir, const char *mine) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    struct dirent *e;
    int found = 0;
    while ((e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, "started-", 8) == 0 && strcmp(e->d_name + 8, mine) != 0) found = 1;
    }
    closedir(d);
    return found;
}

int main(void) {
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    const char *dev = getenv("CUDA_VISIBLE_DEVICES");
    if (!dev || !*dev) dev = "-1";
    int overlap = 0;
    const char *dir = getenv("RENDEZVOUS_DIR");
    if (dir) {
        char path[4096];
        snprintf(path, sizeof path, "%s/started-%s", dir, dev);
        FILE *f = fopen(path, "w");
        if (f) fclose(f);
        for (int waited = 0; waited <= WAIT_MS && !overlap; waited += 10) {
            overlap = other_device_started(dir, dev);
            if (!overlap) usleep(10 * 1000);
        }
    }
    if (SLEEP_MS) usleep(SLEEP_MS * 1000);
    const char *log = getenv("KSWEEP_TEST_LOG");
    if (log) {
        FILE *f = fopen(log, "a");
        if (f) {
            fprintf(f, "X=%d dev=%s\n", X, dev);
            fclose(f);
        }
    }
    printf("@@RESULT ms=%d dev=%s overlap=%d start=%.6f checksum=1.0\n", X, dev, overlap,
           (double)t0.tv_sec + 1e-9 * (double)t0.tv_nsec);
    return 0;
}
