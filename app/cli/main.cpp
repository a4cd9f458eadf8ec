#include <cstdio>

int main() {
  std::puts("paraproof: under construction");
  return 0;
}
