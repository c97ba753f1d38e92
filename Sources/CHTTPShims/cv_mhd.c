#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <gnutls/gnutls.h>
#include "cv_mhd.h"

/* MHD_OPTION_EXTERNAL_LOGGER wants a printf-style function; render the text and hand on one string. */
static void cv_mhd_log(void *target, const char *format, va_list arguments) {
    const struct cv_mhd_settings *settings = target;
    char text[512];
    vsnprintf(text, sizeof text, format, arguments);
    size_t length = strlen(text);
    while (length > 0 && (text[length - 1] == '\n' || text[length - 1] == '\r')) text[--length] = 0;
    settings->log_callback(settings->log_cls, text);
}

/* MHD_OPTION_URI_LOG_CALLBACK: hands the raw request target to the application's callback (which
 * copies it), then cuts libmicrohttpd's own copy of the query string short.
 *
 * libmicrohttpd 0.9.75 is about to split the query into GET-argument records in the connection's
 * memory pool, 64 bytes a parameter ("a&" is two bytes on the wire, so 8 KiB of query asks for
 * 256 KiB), and when the pool runs out it queues a 431 but then carries on parsing the header as
 * if nothing had happened: the connection hangs with no answer (parse_initial_message_line ignores
 * the failure of MHD_parse_arguments_). CardVault reads the query from the target copied here and
 * never asks libmicrohttpd for GET arguments, so the parse is skipped: the NUL written after '?'
 * leaves it an empty argument string. The target is NUL-terminated at this point (the request
 * line was split in place), and '?' is the one libmicrohttpd itself found (the first). The
 * callback's type makes `uri` const, but it points into the connection's writable read buffer. */
static void *cv_mhd_uri_log(void *target, const char *uri, struct MHD_Connection *connection) {
    const struct cv_mhd_settings *settings = target;
    void *context = settings->uri_callback(settings->uri_cls, uri, connection);
    if (uri) {
        char *question = strchr(uri, '?');
        if (question && question[1] != '\0') question[1] = '\0';
    }
    return context;
}

struct MHD_Daemon *cv_mhd_start(const struct cv_mhd_settings *settings,
                                MHD_AccessHandlerCallback handler,
                                void *cls) {
    struct MHD_OptionItem options[20];
    size_t count = 0;
    if (settings->log_callback) {
        options[count++] = (struct MHD_OptionItem){MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)cv_mhd_log, (void *)settings};
    }
    if (settings->thread_pool_size > 1) {
        options[count++] = (struct MHD_OptionItem){MHD_OPTION_THREAD_POOL_SIZE, settings->thread_pool_size, NULL};
    }
    if (settings->connection_timeout) {
        options[count++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_TIMEOUT, settings->connection_timeout, NULL};
    }
    if (settings->connection_memory_limit) {
        options[count++] =
            (struct MHD_OptionItem){MHD_OPTION_CONNECTION_MEMORY_LIMIT, (intptr_t)settings->connection_memory_limit, NULL};
    }
    if (settings->connection_limit) {
        options[count++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_LIMIT, settings->connection_limit, NULL};
    }
    if (settings->per_ip_connection_limit) {
        options[count++] =
            (struct MHD_OptionItem){MHD_OPTION_PER_IP_CONNECTION_LIMIT, settings->per_ip_connection_limit, NULL};
    }
    if (settings->tls_certificate_pem && settings->tls_key_pem) {
        options[count++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_CERT, 0, (void *)settings->tls_certificate_pem};
        options[count++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_KEY, 0, (void *)settings->tls_key_pem};
        if (settings->tls_priorities) {
            options[count++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_PRIORITIES, 0, (void *)settings->tls_priorities};
        }
        if (settings->tls_trust_pem) {
            options[count++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_TRUST, 0, (void *)settings->tls_trust_pem};
        }
    }
    /* Not strict (level 0): in 0.9.75 level 1 adds only two checks, a Host field on HTTP/1.1 and no
     * space in the target, and the application makes both (ServerCore). Left to libmicrohttpd,
     * the Host check runs after a failed Cookie parse has emptied the header list, turning the
     * 431 it had queued into a closed connection with no answer (at level 0 the 431 goes out, its
     * head written twice: another 0.9.75 defect, see docs/operations.md). */
    options[count++] = (struct MHD_OptionItem){MHD_OPTION_STRICT_FOR_CLIENT, 0, NULL};
    if (settings->uri_callback) {
        options[count++] =
            (struct MHD_OptionItem){MHD_OPTION_URI_LOG_CALLBACK, (intptr_t)cv_mhd_uri_log, (void *)settings};
    }
    if (settings->completed_callback) {
        options[count++] =
            (struct MHD_OptionItem){MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)settings->completed_callback, cls};
    }
    options[count++] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};

    unsigned int flags = settings->flags | MHD_USE_NO_LISTEN_SOCKET;
    if (settings->log_callback) flags |= MHD_USE_ERROR_LOG;
    struct MHD_Daemon *daemon = MHD_start_daemon(flags, 0, NULL, NULL, handler, cls,
                                                 MHD_OPTION_ARRAY, options, MHD_OPTION_END);
    return daemon;
}

size_t cv_mhd_request_header_size(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE);
    return info ? info->header_size : 0;
}

void cv_mhd_set_connection_timeout(struct MHD_Connection *connection, unsigned int seconds) {
    (void)MHD_set_connection_option(connection, MHD_CONNECTION_OPTION_TIMEOUT, seconds);
}

size_t cv_mhd_client_address(struct MHD_Connection *connection, char *buffer, size_t size) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (!info || !info->client_addr || size == 0) return 0;
    const struct sockaddr *address = info->client_addr;
    const char *text = NULL;
    if (address->sa_family == AF_INET) {
        text = inet_ntop(AF_INET, &((const struct sockaddr_in *)address)->sin_addr, buffer, (socklen_t)size);
    } else if (address->sa_family == AF_INET6) {
        text = inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)address)->sin6_addr, buffer, (socklen_t)size);
    }
    return text ? strlen(buffer) : 0;
}

int cv_mhd_client_certificate_verified(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_GNUTLS_SESSION);
    if (!info || !info->tls_session) return -1;
    gnutls_session_t session = (gnutls_session_t)info->tls_session;
    unsigned int count = 0;
    if (gnutls_certificate_get_peers(session, &count) == NULL || count == 0) return 0;
    unsigned int status = 0;
    if (gnutls_certificate_verify_peers2(session, &status) != GNUTLS_E_SUCCESS) return 0;
    return status == 0 ? 1 : 0;
}
