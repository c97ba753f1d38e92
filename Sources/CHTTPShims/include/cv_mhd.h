#ifndef CARDVAULT_CV_MHD_H
#define CARDVAULT_CV_MHD_H
/* Thin wrappers over libmicrohttpd calls Swift cannot make directly (the variadic
 * MHD_start_daemon) and over its GnuTLS session (client-certificate verification), and the
 * listening socket with its accept thread (cv_listener.c). */
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <microhttpd.h>

/// Everything `cv_mhd_start` passes to MHD_start_daemon, as plain fields.
struct cv_mhd_settings {
    /// MHD_FLAG bits (threading mode, TLS, IPv6, suspend/resume ...).
    unsigned int flags;
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

/// Starts a daemon with `settings` and no listening socket of its own (connections come from a
/// `cv_listener`); `cls` goes to every callback. NULL when it could not start.
struct MHD_Daemon *cv_mhd_start(const struct cv_mhd_settings *settings,
                                MHD_AccessHandlerCallback handler,
                                void *cls);

/// The size of the request line plus header fields as received (MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE);
/// 0 if unknown.
size_t cv_mhd_request_header_size(struct MHD_Connection *connection);

/// Sets the connection's idle timeout in seconds (MHD_CONNECTION_OPTION_TIMEOUT); call it from a
/// callback of that connection only.
void cv_mhd_set_connection_timeout(struct MHD_Connection *connection, unsigned int seconds);

/// A listening socket and the thread that accepts on it, handing each connection to a daemon
/// (MHD_add_connection). libmicrohttpd never sees the socket: its own MHD_quiesce_daemon, on an
/// epoll daemon with internal threads, races its threads' removal of the socket from their epoll
/// sets and can abort the process ("Failed to remove listen FD from epoll set", an open defect).
struct cv_listener;

/// Opens a TCP socket bound to `address` (SO_REUSEADDR; IPv6 only for an IPv6 address) and
/// listening with `backlog`; -1 with errno on failure.
int cv_listener_open(const struct sockaddr *address, socklen_t length, int backlog);

/// Starts accepting on `fd` for `daemon` on a thread of its own; NULL with errno on failure (`fd`
/// stays the caller's).
struct cv_listener *cv_listener_start(int fd, struct MHD_Daemon *daemon);

/// Stops accepting: shuts the socket down (connection attempts are refused from here on, the
/// socket stays open) and waits for the accept thread to end. Idempotent.
void cv_listener_quiesce(struct cv_listener *listener);

/// Quiesces if needed, closes the socket and frees the listener. Call it after MHD_stop_daemon or
/// before: no connection is handed over once it returns.
void cv_listener_close(struct cv_listener *listener);

/// The port a socket is bound to (useful after binding port 0); 0 if unknown.
uint16_t cv_listener_port(int fd);

/// Writes the client's IP address as text into `buffer`; returns its length (0 if unknown).
size_t cv_mhd_client_address(struct MHD_Connection *connection, char *buffer, size_t size);

/// Whether the connection is TLS and its client presented a certificate that verifies against the
/// daemon's trust list: 1 verified, 0 no certificate or verification failed, -1 not a TLS connection.
int cv_mhd_client_certificate_verified(struct MHD_Connection *connection);

#endif
