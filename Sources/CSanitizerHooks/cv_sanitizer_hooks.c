#include "cv_sanitizer_hooks.h"

/* Defined by the ThreadSanitizer runtime (compiler-rt tsan_interface.h) when it is linked in. */
extern void __tsan_acquire(void *address) __attribute__((weak));
extern void __tsan_release(void *address) __attribute__((weak));

void cv_sanitizer_acquire(void *address) {
    if (__tsan_acquire) __tsan_acquire(address);
}

void cv_sanitizer_release(void *address) {
    if (__tsan_release) __tsan_release(address);
}
