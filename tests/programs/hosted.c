/* Facts a persistent host must get right, as @@RESULT metrics: pid (the same process runs
 * config after config), calls (statics start fresh for every config), args (argc and
 * argv[1]), env (HOSTED_VALUE from [run] env), in_workdir (the run's own fresh folder),
 * stdin (reads nothing). EXIT_CODE != 0 ends the host with exit(). */
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

static int calls = 0;

int main(int argc, char **argv) {
    calls++;
    FILE *mine = fopen("mine.txt", "wx");  /* fails if a folder were reused */
    int in_workdir = mine != NULL;
    if (mine) fclose(mine);
    char buf[16];
    ssize_t got = read(0, buf, sizeof buf);
    if (EXIT_CODE) {
        fprintf(stderr, "giving up with exit(%d)\n", EXIT_CODE);
        exit(EXIT_CODE);
    }
    const char *value = getenv("HOSTED_VALUE");
    printf("@@RESULT ms=%d pid=%d calls=%d argc=%d arg=%s env=%s in_workdir=%d stdin=%d checksum=1.0\n", X,
           (int)getpid(), calls, argc, argc > 1 ? argv[1] : "0", value ? value : "0", in_workdir, (int)got);
    return 0;
}
