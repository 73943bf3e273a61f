/*
 * load_client: a small, single-threaded epoll load generator for Hearth's wire protocol.
 *
 *   load_client HOST PORT --inflight N --connections C --seconds S
 *               [--warmup W] [--payload BYTES] [--json FILE] [--metadata KEY=VALUE]... [--raw]
 *
 * Each of C connections keeps N `hearth.echo.v1.Echo/Echo` calls in flight. Every response
 * read frees its call id, which is reused at once for a new request; all requests produced by
 * one read go out in one send(). Frames are hand-encoded from one template (call ids live in
 * [2^28, 2^28 + N), so their varint is always 5 bytes and can be patched in place); responses
 * are parsed with a minimal protobuf field walker. Each --metadata adds one entry to the
 * requests' `map<string, string> metadata = 4` (e.g. `x-hearth-internal=SECRET` or
 * `authorization=Bearer TOKEN`); the value is everything after the first '='.
 *
 * Wire format: 4-byte big-endian length N, then N bytes of hearth.rpc.v1.Frame.
 *
 * --raw drives a bare length-prefixed echo server instead (benchmarks/c-echo, or any server that
 * answers each frame with the identical frame): a request is the 4-byte big-endian length, then
 * --payload bytes, and nothing else. Raw frames carry no call id, so the responses on a connection
 * are matched to its requests in FIFO order: each connection keeps a ring of N send timestamps
 * (head = oldest call in flight). A response of another length or with other bytes than the
 * request is a protocol error (exit 2); so is one that arrives with nothing in flight. --metadata
 * cannot be combined with --raw, and unknown_ids is always 0 in this mode.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#define MAX_FRAME (16u * 1024u * 1024u)
#define ID_BASE ((uint64_t)1 << 28) /* every id in [2^28, 2^35) is a 5-byte varint */
#define MAX_INFLIGHT (1u << 24)
#define METHOD "hearth.echo.v1.Echo/Echo"
#define DRAIN_NS (5ull * 1000000000ull)
#define READ_CHUNK (256u * 1024u)

enum { KIND_REQUEST = 1, KIND_RESPONSE = 2, KIND_CANCEL = 3, KIND_PING = 4, KIND_PONG = 5, KIND_GOAWAY = 6 };

/* ---------- small helpers ---------- */

static void die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("load_client: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(2);
}

static void *xrealloc(void *p, size_t n) {
    void *q = realloc(p, n ? n : 1);
    if (!q) die("out of memory (%zu bytes)", n);
    return q;
}

static inline uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static size_t put_varint(uint8_t *p, uint64_t v) {
    size_t n = 0;
    while (v >= 0x80) {
        p[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    p[n++] = (uint8_t)v;
    return n;
}

static size_t varint_size(uint64_t v) {
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

/* Reads a varint from [*p, end); false when truncated or longer than 10 bytes. */
static inline bool get_varint(const uint8_t **p, const uint8_t *end, uint64_t *out) {
    uint64_t v = 0;
    const uint8_t *q = *p;
    for (unsigned shift = 0; shift < 70; shift += 7) {
        if (q >= end) return false;
        uint8_t b = *q++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *p = q;
            *out = v;
            return true;
        }
    }
    return false;
}

/* Skips one field's value of the given wire type; false when malformed. */
static inline bool skip_field(const uint8_t **p, const uint8_t *end, unsigned wire) {
    uint64_t n;
    switch (wire) {
    case 0: return get_varint(p, end, &n);
    case 1:
        if ((size_t)(end - *p) < 8) return false;
        *p += 8;
        return true;
    case 2:
        if (!get_varint(p, end, &n) || n > (uint64_t)(end - *p)) return false;
        *p += n;
        return true;
    case 5:
        if ((size_t)(end - *p) < 4) return false;
        *p += 4;
        return true;
    default: return false; /* groups (3, 4) and 6, 7 are not valid here */
    }
}

/* ---------- histogram: log-linear, 64 sub-buckets per power of two (< 1.6% error), ns ---------- */

#define H_SUB 128u
#define H_HALF 64u
#define H_MAX_SHIFT 40u
#define H_BUCKETS (H_SUB + H_MAX_SHIFT * H_HALF)

typedef struct {
    uint64_t counts[H_BUCKETS];
    uint64_t total, max, min;
    long double sum;
} hist_t;

static inline unsigned hist_index(uint64_t v) {
    if (v < H_SUB) return (unsigned)v;
    unsigned shift = (unsigned)(63 - __builtin_clzll(v)) - 6u; /* v >> shift in [64, 127] */
    if (shift > H_MAX_SHIFT) return H_BUCKETS - 1;
    return H_SUB + (shift - 1u) * H_HALF + (unsigned)((v >> shift) - H_HALF);
}

static uint64_t hist_bucket_high(unsigned idx) {
    if (idx < H_SUB) return idx;
    unsigned k = idx - H_SUB, shift = k / H_HALF + 1u;
    uint64_t sub = k % H_HALF + H_HALF;
    return ((sub + 1) << shift) - 1;
}

static inline void hist_add(hist_t *h, uint64_t v) {
    h->counts[hist_index(v)]++;
    h->total++;
    h->sum += (long double)v;
    if (v > h->max) h->max = v;
    if (v < h->min) h->min = v;
}

/* The value at quantile q (0..1]: the highest value of its bucket, clamped to [min, max]. */
static uint64_t hist_quantile(const hist_t *h, double q) {
    if (h->total == 0) return 0;
    uint64_t rank = (uint64_t)(q * (double)h->total + 0.999999);
    if (rank < 1) rank = 1;
    if (rank > h->total) rank = h->total;
    uint64_t seen = 0;
    for (unsigned i = 0; i < H_BUCKETS; i++) {
        seen += h->counts[i];
        if (seen >= rank) {
            uint64_t v = hist_bucket_high(i);
            if (v > h->max) v = h->max;
            if (v < h->min) v = h->min;
            return v;
        }
    }
    return h->max;
}

/* ---------- connections ---------- */

typedef struct {
    int fd;
    int index;
    bool want_out;
    uint8_t *rbuf;
    size_t rlen, rcap;
    uint8_t *obuf;
    size_t ooff, olen, ocap;
    uint64_t *sent_ns;   /* per slot */
    uint8_t *busy;       /* per slot: 1 while its call is in flight */
    uint32_t *batch;     /* slots queued since the last send time was stamped */
    uint32_t nbatch;
    uint32_t inflight;
    uint32_t head;       /* --raw: ring index of the oldest call in flight */
} conn_t;

typedef struct {
    const char *key, *val;
    size_t klen, vlen;
} meta_t;

static struct {
    bool raw;            /* --raw: bare length-prefixed frames, FIFO-matched */
    uint32_t inflight;
    meta_t *meta;        /* --metadata entries, in command-line order */
    size_t nmeta;
    uint8_t *tmpl;       /* one full request frame, length prefix included */
    size_t tmpl_len;
    size_t id_off;       /* offset of the 5-byte call_id varint in tmpl */
    uint64_t measure_start, measure_end;
    hist_t hist;
    uint64_t calls, errors, unknown_ids, sent, responses;
    uint64_t total_inflight;
    int epfd;
    bool first_error_printed;
} G;

/* Length of one metadata map entry message: { string key = 1; string value = 2; }. */
static size_t meta_entry_len(const meta_t *m) {
    return 1 + varint_size(m->klen) + m->klen + 1 + varint_size(m->vlen) + m->vlen;
}

/* A frame's 4-byte big-endian length prefix. */
static void put_be32(uint8_t *p, size_t n) {
    p[0] = (uint8_t)(n >> 24);
    p[1] = (uint8_t)(n >> 16);
    p[2] = (uint8_t)(n >> 8);
    p[3] = (uint8_t)n;
}

/* --raw: the request is just the length prefix and the payload. */
static void encode_raw_template(size_t payload) {
    G.tmpl_len = 4 + payload;
    G.tmpl = xrealloc(NULL, G.tmpl_len);
    uint8_t *p = G.tmpl;
    put_be32(p, payload);
    for (size_t i = 0; i < payload; i++) p[4 + i] = (uint8_t)('a' + i % 26);
}

static void encode_template(size_t payload) {
    /* EchoRequest { bytes payload = 1; } */
    size_t echo_len = payload ? 1 + varint_size(payload) + payload : 0;
    size_t mlen = strlen(METHOD);
    size_t body = 1 + 5                          /* call_id */
                  + 2                            /* kind = REQUEST */
                  + 1 + varint_size(mlen) + mlen /* method */
                  + (echo_len ? 1 + varint_size(echo_len) + echo_len : 0);
    for (size_t i = 0; i < G.nmeta; i++) {
        size_t elen = meta_entry_len(&G.meta[i]);
        body += 1 + varint_size(elen) + elen;    /* metadata entry */
    }
    if (body > MAX_FRAME) die("payload and metadata too large: frame would be %zu bytes", body);
    G.tmpl_len = 4 + body;
    G.tmpl = xrealloc(NULL, G.tmpl_len);
    uint8_t *p = G.tmpl;
    put_be32(p, body);
    p += 4;
    *p++ = 0x08; /* field 1, varint */
    G.id_off = (size_t)(p - G.tmpl);
    p += put_varint(p, ID_BASE);
    *p++ = 0x10; /* field 2, varint */
    *p++ = KIND_REQUEST;
    *p++ = 0x1a; /* field 3, length-delimited */
    p += put_varint(p, mlen);
    memcpy(p, METHOD, mlen);
    p += mlen;
    for (size_t i = 0; i < G.nmeta; i++) {
        const meta_t *m = &G.meta[i];
        *p++ = 0x22; /* field 4 (metadata map entry), length-delimited */
        p += put_varint(p, meta_entry_len(m));
        *p++ = 0x0a; /* entry field 1 (key), length-delimited */
        p += put_varint(p, m->klen);
        memcpy(p, m->key, m->klen);
        p += m->klen;
        *p++ = 0x12; /* entry field 2 (value), length-delimited */
        p += put_varint(p, m->vlen);
        memcpy(p, m->val, m->vlen);
        p += m->vlen;
    }
    if (echo_len) {
        *p++ = 0x32; /* field 6, length-delimited */
        p += put_varint(p, echo_len);
        *p++ = 0x0a; /* EchoRequest field 1, length-delimited */
        p += put_varint(p, payload);
        for (size_t i = 0; i < payload; i++) p[i] = (uint8_t)('a' + i % 26);
        p += payload;
    }
    if ((size_t)(p - G.tmpl) != G.tmpl_len) die("internal: template length mismatch");
}

static void obuf_reserve(conn_t *c, size_t extra) {
    if (c->olen + extra <= c->ocap) return;
    if (c->ooff > 0) { /* compact first */
        memmove(c->obuf, c->obuf + c->ooff, c->olen - c->ooff);
        c->olen -= c->ooff;
        c->ooff = 0;
        if (c->olen + extra <= c->ocap) return;
    }
    size_t cap = c->ocap ? c->ocap : 4096;
    while (cap < c->olen + extra) cap *= 2;
    c->obuf = xrealloc(c->obuf, cap);
    c->ocap = cap;
}

/* Queues a request for `slot` (its call id is ID_BASE + slot). */
static inline void queue_request(conn_t *c, uint32_t slot) {
    obuf_reserve(c, G.tmpl_len);
    uint8_t *p = c->obuf + c->olen;
    memcpy(p, G.tmpl, G.tmpl_len);
    uint64_t id = ID_BASE + slot;
    uint8_t *q = p + G.id_off;
    q[0] = (uint8_t)((id & 0x7f) | 0x80);
    q[1] = (uint8_t)(((id >> 7) & 0x7f) | 0x80);
    q[2] = (uint8_t)(((id >> 14) & 0x7f) | 0x80);
    q[3] = (uint8_t)(((id >> 21) & 0x7f) | 0x80);
    q[4] = (uint8_t)((id >> 28) & 0x7f);
    c->olen += G.tmpl_len;
    c->busy[slot] = 1;
    c->inflight++;
    G.total_inflight++;
    G.sent++;
    c->batch[c->nbatch++] = slot;
}

/* --raw: queues a request at the tail of the connection's ring of calls in flight. */
static inline void queue_raw_request(conn_t *c) {
    uint32_t slot = c->head + c->inflight;
    if (slot >= G.inflight) slot -= G.inflight;
    obuf_reserve(c, G.tmpl_len);
    memcpy(c->obuf + c->olen, G.tmpl, G.tmpl_len);
    c->olen += G.tmpl_len;
    c->busy[slot] = 1;
    c->inflight++;
    G.total_inflight++;
    G.sent++;
    c->batch[c->nbatch++] = slot;
}

static void set_epoll(conn_t *c, bool want_out) {
    if (c->want_out == want_out) return;
    struct epoll_event ev = {.events = EPOLLIN | (want_out ? EPOLLOUT : 0), .data.ptr = c};
    if (epoll_ctl(G.epfd, EPOLL_CTL_MOD, c->fd, &ev) < 0) die("epoll_ctl: %s", strerror(errno));
    c->want_out = want_out;
}

/* Stamps queued requests with the send time and writes everything pending in one send(). */
static void conn_flush(conn_t *c) {
    if (c->nbatch) {
        uint64_t t = now_ns();
        for (uint32_t i = 0; i < c->nbatch; i++) c->sent_ns[c->batch[i]] = t;
        c->nbatch = 0;
    }
    while (c->ooff < c->olen) {
        ssize_t n = send(c->fd, c->obuf + c->ooff, c->olen - c->ooff, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                set_epoll(c, true);
                return;
            }
            die("connection %d: send: %s", c->index, strerror(errno));
        }
        c->ooff += (size_t)n;
    }
    c->ooff = c->olen = 0;
    set_epoll(c, false);
}

typedef struct {
    uint64_t call_id, kind, code;
    const uint8_t *msg;
    size_t msg_len;
} frame_info_t;

static bool parse_status(const uint8_t *p, const uint8_t *end, frame_info_t *f) {
    while (p < end) {
        uint64_t key;
        if (!get_varint(&p, end, &key)) return false;
        unsigned field = (unsigned)(key >> 3), wire = (unsigned)(key & 7);
        if (field == 1 && wire == 0) {
            if (!get_varint(&p, end, &f->code)) return false;
        } else if (field == 2 && wire == 2) {
            uint64_t n;
            if (!get_varint(&p, end, &n) || n > (uint64_t)(end - p)) return false;
            f->msg = p;
            f->msg_len = (size_t)n;
            p += n;
        } else if (!skip_field(&p, end, wire)) {
            return false;
        }
    }
    return true;
}

static bool parse_frame(const uint8_t *p, size_t len, frame_info_t *f) {
    const uint8_t *end = p + len;
    memset(f, 0, sizeof *f);
    while (p < end) {
        uint64_t key;
        if (!get_varint(&p, end, &key)) return false;
        unsigned field = (unsigned)(key >> 3), wire = (unsigned)(key & 7);
        if (field == 0) return false;
        if (field == 1 && wire == 0) {
            if (!get_varint(&p, end, &f->call_id)) return false;
        } else if (field == 2 && wire == 0) {
            if (!get_varint(&p, end, &f->kind)) return false;
        } else if (field == 7 && wire == 2) {
            uint64_t n;
            if (!get_varint(&p, end, &n) || n > (uint64_t)(end - p)) return false;
            if (!parse_status(p, p + n, f)) return false;
            p += n;
        } else if (!skip_field(&p, end, wire)) {
            return false;
        }
    }
    return true;
}

static void send_pong(conn_t *c, uint64_t id) {
    uint8_t body[16];
    size_t n = 0;
    body[n++] = 0x08;
    n += put_varint(body + n, id);
    body[n++] = 0x10;
    body[n++] = KIND_PONG;
    obuf_reserve(c, 4 + n);
    uint8_t *p = c->obuf + c->olen;
    p[0] = 0;
    p[1] = 0;
    p[2] = 0;
    p[3] = (uint8_t)n;
    memcpy(p + 4, body, n);
    c->olen += 4 + n;
}

static void handle_frame(conn_t *c, const uint8_t *p, size_t len, uint64_t now, bool record, bool resend) {
    frame_info_t f;
    if (!parse_frame(p, len, &f)) die("connection %d: malformed frame (%zu bytes)", c->index, len);
    switch (f.kind) {
    case KIND_RESPONSE: {
        uint64_t slot = f.call_id - ID_BASE;
        if (f.call_id < ID_BASE || slot >= G.inflight || !c->busy[slot]) {
            G.unknown_ids++;
            return;
        }
        c->busy[slot] = 0;
        c->inflight--;
        G.total_inflight--;
        G.responses++;
        if (f.code != 0) {
            G.errors++;
            if (!G.first_error_printed) {
                G.first_error_printed = true;
                fprintf(stderr, "load_client: first error: code %llu: %.*s\n", (unsigned long long)f.code,
                        (int)f.msg_len, f.msg ? (const char *)f.msg : "");
            }
        }
        if (record) {
            G.calls++;
            hist_add(&G.hist, now - c->sent_ns[slot]);
        }
        if (resend) queue_request(c, (uint32_t)slot);
        return;
    }
    case KIND_PING: send_pong(c, f.call_id); return;
    case KIND_PONG: return;
    case KIND_GOAWAY:
        die("connection %d: GOAWAY from server: code %llu: %.*s", c->index, (unsigned long long)f.code,
            (int)f.msg_len, f.msg ? (const char *)f.msg : "");
        return;
    default: die("connection %d: unexpected frame kind %llu", c->index, (unsigned long long)f.kind);
    }
}

/* --raw: a response answers the oldest call in flight on its connection. */
static void handle_raw_frame(conn_t *c, const uint8_t *p, size_t len, uint64_t now, bool record, bool resend) {
    if (len != G.tmpl_len - 4)
        die("connection %d: raw response of %zu bytes, expected %zu", c->index, len, G.tmpl_len - 4);
    if (c->inflight == 0) die("connection %d: raw response with no request in flight", c->index);
    if (memcmp(p, G.tmpl + 4, len) != 0) die("connection %d: raw response bytes differ from the request", c->index);
    uint32_t slot = c->head;
    c->head = slot + 1 == G.inflight ? 0 : slot + 1;
    c->busy[slot] = 0;
    c->inflight--;
    G.total_inflight--;
    G.responses++;
    if (record) {
        G.calls++;
        hist_add(&G.hist, now - c->sent_ns[slot]);
    }
    if (resend) queue_raw_request(c);
}

/* One read(), then every complete frame in the buffer, then one send() of what they produced. */
static void conn_read(conn_t *c) {
    ssize_t n;
    for (;;) {
        if (c->rcap - c->rlen < READ_CHUNK / 4) {
            c->rcap = c->rcap * 2;
            c->rbuf = xrealloc(c->rbuf, c->rcap);
        }
        n = read(c->fd, c->rbuf + c->rlen, c->rcap - c->rlen);
        if (n >= 0) break;
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) return;
        die("connection %d: read: %s", c->index, strerror(errno));
    }
    if (n == 0) die("connection %d: server closed the connection", c->index);
    c->rlen += (size_t)n;

    uint64_t now = now_ns();
    bool record = now >= G.measure_start && now < G.measure_end;
    bool resend = now < G.measure_end;
    size_t off = 0;
    while (c->rlen - off >= 4) {
        const uint8_t *h = c->rbuf + off;
        uint32_t flen = (uint32_t)h[0] << 24 | (uint32_t)h[1] << 16 | (uint32_t)h[2] << 8 | (uint32_t)h[3];
        if (flen > MAX_FRAME) die("connection %d: frame of %u bytes exceeds 16 MiB", c->index, flen);
        if (G.raw) {
            if (flen != G.tmpl_len - 4) /* known wrong from the header already */
                die("connection %d: raw response of %u bytes, expected %zu", c->index, flen, G.tmpl_len - 4);
            if (c->rlen - off - 4 < flen) break;
            handle_raw_frame(c, h + 4, flen, now, record, resend);
            off += 4 + (size_t)flen;
            continue;
        }
        if (c->rlen - off - 4 < flen) break;
        handle_frame(c, h + 4, flen, now, record, resend);
        off += 4 + (size_t)flen;
    }
    if (off) {
        memmove(c->rbuf, c->rbuf + off, c->rlen - off);
        c->rlen -= off;
    }
    /* Make room for a partially received large frame. */
    if (c->rlen >= 4) {
        const uint8_t *h = c->rbuf;
        size_t need = 4 + ((size_t)h[0] << 24 | (size_t)h[1] << 16 | (size_t)h[2] << 8 | (size_t)h[3]);
        if (need > c->rcap) {
            size_t cap = c->rcap;
            while (cap < need) cap *= 2;
            c->rbuf = xrealloc(c->rbuf, cap);
            c->rcap = cap;
        }
    }
    if (c->olen > c->ooff || c->nbatch) conn_flush(c);
}

static int connect_to(const char *host, const char *port) {
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res, *ai;
    int rc = getaddrinfo(host, port, &hints, &res);
    if (rc != 0) die("resolve %s:%s: %s", host, port, gai_strerror(rc));
    int fd = -1, err = 0;
    for (ai = res; ai; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
        if (fd < 0) {
            err = errno;
            continue;
        }
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) break;
        err = errno;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0) die("connect %s:%s: %s", host, port, strerror(err));
    int one = 1;
    if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) < 0) die("TCP_NODELAY: %s", strerror(errno));
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0) die("O_NONBLOCK: %s", strerror(errno));
    return fd;
}

/* ---------- main ---------- */

static void usage(void) {
    fprintf(stderr, "usage: load_client HOST PORT --inflight N --connections C --seconds S\n"
                    "                   [--warmup W] [--payload BYTES] [--json FILE] [--metadata KEY=VALUE]... [--raw]\n");
    exit(2);
}

static double parse_num(const char *name, const char *s, double lo, double hi) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= lo && v <= hi)) die("bad %s: '%s' (want %g..%g)", name, s, lo, hi);
    return v;
}

int main(int argc, char **argv) {
    const char *host = NULL, *port = NULL, *json = NULL;
    double inflight = 0, conns = 0, seconds = 0, warmup = 1, payload = 256;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--raw")) {
            G.raw = true;
        } else if (strncmp(a, "--", 2) == 0) {
            if (i + 1 >= argc) usage();
            const char *v = argv[++i];
            if (!strcmp(a, "--inflight")) inflight = parse_num(a, v, 1, MAX_INFLIGHT);
            else if (!strcmp(a, "--connections")) conns = parse_num(a, v, 1, 65536);
            else if (!strcmp(a, "--seconds")) seconds = parse_num(a, v, 0.001, 1e6);
            else if (!strcmp(a, "--warmup")) warmup = parse_num(a, v, 0, 1e6);
            else if (!strcmp(a, "--payload")) payload = parse_num(a, v, 0, MAX_FRAME - 64);
            else if (!strcmp(a, "--json")) json = v;
            else if (!strcmp(a, "--metadata")) {
                const char *eq = strchr(v, '=');
                if (!eq) die("--metadata wants KEY=VALUE, got '%s' (no '=')", v);
                if (eq == v) die("--metadata wants KEY=VALUE, got '%s' (empty KEY)", v);
                G.meta = xrealloc(G.meta, (G.nmeta + 1) * sizeof *G.meta);
                G.meta[G.nmeta++] = (meta_t){.key = v, .klen = (size_t)(eq - v), .val = eq + 1, .vlen = strlen(eq + 1)};
            }
            else usage();
        } else if (!host) host = a;
        else if (!port) port = a;
        else usage();
    }
    if (!host || !port || inflight < 1 || conns < 1 || seconds <= 0) usage();
    if (inflight != (uint32_t)inflight || conns != (int)conns || payload != (size_t)payload)
        die("--inflight, --connections and --payload take whole numbers");
    if (G.raw && G.nmeta) die("--metadata cannot be used with --raw: raw frames carry only the payload");
    signal(SIGPIPE, SIG_IGN);

    G.inflight = (uint32_t)inflight;
    G.hist.min = UINT64_MAX;
    if (G.raw) encode_raw_template((size_t)payload);
    else encode_template((size_t)payload);
    int nconn = (int)conns;

    G.epfd = epoll_create1(EPOLL_CLOEXEC);
    if (G.epfd < 0) die("epoll_create1: %s", strerror(errno));
    conn_t *cs = calloc((size_t)nconn, sizeof *cs);
    if (!cs) die("out of memory");
    for (int i = 0; i < nconn; i++) {
        conn_t *c = &cs[i];
        c->index = i;
        c->fd = connect_to(host, port);
        c->rcap = READ_CHUNK;
        c->rbuf = xrealloc(NULL, c->rcap);
        c->sent_ns = calloc(G.inflight, sizeof *c->sent_ns);
        c->busy = calloc(G.inflight, 1);
        c->batch = calloc(G.inflight, sizeof *c->batch);
        if (!c->sent_ns || !c->busy || !c->batch) die("out of memory");
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
        if (epoll_ctl(G.epfd, EPOLL_CTL_ADD, c->fd, &ev) < 0) die("epoll_ctl: %s", strerror(errno));
    }

    uint64_t t0 = now_ns();
    G.measure_start = t0 + (uint64_t)(warmup * 1e9);
    G.measure_end = G.measure_start + (uint64_t)(seconds * 1e9);
    for (int i = 0; i < nconn; i++) {
        for (uint32_t s = 0; s < G.inflight; s++) {
            if (G.raw) queue_raw_request(&cs[i]);
            else queue_request(&cs[i], s);
        }
        conn_flush(&cs[i]);
    }

    enum { MAXEV = 256 };
    struct epoll_event evs[MAXEV];
    uint64_t drain_deadline = 0;
    for (;;) {
        uint64_t now = now_ns();
        uint64_t next;
        if (now < G.measure_start) next = G.measure_start;
        else if (now < G.measure_end) next = G.measure_end;
        else {
            if (!drain_deadline) drain_deadline = G.measure_end + DRAIN_NS;
            if (G.total_inflight == 0 || now >= drain_deadline) break;
            next = drain_deadline;
        }
        int timeout = (int)((next - now + 999999) / 1000000);
        int n = epoll_wait(G.epfd, evs, MAXEV, timeout);
        if (n < 0) {
            if (errno == EINTR) continue;
            die("epoll_wait: %s", strerror(errno));
        }
        for (int i = 0; i < n; i++) {
            conn_t *c = evs[i].data.ptr;
            uint32_t e = evs[i].events;
            if (e & (EPOLLIN | EPOLLHUP | EPOLLERR)) conn_read(c);
            if (e & EPOLLOUT) conn_flush(c);
        }
    }
    uint64_t unanswered = G.total_inflight;
    for (int i = 0; i < nconn; i++) close(cs[i].fd);

    const hist_t *h = &G.hist;
    double qps = (double)G.calls / seconds;
    double us = 1e3;
    double p50 = hist_quantile(h, 0.50) / us, p90 = hist_quantile(h, 0.90) / us;
    double p99 = hist_quantile(h, 0.99) / us, p999 = hist_quantile(h, 0.999) / us;
    double mx = h->max / us, mn = h->total ? h->min / us : 0;
    double mean = h->total ? (double)(h->sum / h->total) / us : 0;

    printf("hearth c-load%s: %s:%s connections=%d inflight=%u payload=%zuB warmup=%gs seconds=%g\n",
           G.raw ? " (raw frames)" : "", host, port, nconn, G.inflight, (size_t)payload, warmup, seconds);
    printf("calls        %llu\n", (unsigned long long)G.calls);
    printf("qps          %.1f\n", qps);
    printf("latency us   p50 %.1f  p90 %.1f  p99 %.1f  p99.9 %.1f  max %.1f  (min %.1f mean %.1f)\n", p50, p90,
           p99, p999, mx, mn, mean);
    printf("errors       %llu\n", (unsigned long long)G.errors);
    printf("unknown_ids  %llu\n", (unsigned long long)G.unknown_ids);
    if (unanswered) printf("unanswered   %llu (after %llu s drain)\n", (unsigned long long)unanswered, DRAIN_NS / 1000000000ull);

    if (json) {
        FILE *f = strcmp(json, "-") ? fopen(json, "w") : stdout;
        if (!f) die("open %s: %s", json, strerror(errno));
        fprintf(f,
                "{\"qps\":%.1f,\"calls\":%llu,\"errors\":%llu,\"unknown_ids\":%llu,\"unanswered\":%llu,"
                "\"seconds\":%g,\"warmup\":%g,\"connections\":%d,\"inflight\":%u,\"payload_bytes\":%zu,"
                "\"p50_us\":%.1f,\"p90_us\":%.1f,\"p99_us\":%.1f,\"p999_us\":%.1f,\"max_us\":%.1f,"
                "\"min_us\":%.1f,\"mean_us\":%.1f}\n",
                qps, (unsigned long long)G.calls, (unsigned long long)G.errors, (unsigned long long)G.unknown_ids,
                (unsigned long long)unanswered, seconds, warmup, nconn, G.inflight, (size_t)payload, p50, p90, p99,
                p999, mx, mn, mean);
        if (f != stdout && fclose(f) != 0) die("write %s: %s", json, strerror(errno));
    }
    if (G.errors || G.unknown_ids || unanswered || G.calls == 0) return 1;
    return 0;
}
