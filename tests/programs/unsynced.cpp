// A C++ program that unties iostreams from C stdio (sync_with_stdio(false)): std::cout then
// buffers on its own and, without a flush, writes its result only when the process ends.
#include <iostream>

#ifndef X
#define X 1
#endif

int main() {
  std::ios::sync_with_stdio(false);
  std::cout << "@@RESULT ms=" << X << " checksum=1.0\n";
  std::clog << "log line of " << X << "\n";
  return 0;
}
