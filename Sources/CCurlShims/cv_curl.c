#define _GNU_SOURCE
#include <curl/curl.h>
#include "cv_curl.h"

#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

// Every block libcurl frees is wiped first: request lines and header copies may hold card data.
static void cv_wipe_free(void *pointer) {
    if (pointer == NULL) return;
    explicit_bzero(pointer, malloc_usable_size(pointer));
    free(pointer);
}

static void *cv_wipe_realloc(void *pointer, size_t size) {
    if (pointer == NULL) return malloc(size);
    if (size == 0) {
        cv_wipe_free(pointer);
        return NULL;
    }
    size_t old = malloc_usable_size(pointer);
    void *moved = malloc(size);
    if (moved == NULL) return NULL;
    memcpy(moved, pointer, old < size ? old : size);
    cv_wipe_free(pointer);
    return moved;
}

static char *cv_wipe_strdup(const char *text) {
    size_t length = strlen(text) + 1;
    char *copy = malloc(length);
    if (copy != NULL) memcpy(copy, text, length);
    return copy;
}

static pthread_once_t cv_curl_once = PTHREAD_ONCE_INIT;
static CURLcode cv_curl_init_result = CURLE_FAILED_INIT;

static void cv_curl_init(void) {
    cv_curl_init_result =
        curl_global_init_mem(CURL_GLOBAL_DEFAULT, malloc, cv_wipe_free, cv_wipe_realloc, cv_wipe_strdup, calloc);
}

CURLcode cv_curl_global_init_wiping(void) {
    pthread_once(&cv_curl_once, cv_curl_init);
    return cv_curl_init_result;
}

CURLcode cv_curl_setopt_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}

CURLcode cv_curl_setopt_pointer(CURL *handle, CURLoption option, const void *value) {
    return curl_easy_setopt(handle, option, value);
}

CURLcode cv_curl_setopt_offset(CURL *handle, CURLoption option, curl_off_t value) {
    return curl_easy_setopt(handle, option, value);
}

CURLcode cv_curl_setopt_data_callback(
    CURL *handle, CURLoption option, size_t (*callback)(char *, size_t, size_t, void *)) {
    return curl_easy_setopt(handle, option, callback);
}

CURLcode cv_curl_setopt_opensocket_callback(
    CURL *handle, curl_socket_t (*callback)(void *, curlsocktype, struct curl_sockaddr *)) {
    return curl_easy_setopt(handle, CURLOPT_OPENSOCKETFUNCTION, callback);
}

CURLcode cv_curl_getinfo_long(CURL *handle, CURLINFO info, long *value) {
    return curl_easy_getinfo(handle, info, value);
}

CURLcode cv_curl_getinfo_pointer(CURL *handle, CURLINFO info, void **value) {
    return curl_easy_getinfo(handle, info, value);
}

CURLMcode cv_curl_multi_setopt_long(CURLM *multi, CURLMoption option, long value) {
    return curl_multi_setopt(multi, option, value);
}

CURLcode cv_curl_message_result(const CURLMsg *message) { return message->data.result; }

curl_socket_t cv_curl_open_socket(const struct curl_sockaddr *address) {
    return socket(address->family, address->socktype, address->protocol);
}

curl_socket_t cv_curl_socket_bad(void) { return CURL_SOCKET_BAD; }

const char *cv_curl_default_ca_file(void) { return curl_version_info(CURLVERSION_NOW)->cainfo; }

const char *cv_curl_default_ca_path(void) { return curl_version_info(CURLVERSION_NOW)->capath; }
