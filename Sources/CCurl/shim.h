#ifndef CARDVAULT_CCURL_SHIM_H
#define CARDVAULT_CCURL_SHIM_H
#include <curl/curl.h>
#endif
