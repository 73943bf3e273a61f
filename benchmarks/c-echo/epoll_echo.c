/*
 * epoll_echo: a plain C echo server for length-prefixed frames, the baseline for the echo benchmark.
 *
 *   epoll_echo PORT [--threads N]
 *
 * Listens on 127.0.0.1:PORT (PORT 0: a free port, printed on stdout as the first line, "port N").
 * The protocol is a stream of frames, each a 4-byte big-endian length L then L bytes; every
 * complete frame is answered with the identical frame. A frame longer than 16 MiB closes the
 * connection.
 *
 * N worker threads (default 1) each run one level-triggered epoll loop over non-blocking
 * TCP_NODELAY sockets. Worker 0 also owns the listener: it accepts and hands the connections out
 * round-robin (to itself directly, to the others through a per-worker pipe that carries the fd),
 * so each connection belongs to exactly one worker for its whole life.
 *
 * Per connection: one read(), then all complete frames in the buffer go out in one send() (they
 * are sent straight from the read buffer, since an echo is the bytes themselves). What the socket
 * does not take is copied to an output buffer; while output is pending the connection waits for
 * EPOLLOUT only and reads nothing, so a client that does not read cannot grow our memory.
 *
 * SIGINT/SIGTERM: the main thread (which only waits for signals) wakes every worker through one
 * eventfd; the workers close their connections and the process exits with status 0.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_FRAME (16u * 1024u * 1024u)
#define RBUF_INITIAL (64u * 1024u)
#define RBUF_MIN_FREE (16u * 1024u)
#define BUF_SHRINK_ABOVE (1024u * 1024u)
#define MAX_THREADS 1024
#define MAX_EVENTS 256

typedef struct conn {
    int fd;
    uint32_t events; /* current epoll interest: EPOLLIN or EPOLLOUT */
    uint8_t *rbuf;
    size_t rlen, rcap;
    uint8_t *obuf;
    size_t ooff, olen, ocap;
    struct conn *prev, *next; /* the owning worker's list, for shutdown */
} conn_t;

typedef struct worker {
    int index;
    int epfd;
    int pipe_r, pipe_w; /* accepted fds handed to this worker (unused for worker 0) */
    conn_t *conns;
    pthread_t thread;
} worker_t;

static worker_t *workers;
static int nworkers;
static int listen_fd = -1;
static int stop_fd = -1;
static unsigned next_worker;       /* round-robin cursor; only worker 0 touches it */
static char listen_tag, stop_tag;  /* epoll data.ptr markers for the non-connection fds */

static void fatal(const char *what) {
    fprintf(stderr, "epoll_echo: %s: %s\n", what, strerror(errno));
    exit(1);
}

static void *xmalloc(size_t n) {
    void *p = malloc(n);
    if (!p) {
        fprintf(stderr, "epoll_echo: out of memory (%zu bytes)\n", n);
        exit(1);
    }
    return p;
}

static void *xrealloc(void *p, size_t n) {
    void *q = realloc(p, n);
    if (!q) {
        fprintf(stderr, "epoll_echo: out of memory (%zu bytes)\n", n);
        exit(1);
    }
    return q;
}

static uint32_t be32(const uint8_t *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

/* ---------- connections (all touched by the owning worker only) ---------- */

static void conn_close(worker_t *w, conn_t *c) {
    close(c->fd); /* also removes it from the epoll set */
    if (c->prev) c->prev->next = c->next;
    else w->conns = c->next;
    if (c->next) c->next->prev = c->prev;
    free(c->rbuf);
    free(c->obuf);
    free(c);
}

static void conn_add(worker_t *w, int fd) {
    conn_t *c = xmalloc(sizeof *c);
    memset(c, 0, sizeof *c);
    c->fd = fd;
    c->events = EPOLLIN;
    c->rcap = RBUF_INITIAL;
    c->rbuf = xmalloc(c->rcap);
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
    if (epoll_ctl(w->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
        fprintf(stderr, "epoll_echo: epoll_ctl(ADD): %s\n", strerror(errno));
        close(fd);
        free(c->rbuf);
        free(c);
        return;
    }
    c->next = w->conns;
    if (w->conns) w->conns->prev = c;
    w->conns = c;
}

/* Waits for EPOLLOUT while output is pending, for EPOLLIN otherwise. False: the connection is gone. */
static bool conn_set_events(worker_t *w, conn_t *c, uint32_t events) {
    if (c->events == events) return true;
    struct epoll_event ev = {.events = events, .data.ptr = c};
    if (epoll_ctl(w->epfd, EPOLL_CTL_MOD, c->fd, &ev) < 0) {
        fprintf(stderr, "epoll_echo: epoll_ctl(MOD): %s\n", strerror(errno));
        conn_close(w, c);
        return false;
    }
    c->events = events;
    return true;
}

/* Sends as much of [p, p+len) as the socket takes; returns the count, or -1 when the peer is gone. */
static ssize_t send_some(int fd, const uint8_t *p, size_t len) {
    size_t off = 0;
    while (off < len) {
        ssize_t n = send(fd, p + off, len - off, MSG_NOSIGNAL);
        if (n >= 0) {
            off += (size_t)n;
            continue;
        }
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) break;
        return -1;
    }
    return (ssize_t)off;
}

/* EPOLLOUT: writes pending output; once it is all out, goes back to reading. */
static void conn_flush(worker_t *w, conn_t *c) {
    ssize_t n = send_some(c->fd, c->obuf + c->ooff, c->olen - c->ooff);
    if (n < 0) {
        conn_close(w, c);
        return;
    }
    c->ooff += (size_t)n;
    if (c->ooff < c->olen) return; /* still pending: keep waiting for EPOLLOUT */
    c->ooff = c->olen = 0;
    if (c->ocap > BUF_SHRINK_ABOVE) {
        free(c->obuf);
        c->obuf = NULL;
        c->ocap = 0;
    }
    conn_set_events(w, c, EPOLLIN);
}

/* Echoes [p, p+len) in one send(); keeps what the socket did not take. False: the connection is gone. */
static bool conn_echo(worker_t *w, conn_t *c, const uint8_t *p, size_t len) {
    /* Output is never pending here: the connection does not read while it is. */
    ssize_t n = send_some(c->fd, p, len);
    if (n < 0) {
        conn_close(w, c);
        return false;
    }
    size_t rest = len - (size_t)n;
    if (rest == 0) return true;
    if (rest > c->ocap) {
        free(c->obuf);
        c->obuf = xmalloc(rest);
        c->ocap = rest;
    }
    memcpy(c->obuf, p + n, rest);
    c->ooff = 0;
    c->olen = rest;
    return conn_set_events(w, c, EPOLLOUT);
}

/* EPOLLIN (or HUP/ERR): one read(), then every complete frame goes back in one send(). */
static void conn_read(worker_t *w, conn_t *c) {
    if (c->rcap - c->rlen < RBUF_MIN_FREE) {
        c->rcap *= 2;
        c->rbuf = xrealloc(c->rbuf, c->rcap);
    }
    ssize_t n;
    do n = read(c->fd, c->rbuf + c->rlen, c->rcap - c->rlen);
    while (n < 0 && errno == EINTR);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (n <= 0) { /* EOF or a reset: nothing is pending, all earlier echoes were sent or handed to the kernel */
        conn_close(w, c);
        return;
    }
    c->rlen += (size_t)n;

    size_t off = 0;
    bool too_big = false;
    uint32_t flen = 0;
    while (c->rlen - off >= 4) {
        flen = be32(c->rbuf + off);
        if (flen > MAX_FRAME) {
            too_big = true;
            break;
        }
        if (c->rlen - off - 4 < flen) break;
        off += 4 + (size_t)flen;
    }
    if (too_big) {
        /* The frames before it are echoed as far as the socket takes them at once, then we hang up. */
        fprintf(stderr, "epoll_echo: closing a connection: frame of %u bytes exceeds 16 MiB\n", flen);
        if (off) (void)send_some(c->fd, c->rbuf, off);
        conn_close(w, c);
        return;
    }
    if (off && !conn_echo(w, c, c->rbuf, off)) return;

    /* Keep the partial frame at the front, with room for all of it. */
    c->rlen -= off;
    if (off && c->rlen) memmove(c->rbuf, c->rbuf + off, c->rlen);
    if (c->rlen >= 4) {
        size_t need = 4 + (size_t)be32(c->rbuf) + RBUF_MIN_FREE;
        if (need > c->rcap) {
            size_t cap = c->rcap;
            while (cap < need) cap *= 2;
            c->rbuf = xrealloc(c->rbuf, cap);
            c->rcap = cap;
        }
    } else if (c->rcap > BUF_SHRINK_ABOVE) { /* a big frame is done: give the memory back */
        c->rcap = RBUF_INITIAL;
        c->rbuf = xrealloc(c->rbuf, c->rcap);
    }
}

/* ---------- accepting ---------- */

static void accept_all(worker_t *w0) {
    for (;;) {
        int fd = accept4(listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) return;
            fprintf(stderr, "epoll_echo: accept: %s\n", strerror(errno)); /* e.g. EMFILE: retried on the next wakeup */
            return;
        }
        int one = 1;
        if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) < 0) {
            fprintf(stderr, "epoll_echo: TCP_NODELAY: %s\n", strerror(errno));
            close(fd);
            continue;
        }
        worker_t *w = &workers[next_worker++ % (unsigned)nworkers];
        if (w == w0) {
            conn_add(w0, fd);
            continue;
        }
        /* A 4-byte write to a pipe is atomic, so the reader always gets whole fds. */
        ssize_t n;
        do n = write(w->pipe_w, &fd, sizeof fd);
        while (n < 0 && errno == EINTR);
        if (n != (ssize_t)sizeof fd) {
            fprintf(stderr, "epoll_echo: handing a connection to worker %d failed; closing it\n", w->index);
            close(fd);
        }
    }
}

static void take_handed_fds(worker_t *w) {
    int fds[256];
    ssize_t n;
    do n = read(w->pipe_r, fds, sizeof fds);
    while (n < 0 && errno == EINTR);
    if (n <= 0) return;
    for (size_t i = 0; i < (size_t)n / sizeof fds[0]; i++) conn_add(w, fds[i]);
}

/* ---------- workers ---------- */

static void *worker_main(void *arg) {
    worker_t *w = arg;
    struct epoll_event evs[MAX_EVENTS];
    for (;;) {
        int n = epoll_wait(w->epfd, evs, MAX_EVENTS, -1);
        if (n < 0) {
            if (errno == EINTR) continue;
            fatal("epoll_wait");
        }
        for (int i = 0; i < n; i++) {
            void *tag = evs[i].data.ptr;
            uint32_t e = evs[i].events;
            if (tag == &stop_tag) goto done;
            if (tag == &listen_tag) {
                accept_all(w);
                continue;
            }
            if (tag == w) {
                take_handed_fds(w);
                continue;
            }
            /* A connection appears at most once per batch, so it cannot be used after a close here. */
            conn_t *c = tag;
            if (c->events == EPOLLOUT) {
                if (e & (EPOLLOUT | EPOLLERR | EPOLLHUP)) conn_flush(w, c); /* a dead peer fails the send */
            } else if (e & (EPOLLIN | EPOLLERR | EPOLLHUP)) {
                conn_read(w, c);
            }
        }
    }
done:
    while (w->conns) conn_close(w, w->conns);
    return NULL;
}

static void epoll_add(int epfd, int fd, void *tag) {
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = tag};
    if (epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) < 0) fatal("epoll_ctl(ADD)");
}

/* ---------- main ---------- */

static void usage(void) {
    fprintf(stderr, "usage: epoll_echo PORT [--threads N]\n");
    exit(2);
}

static long parse_long(const char *s, long lo, long hi) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) usage();
    return v;
}

int main(int argc, char **argv) {
    long port = -1, threads = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--threads")) {
            if (++i >= argc) usage();
            threads = parse_long(argv[i], 1, MAX_THREADS);
        } else if (port < 0) {
            port = parse_long(argv[i], 0, 65535);
        } else {
            usage();
        }
    }
    if (port < 0) usage();
    nworkers = (int)threads;

    /* Every thread inherits this mask; only the main thread takes the signals, in sigwait(). */
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    if ((errno = pthread_sigmask(SIG_BLOCK, &sigs, NULL)) != 0) fatal("pthread_sigmask");
    signal(SIGPIPE, SIG_IGN);

    listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (listen_fd < 0) fatal("socket");
    int one = 1;
    if (setsockopt(listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0) fatal("SO_REUSEADDR");
    if (setsockopt(listen_fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) < 0) fatal("TCP_NODELAY");
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(listen_fd, (struct sockaddr *)&addr, sizeof addr) < 0) fatal("bind");
    if (listen(listen_fd, SOMAXCONN) < 0) fatal("listen");
    if (port == 0) {
        socklen_t alen = sizeof addr;
        if (getsockname(listen_fd, (struct sockaddr *)&addr, &alen) < 0) fatal("getsockname");
        printf("port %u\n", (unsigned)ntohs(addr.sin_port));
        fflush(stdout);
    }

    stop_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (stop_fd < 0) fatal("eventfd");
    workers = xmalloc((size_t)nworkers * sizeof *workers);
    memset(workers, 0, (size_t)nworkers * sizeof *workers);
    for (int i = 0; i < nworkers; i++) {
        worker_t *w = &workers[i];
        w->index = i;
        w->pipe_r = w->pipe_w = -1;
        w->epfd = epoll_create1(EPOLL_CLOEXEC);
        if (w->epfd < 0) fatal("epoll_create1");
        epoll_add(w->epfd, stop_fd, &stop_tag); /* never read: once written it wakes every worker */
        if (i == 0) {
            epoll_add(w->epfd, listen_fd, &listen_tag);
        } else {
            int p[2];
            if (pipe2(p, O_NONBLOCK | O_CLOEXEC) < 0) fatal("pipe2");
            w->pipe_r = p[0];
            w->pipe_w = p[1];
            epoll_add(w->epfd, w->pipe_r, w);
        }
    }
    for (int i = 0; i < nworkers; i++) {
        if ((errno = pthread_create(&workers[i].thread, NULL, worker_main, &workers[i])) != 0) fatal("pthread_create");
    }

    int sig = 0;
    while (sigwait(&sigs, &sig) != 0) {
    }
    uint64_t one64 = 1;
    if (write(stop_fd, &one64, sizeof one64) != (ssize_t)sizeof one64) fatal("write(eventfd)");
    for (int i = 0; i < nworkers; i++) pthread_join(workers[i].thread, NULL);

    /* fds handed to a worker that stopped before taking them */
    for (int i = 1; i < nworkers; i++) {
        int fd;
        while (read(workers[i].pipe_r, &fd, sizeof fd) == (ssize_t)sizeof fd) close(fd);
        close(workers[i].pipe_r);
        close(workers[i].pipe_w);
    }
    for (int i = 0; i < nworkers; i++) close(workers[i].epfd);
    close(listen_fd);
    close(stop_fd);
    free(workers);
    return 0;
}
