#ifndef CARDVAULT_CV_CRC32C_H
#define CARDVAULT_CV_CRC32C_H
/* CRC-32C with the CPU's own instruction (SSE 4.2 on x86-64), which Swift cannot name. */
#include <stddef.h>
#include <stdint.h>

/// Whether this CPU has the CRC-32C instruction; when not, call nothing else here.
int cv_crc32c_available(void);

/// Continues the raw (not inverted) CRC-32C register `crc` over `count` bytes.
uint32_t cv_crc32c_update(uint32_t crc, const void *bytes, size_t count);
#endif
