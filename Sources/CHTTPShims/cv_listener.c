#define _GNU_SOURCE /* accept4 */
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "cv_mhd.h"

struct cv_listener {
    int fd;
    struct MHD_Daemon *daemon;
    pthread_t thread;
    int joined;
};

int cv_listener_open(const struct sockaddr *address, socklen_t length, int backlog) {
    int fd = socket(address->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    int on = 1;
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on) != 0 ||
        (address->sa_family == AF_INET6 && setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof on) != 0) ||
        bind(fd, address, length) != 0 || listen(fd, backlog) != 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

/* Accepts until the socket is shut down (accept then fails with EINVAL) and hands each connection to
 * libmicrohttpd, which queues it for one of its threads, or closes it at a connection limit. */
static void *cv_listener_run(void *argument) {
    struct cv_listener *listener = argument;
    for (;;) {
        struct sockaddr_storage peer;
        socklen_t length = sizeof peer;
        int client = accept4(listener->fd, (struct sockaddr *)&peer, &length, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (client >= 0) {
            (void)MHD_add_connection(listener->daemon, client, (const struct sockaddr *)&peer, length);
            continue;
        }
        switch (errno) {
        case EINTR:
        case ECONNABORTED:
        case EAGAIN:
        case EPROTO:
        case EPERM:
            continue;
        case EMFILE:
        case ENFILE:
        case ENOBUFS:
        case ENOMEM: {
            /* Out of descriptors or memory: the backlog holds the connection; try again shortly. */
            struct timespec pause = {0, 10 * 1000 * 1000};
            nanosleep(&pause, NULL);
            continue;
        }
        default:
            return NULL; /* EINVAL: shut down by cv_listener_quiesce */
        }
    }
}

struct cv_listener *cv_listener_start(int fd, struct MHD_Daemon *daemon) {
    struct cv_listener *listener = calloc(1, sizeof *listener);
    if (!listener) return NULL;
    listener->fd = fd;
    listener->daemon = daemon;
    int failure = pthread_create(&listener->thread, NULL, cv_listener_run, listener);
    if (failure != 0) {
        free(listener);
        errno = failure;
        return NULL;
    }
    return listener;
}

void cv_listener_quiesce(struct cv_listener *listener) {
    if (listener->joined) return;
    (void)shutdown(listener->fd, SHUT_RD);
    (void)pthread_join(listener->thread, NULL);
    listener->joined = 1;
}

void cv_listener_close(struct cv_listener *listener) {
    cv_listener_quiesce(listener);
    close(listener->fd);
    free(listener);
}

uint16_t cv_listener_port(int fd) {
    struct sockaddr_storage address;
    socklen_t length = sizeof address;
    if (getsockname(fd, (struct sockaddr *)&address, &length) != 0) return 0;
    if (address.ss_family == AF_INET) return ntohs(((struct sockaddr_in *)&address)->sin_port);
    if (address.ss_family == AF_INET6) return ntohs(((struct sockaddr_in6 *)&address)->sin6_port);
    return 0;
}
