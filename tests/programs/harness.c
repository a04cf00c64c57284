/* A harness built once ([build.harness]) for configs built one by one (piece.c): it loads
 * the config's shared library named by argv[1] (or, built with -DLINKED, has the config
 * linked in) and prints @@RESULT ms=<the config's value> harness=<HARNESS_TAG> pid=<pid>.
 * -DBROKEN: does not compile. */
#include <dlfcn.h>
#include <stdio.h>
#include <unistd.h>

#ifdef BROKEN
#error "this harness is broken on purpose"
#endif
#ifndef HARNESS_TAG
#define HARNESS_TAG 0
#endif

#ifdef LINKED
int piece_value(void);
#endif

int main(int argc, char **argv) {
#ifdef LINKED
    (void)argc;
    (void)argv;
    int value = piece_value();
#else
    if (argc < 2) {
        fprintf(stderr, "usage: harness PIECE.so\n");
        return 2;
    }
    void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        return 3;
    }
    int (*fn)(void) = (int (*)(void))dlsym(lib, "piece_value");
    if (!fn) {
        fprintf(stderr, "no piece_value in %s\n", argv[1]);
        return 3;
    }
    int value = fn();
    dlclose(lib);
#endif
    printf("@@RESULT ms=%d harness=%d pid=%d checksum=1.0\n", value, HARNESS_TAG, (int)getpid());
    return 0;
}
