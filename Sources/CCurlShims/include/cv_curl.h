#ifndef CARDVAULT_CV_CURL_H
#define CARDVAULT_CV_CURL_H

#include <curl/curl.h>
#include <sys/socket.h>

/// Initialises libcurl once for the process, with allocation functions that wipe every block libcurl frees
/// (request lines, header copies, receive and send buffers). Returns CURLE_OK, or the failure of
/// curl_global_init_mem. Safe to call from any thread, any number of times.
CURLcode cv_curl_global_init_wiping(void);

/// curl_easy_setopt, which is variadic, for each argument type.
CURLcode cv_curl_setopt_long(CURL *handle, CURLoption option, long value);
CURLcode cv_curl_setopt_pointer(CURL *handle, CURLoption option, const void *value);
CURLcode cv_curl_setopt_offset(CURL *handle, CURLoption option, curl_off_t value);
CURLcode cv_curl_setopt_data_callback(
    CURL *handle, CURLoption option, size_t (*callback)(char *, size_t, size_t, void *));
CURLcode cv_curl_setopt_opensocket_callback(
    CURL *handle, curl_socket_t (*callback)(void *, curlsocktype, struct curl_sockaddr *));

/// curl_easy_getinfo for long and pointer results.
CURLcode cv_curl_getinfo_long(CURL *handle, CURLINFO info, long *value);
CURLcode cv_curl_getinfo_pointer(CURL *handle, CURLINFO info, void **value);

/// curl_multi_setopt for long arguments.
CURLMcode cv_curl_multi_setopt_long(CURLM *multi, CURLMoption option, long value);

/// The result of a finished transfer message (the CURLMsg union's `result`).
CURLcode cv_curl_message_result(const CURLMsg *message);

/// Opens the socket libcurl asked for in an open-socket callback.
curl_socket_t cv_curl_open_socket(const struct curl_sockaddr *address);

/// The value libcurl takes from an open-socket callback to refuse the connection.
curl_socket_t cv_curl_socket_bad(void);

/// The default CA bundle file and directory this libcurl was built with (may be NULL).
const char *cv_curl_default_ca_file(void);
const char *cv_curl_default_ca_path(void);

#endif
