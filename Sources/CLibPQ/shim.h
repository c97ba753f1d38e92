#ifndef CARDVAULT_CLIBPQ_SHIM_H
#define CARDVAULT_CLIBPQ_SHIM_H
#include <libpq-fe.h>
#endif
