#include "cv_crc32c.h"

#include <string.h>

#if defined(__x86_64__)
int cv_crc32c_available(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("sse4.2");
}

__attribute__((target("sse4.2")))
uint32_t cv_crc32c_update(uint32_t crc, const void *bytes, size_t count)
{
    const unsigned char *p = bytes;
    uint64_t wide = crc;
    while (count >= 8) {
        uint64_t word;
        memcpy(&word, p, 8);
        wide = __builtin_ia32_crc32di(wide, word);
        p += 8;
        count -= 8;
    }
    crc = (uint32_t)wide;
    while (count > 0) {
        crc = __builtin_ia32_crc32qi(crc, *p);
        p++;
        count--;
    }
    return crc;
}
#else
int cv_crc32c_available(void) { return 0; }

uint32_t cv_crc32c_update(uint32_t crc, const void *bytes, size_t count)
{
    (void)bytes;
    (void)count;
    return crc;
}
#endif
