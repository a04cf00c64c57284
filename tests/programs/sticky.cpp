// A C++ program whose library dlclose cannot unload: g++ makes the inline function's static a
// unique symbol (STB_GNU_UNIQUE), which pins the library. calls counts the runs in one load.
#include <cstdio>

#ifndef X
#define X 1
#endif

inline int &counter() {
  static int n = 0;
  return n;
}

int main() {
  const int calls = ++counter();
  std::printf("@@RESULT ms=%d calls=%d checksum=1.0\n", X, calls);
  return 0;
}
