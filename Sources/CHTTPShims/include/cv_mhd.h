#ifndef CARDVAULT_CV_MHD_H
#define CARDVAULT_CV_MHD_H
/* Thin wrappers over libmicrohttpd calls Swift cannot make directly (the variadic
 * MHD_start_daemon) and over its GnuTLS session (client-certificate verification). */
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <microhttpd.h>

/// Everything `cv_mhd_start` passes to MHD_start_daemon, as plain fields.
struct cv_mhd_settings {
    /// MHD_FLAG bits (threading mode, TLS, IPv6, suspend/resume ...).
    unsigned int flags;
    /// Address to bind (IPv4 or IPv6), or NULL for the wildcard on `port`.
    const struct sockaddr *address;
    /// Port when `address` is NULL.
    uint16_t port;
    /// Worker threads for the internal epoll pool; 0 for none (thread-per-connection mode).
    unsigned int thread_pool_size;
    /// Idle/read timeout per connection in seconds; 0 for none.
    unsigned int connection_timeout;
    /// Per-connection memory pool (holds the request head, libmicrohttpd's header and cookie
    /// records and the response head); 0 for the default.
    size_t connection_memory_limit;
    /// Maximum concurrent connections; 0 for the default.
    unsigned int connection_limit;
    /// Maximum concurrent connections from one IP address; 0 for none.
    unsigned int per_ip_connection_limit;
    /// listen(2) backlog; 0 for the default.
    unsigned int listen_backlog;
    /// PEM texts for TLS (NULL when plain HTTP); `tls_trust_pem` asks clients for a certificate.
    const char *tls_certificate_pem;
    const char *tls_key_pem;
    const char *tls_trust_pem;
    /// GnuTLS priority string (MHD_OPTION_HTTPS_PRIORITIES): versions and cipher suites offered;
    /// NULL for libmicrohttpd's default.
    const char *tls_priorities;
    /// Called once per request with the raw request URI and `uri_cls`; returns the per-request
    /// context. libmicrohttpd's own parse of the query into GET arguments is skipped (see
    /// cv_mhd.c): the callback must keep the query it needs. When set, these settings must outlive
    /// the daemon.
    void *(*uri_callback)(void *cls, const char *uri, struct MHD_Connection *connection);
    void *uri_cls;
    /// Called when a request is finished (answered, or the connection failed).
    MHD_RequestCompletedCallback completed_callback;
    /// Called with libmicrohttpd's own error messages and `log_cls`. When set, these settings must
    /// outlive the daemon (the logger reads them).
    void (*log_callback)(void *cls, const char *message);
    void *log_cls;
};

/// Starts a daemon with `settings`; `cls` goes to every callback. NULL when it could not start.
struct MHD_Daemon *cv_mhd_start(const struct cv_mhd_settings *settings,
                                MHD_AccessHandlerCallback handler,
                                void *cls);

/// The size of the request line plus header fields as received (MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE);
/// 0 if unknown.
size_t cv_mhd_request_header_size(struct MHD_Connection *connection);

/// Sets the connection's idle timeout in seconds (MHD_CONNECTION_OPTION_TIMEOUT); call it from a
/// callback of that connection only.
void cv_mhd_set_connection_timeout(struct MHD_Connection *connection, unsigned int seconds);

/// The port the daemon is bound to (useful after binding port 0); 0 if unknown.
uint16_t cv_mhd_bound_port(struct MHD_Daemon *daemon);

/// Writes the client's IP address as text into `buffer`; returns its length (0 if unknown).
size_t cv_mhd_client_address(struct MHD_Connection *connection, char *buffer, size_t size);

/// Whether the connection is TLS and its client presented a certificate that verifies against the
/// daemon's trust list: 1 verified, 0 no certificate or verification failed, -1 not a TLS connection.
int cv_mhd_client_certificate_verified(struct MHD_Connection *connection);

#endif
