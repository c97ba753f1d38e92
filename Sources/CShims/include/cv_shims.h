#ifndef CARDVAULT_CV_SHIMS_H
#define CARDVAULT_CV_SHIMS_H
/* Umbrella of the small C wrappers: one header per C library, prefixed cv_. */
#include "cv_version.h"
#include "cv_mhd.h"
#include "cv_crc32c.h"
#include "cv_process.h"
#endif
