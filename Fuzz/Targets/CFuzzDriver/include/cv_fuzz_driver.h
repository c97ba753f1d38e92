#ifndef CV_FUZZ_DRIVER_H
#define CV_FUZZ_DRIVER_H

#include <stddef.h>
#include <stdint.h>

/// libFuzzer's driver (compiler-rt FuzzerDriver.cpp, linked by -sanitize=fuzzer): parses the libFuzzer
/// flags in argv and runs `callback` on every input. A fuzz target's own `main` calls it, because SwiftPM
/// gives every executable a `main` of its own.
int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));

#endif
