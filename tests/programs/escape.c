/* Processes that try to outlive the command that started them (tests/test_process_tree.py).
 *   escape forever            prints "forever PID", then never ends
 *   escape daemon S [quiet]   double fork + setsid: the daemon lives S seconds, keeping the
 *                             output open (quiet: it closes it first); the command prints
 *                             "daemon PID" and "parent done" and exits 0 at once
 *   escape clearenv S [BYTES] as daemon, but the daemon also drops its environment (it
 *                             re-executes itself with none); the command prints BYTES
 *                             bytes of filler before "parent done"
 *   escape sleep S            lives S seconds
 * $ESCAPE_PID_FILE, if set, also gets the daemon's pid. Builds as a shared library for a
 * persistent host too (-Dmain=ksweep_main). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

static void live(int seconds) {
    for (int i = 0; i < seconds; i++) sleep(1);
}

static int daemonise(int seconds, int quiet, int clear_env) {
    pid_t first = fork();
    if (first < 0) return 1;
    if (first == 0) {
        setsid();
        pid_t daemon = fork();
        if (daemon == 0) {
            if (quiet) {
                int null = open("/dev/null", O_WRONLY);
                dup2(null, 1);
                dup2(null, 2);
            }
            if (clear_env) {
                char secs[16];
                snprintf(secs, sizeof secs, "%d", seconds);
                char *args[] = {"escape", "sleep", secs, NULL};
                char *none[] = {NULL};
                execve("/proc/self/exe", args, none);
                _exit(127);
            }
            live(seconds);
            _exit(0);
        }
        const char *pid_file = getenv("ESCAPE_PID_FILE");
        if (pid_file) {
            FILE *f = fopen(pid_file, "w");
            if (f) {
                fprintf(f, "%d\n", (int)daemon);
                fclose(f);
            }
        }
        printf("daemon %d\n", (int)daemon);
        fflush(stdout);
        _exit(0);
    }
    waitpid(first, NULL, 0);
    return 0;
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    int seconds = argc > 2 ? atoi(argv[2]) : 0;
    if (strcmp(mode, "forever") == 0) {
        printf("forever %d\n", (int)getpid());
        fflush(stdout);
        for (;;) pause();
    }
    if (strcmp(mode, "sleep") == 0) {
        live(seconds);
        return 0;
    }
    if (strcmp(mode, "daemon") == 0 || strcmp(mode, "clearenv") == 0) {
        int clear_env = strcmp(mode, "clearenv") == 0;
        int quiet = !clear_env && argc > 3 && strcmp(argv[3], "quiet") == 0;
        if (daemonise(seconds, quiet, clear_env)) return 1;
        if (clear_env && argc > 3)
            for (long i = 0, n = atol(argv[3]); i < n; i++) putchar(i % 64 == 63 ? '\n' : 'x');
        printf("parent done\n");
        fflush(stdout);
        return 0;
    }
    fprintf(stderr, "usage: escape forever | daemon S [quiet] | clearenv S [BYTES] | sleep S\n");
    return 2;
}
