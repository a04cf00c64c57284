/* Facts a persistent host must get right, as @@RESULT metrics: pid (the same process runs
 * config after config), calls (statics start fresh for every config), args (argc and
 * argv[1]), env (HOSTED_VALUE from [run] env), in_workdir (the run's own fresh folder),
 * stdin (reads nothing). EXIT_CODE != 0 ends the host with exit(). LEFTOVER=1 first forks a
 * child that never ends (its pid goes to $CHILD_PID_FILE); ATEXIT=1 prints the result from
 * an atexit handler instead of main. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef X
#define X 1
#endif
#ifndef EXIT_CODE
#define EXIT_CODE 0
#endif
#ifndef LEFTOVER
#define LEFTOVER 0
#endif
#ifndef ATEXIT
#define ATEXIT 0
#endif

static void late_result(void) { printf("@@RESULT ms=%d late=1 checksum=1.0\n", X); }

static int calls = 0;

int main(int argc, char **argv) {
    calls++;
    FILE *mine = fopen("mine.txt", "wx");  /* fails if a folder were reused */
    int in_workdir = mine != NULL;
    if (mine) fclose(mine);
    char buf[16];
    ssize_t got = read(0, buf, sizeof buf);
    if (LEFTOVER) {
        pid_t child = fork();
        if (child == 0)
            for (;;) pause();
        FILE *f = fopen(getenv("CHILD_PID_FILE"), "w");
        if (f) {
            fprintf(f, "%d", (int)child);
            fclose(f);
        }
    }
    if (ATEXIT) {
        atexit(late_result);
        return 0;
    }
    if (EXIT_CODE) {
        fprintf(stderr, "giving up with exit(%d)\n", EXIT_CODE);
        exit(EXIT_CODE);
    }
    const char *value = getenv("HOSTED_VALUE");
    printf("@@RESULT ms=%d pid=%d calls=%d argc=%d arg=%s env=%s in_workdir=%d stdin=%d checksum=1.0\n", X,
           (int)getpid(), calls, argc, argc > 1 ? argv[1] : "0", value ? value : "0", in_workdir, (int)got);
    return 0;
}
