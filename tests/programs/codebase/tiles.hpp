// A header-only kernel of a real codebase: its template parameters have the same names as
// the sweep's parameters (BM, BN), so -DBM=... would rewrite them.
#pragma once
template <const int BM, const int BN>
inline long tile_work(long n) { return n / BM + n / BN; }
