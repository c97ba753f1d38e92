// Declarations only (see include/cv_fuzz_driver.h); SwiftPM wants one source file per C target.
#include "cv_fuzz_driver.h"
