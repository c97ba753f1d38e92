#include <errno.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include "cv_process.h"

int cv_disable_core_dumps(void) {
    struct rlimit none = {0, 0};
    if (setrlimit(RLIMIT_CORE, &none) != 0) return errno;
    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) return errno;
    return 0;
}

int cv_is_dumpable(void) {
    return prctl(PR_GET_DUMPABLE, 0, 0, 0, 0);
}
