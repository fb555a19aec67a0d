// libsystemc.so always references sc_main (its own main() calls it). tdmsim
// has its own main() and drives simulations by calling sc_start() directly,
// so this definition only satisfies the linker; reaching it is a bug.
#include <cstdio>

// (Visible: the libraries are compiled with hidden symbols, CMakeLists.txt.)
extern "C" __attribute__((visibility("default"))) int sc_main(int, char*[]) {
  std::fputs("tdmsim: internal error: sc_main is not an entry point\n", stderr);
  return 1;
}
