// Google Benchmark's main for the simulator benchmarks: SystemC programs
// start at sc_main.
#include <benchmark/benchmark.h>
#include <systemc>

// (Visible: libsystemc.so calls it; the build hides symbols, CMakeLists.txt.)
__attribute__((visibility("default"))) int sc_main(int argc, char* argv[]) {
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
