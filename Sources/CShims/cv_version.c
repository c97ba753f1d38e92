#include <openssl/crypto.h>
#include <microhttpd.h>
#include "cv_version.h"

const char *cv_openssl_version(void) { return OpenSSL_version(OPENSSL_VERSION); }
const char *cv_microhttpd_version(void) { return MHD_get_version(); }
