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

struct MHD_Daemon *cv_mhd_start(const struct cv_mhd_settings *settings,
                                MHD_AccessHandlerCallback handler,
                                void *cls) {
    struct MHD_OptionItem options[20];
    size_t count = 0;
    if (settings->log_callback) {
        options[count++] = (struct MHD_OptionItem){MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)cv_mhd_log, (void *)settings};
    }
    if (settings->address) {
        options[count++] = (struct MHD_OptionItem){MHD_OPTION_SOCK_ADDR, 0, (void *)settings->address};
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
    if (settings->listen_backlog) {
        options[count++] = (struct MHD_OptionItem){MHD_OPTION_LISTEN_BACKLOG_SIZE, settings->listen_backlog, NULL};
    }
    if (settings->tls_certificate_pem && settings->tls_key_pem) {
        options[count++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_CERT, 0, (void *)settings->tls_certificate_pem};
        options[count++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_KEY, 0, (void *)settings->tls_key_pem};
        if (settings->tls_trust_pem) {
            options[count++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_TRUST, 0, (void *)settings->tls_trust_pem};
        }
    }
    /* Strict parsing: an HTTP/1.1 request without Host, or with a malformed header, gets 400. */
    options[count++] = (struct MHD_OptionItem){MHD_OPTION_STRICT_FOR_CLIENT, 1, NULL};
    if (settings->uri_callback) {
        options[count++] = (struct MHD_OptionItem){MHD_OPTION_URI_LOG_CALLBACK, (intptr_t)settings->uri_callback, cls};
    }
    if (settings->completed_callback) {
        options[count++] =
            (struct MHD_OptionItem){MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)settings->completed_callback, cls};
    }
    options[count++] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};

    unsigned int flags = settings->flags;
    if (settings->log_callback) flags |= MHD_USE_ERROR_LOG;
    struct MHD_Daemon *daemon = MHD_start_daemon(flags, settings->port, NULL, NULL, handler, cls,
                                                 MHD_OPTION_ARRAY, options, MHD_OPTION_END);
    return daemon;
}

uint16_t cv_mhd_bound_port(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info ? info->port : 0;
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
