#ifndef CARDVAULT_CV_VERSION_H
#define CARDVAULT_CV_VERSION_H
/// The OpenSSL version string the binary runs against (for `cardvault version`).
const char *cv_openssl_version(void);
/// The libmicrohttpd version string the binary runs against.
const char *cv_microhttpd_version(void);
#endif
