#ifndef CV_SECURE_HEAP_H
#define CV_SECURE_HEAP_H

#include <stddef.h>

/// An allocator for a C library's secrets (OpenSSL's key schedules, HMAC states, DRBG): every block comes from
/// memory mapped for it, excluded from core dumps (MADV_DONTDUMP), locked in RAM where RLIMIT_MEMLOCK allows,
/// and is wiped when freed. Its three functions have the shapes CRYPTO_set_mem_functions wants.
void *cv_secure_heap_malloc(size_t size, const char *file, int line);
void *cv_secure_heap_realloc(void *block, size_t size, const char *file, int line);
void cv_secure_heap_free(void *block, const char *file, int line);

/// Bytes mapped so far, and of them the bytes mlock refused to pin.
size_t cv_secure_heap_mapped_bytes(void);
size_t cv_secure_heap_unlocked_bytes(void);

#endif
