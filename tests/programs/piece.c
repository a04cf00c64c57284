/* One config's part of a harness sweep (harness.c): its value is 10 * X. */
#ifndef X
#define X 1
#endif

int piece_value(void) { return 10 * X; }
