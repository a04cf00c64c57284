/* included by toy.c and not listed in any spec's sources: the build cache must still see it */
#define TOY_BASE 1.0
#define TOY_CHECKSUM 1
