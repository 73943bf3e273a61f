/*
 * Hearth interop test client, written against protobuf-c.
 *
 * Usage: interop_client HOST PORT
 *
 * Talks to a running `hearth serve echo` over TCP using the Hearth wire protocol
 * (4-byte big-endian length + one serialized hearth.rpc.v1.Frame), pipelines three
 * Echo calls and a PING in a single write, and checks what comes back:
 * out-of-order completion, echoed text and binary payloads, error status, PONG.
 *
 * Prints one `ok - ...` / `not ok - ...` line per check, then `N passed, M failed`.
 * Exits 0 only if every check passed. Built by build.sh next to this file.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/types.h>
#include <unistd.h>

#include "hearth/echo/v1/echo.pb-c.h"
#include "hearth/rpc/v1/frame.pb-c.h"

#define MAX_FRAME_BYTES (4u * 1024u * 1024u)
#define RECV_TIMEOUT_SECONDS 60
#define ECHO_METHOD "hearth.echo.v1.Echo/Echo"

#define CALL_SLOW 1u
#define CALL_FAST 2u
#define CALL_FAIL 3u
#define PING_ID 99u

typedef Hearth__Rpc__V1__Frame Frame;
typedef Hearth__Echo__V1__EchoRequest EchoRequest;
typedef Hearth__Echo__V1__EchoResponse EchoResponse;

static int passed = 0;
static int failed = 0;

static void check(bool condition, const char *format, ...) {
    va_list args;
    va_start(args, format);
    fputs(condition ? "ok - " : "not ok - ", stdout);
    vprintf(format, args);
    fputc('\n', stdout);
    va_end(args);
    fflush(stdout);
    if (condition) {
        passed++;
    } else {
        failed++;
    }
}

static int finish(void) {
    printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 && passed > 0 ? 0 : 1;
}

/* ---- growable byte buffer ---- */

typedef struct {
    uint8_t *data;
    size_t len;
    size_t cap;
} Buffer;

static bool buffer_reserve(Buffer *b, size_t extra) {
    if (b->cap - b->len >= extra) {
        return true;
    }
    size_t cap = b->cap ? b->cap : 4096;
    while (cap - b->len < extra) {
        cap *= 2;
    }
    uint8_t *data = realloc(b->data, cap);
    if (data == NULL) {
        return false;
    }
    b->data = data;
    b->cap = cap;
    return true;
}

/* Appends one length-prefixed frame. */
static bool append_frame(Buffer *b, const Frame *frame) {
    size_t size = hearth__rpc__v1__frame__get_packed_size(frame);
    if (size > MAX_FRAME_BYTES || !buffer_reserve(b, 4 + size)) {
        return false;
    }
    uint8_t *p = b->data + b->len;
    p[0] = (uint8_t)(size >> 24);
    p[1] = (uint8_t)(size >> 16);
    p[2] = (uint8_t)(size >> 8);
    p[3] = (uint8_t)size;
    size_t written = hearth__rpc__v1__frame__pack(frame, p + 4);
    if (written != size) {
        return false;
    }
    b->len += 4 + size;
    return true;
}

/* ---- networking ---- */

static int connect_to(const char *host, const char *port) {
    struct addrinfo hints;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    struct addrinfo *results = NULL;
    int rc = getaddrinfo(host, port, &hints, &results);
    if (rc != 0) {
        fprintf(stderr, "interop_client: cannot resolve %s:%s: %s\n", host, port, gai_strerror(rc));
        return -1;
    }
    int fd = -1;
    for (struct addrinfo *ai = results; ai != NULL; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
        if (fd < 0) {
            continue;
        }
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
            break;
        }
        close(fd);
        fd = -1;
    }
    if (fd < 0) {
        fprintf(stderr, "interop_client: cannot connect to %s:%s: %s\n", host, port, strerror(errno));
    }
    freeaddrinfo(results);
    if (fd >= 0) {
        struct timeval timeout = {.tv_sec = RECV_TIMEOUT_SECONDS, .tv_usec = 0};
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    return fd;
}

/* One write(2) of the whole buffer; loops only if the kernel takes it partially. */
static bool write_all(int fd, const uint8_t *data, size_t len, int *write_calls) {
    size_t off = 0;
    while (off < len) {
        ssize_t n = send(fd, data + off, len - off, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            fprintf(stderr, "interop_client: send: %s\n", strerror(errno));
            return false;
        }
        (*write_calls)++;
        off += (size_t)n;
    }
    return true;
}

/* ---- test ---- */

static const uint8_t SLOW_PAYLOAD[] = {0x00, 0xff, 's', 0x01, 0x80, 0x00};
static const uint8_t FAST_PAYLOAD[] = {0xff, 0x00, 'f', 0x7f, 0xfe, 0x00, 0xff};
static const uint8_t FAIL_PAYLOAD[] = {0x00, 0xff};

static bool add_echo_request(Buffer *out, uint64_t call_id, const char *text, const uint8_t *payload,
                             size_t payload_len, uint32_t sleep_ms, uint32_t fail_with_code,
                             bool with_metadata) {
    EchoRequest request = HEARTH__ECHO__V1__ECHO_REQUEST__INIT;
    request.text = (char *)text;
    request.payload.data = (uint8_t *)payload;
    request.payload.len = payload_len;
    request.sleep_ms = sleep_ms;
    request.fail_with_code = fail_with_code;

    size_t size = hearth__echo__v1__echo_request__get_packed_size(&request);
    uint8_t *packed = malloc(size ? size : 1);
    if (packed == NULL) {
        return false;
    }
    hearth__echo__v1__echo_request__pack(&request, packed);

    Hearth__Rpc__V1__Frame__MetadataEntry entry = HEARTH__RPC__V1__FRAME__METADATA_ENTRY__INIT;
    entry.key = "x-request-id";
    entry.value = "interop-1";
    Hearth__Rpc__V1__Frame__MetadataEntry *entries[] = {&entry};

    Frame frame = HEARTH__RPC__V1__FRAME__INIT;
    frame.call_id = call_id;
    frame.kind = HEARTH__RPC__V1__FRAME__KIND__REQUEST;
    frame.method = ECHO_METHOD;
    frame.timeout_ms = 30000; // generous: the CI machine can stall for seconds
    frame.payload.data = packed;
    frame.payload.len = size;
    if (with_metadata) {
        frame.n_metadata = 1;
        frame.metadata = entries;
    }
    bool ok = append_frame(out, &frame);
    free(packed);
    return ok;
}

typedef struct {
    Frame *frame;  /* owned; NULL until it arrives */
    int order;     /* arrival index (0-based) */
} Arrival;

static bool payload_equals(ProtobufCBinaryData got, const uint8_t *want, size_t want_len) {
    return got.len == want_len && (want_len == 0 || memcmp(got.data, want, want_len) == 0);
}

static void check_echo(const Arrival *a, const char *name, const char *text, const uint8_t *payload,
                       size_t payload_len) {
    if (a->frame == NULL) {
        check(false, "call %s: no response", name);
        return;
    }
    const Frame *frame = a->frame;
    bool success = frame->status == NULL || frame->status->code == HEARTH__RPC__V1__CODE__OK;
    check(success, "call %s: succeeded (status code %d%s%s)", name,
          frame->status ? (int)frame->status->code : 0,
          frame->status && frame->status->message[0] ? ": " : "",
          frame->status ? frame->status->message : "");
    EchoResponse *response =
        hearth__echo__v1__echo_response__unpack(NULL, frame->payload.len, frame->payload.data);
    check(response != NULL, "call %s: response payload decodes as EchoResponse", name);
    if (response == NULL) {
        return;
    }
    check(strcmp(response->text, text) == 0, "call %s: text echoed (got \"%s\")", name, response->text);
    check(payload_equals(response->payload, payload, payload_len),
          "call %s: binary payload with 0x00/0xff echoed (%zu bytes, want %zu)", name,
          response->payload.len, payload_len);
    hearth__echo__v1__echo_response__free_unpacked(response, NULL);
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s HOST PORT\n", argv[0]);
        return 2;
    }

    int fd = connect_to(argv[1], argv[2]);
    check(fd >= 0, "connected to %s:%s", argv[1], argv[2]);
    if (fd < 0) {
        return finish();
    }

    /* Three requests and a ping, pipelined in one buffer and one write. */
    Buffer out = {0};
    bool built = add_echo_request(&out, CALL_SLOW, "slow", SLOW_PAYLOAD, sizeof SLOW_PAYLOAD, 300, 0, true) &&
                 add_echo_request(&out, CALL_FAST, "fast", FAST_PAYLOAD, sizeof FAST_PAYLOAD, 0, 0, false) &&
                 add_echo_request(&out, CALL_FAIL, "fail", FAIL_PAYLOAD, sizeof FAIL_PAYLOAD, 0,
                                  HEARTH__RPC__V1__CODE__NOT_FOUND, false);
    if (built) {
        Frame ping = HEARTH__RPC__V1__FRAME__INIT;
        ping.call_id = PING_ID;
        ping.kind = HEARTH__RPC__V1__FRAME__KIND__PING;
        built = append_frame(&out, &ping);
    }
    if (!built) {
        fprintf(stderr, "interop_client: cannot encode frames\n");
        free(out.data);
        close(fd);
        check(false, "encoded 3 requests and a ping");
        return finish();
    }
    int write_calls = 0;
    bool sent = write_all(fd, out.data, out.len, &write_calls);
    check(sent, "sent 3 requests and a ping pipelined in one write (%zu bytes, %d send call%s)", out.len,
          write_calls, write_calls == 1 ? "" : "s");
    free(out.data);
    if (!sent) {
        close(fd);
        return finish();
    }

    /* Read frames until we have 3 responses and the pong. */
    Arrival slow = {NULL, -1}, fast = {NULL, -1}, fail = {NULL, -1}, pong = {NULL, -1};
    int arrivals = 0;
    int unexpected = 0;
    bool protocol_error = false;
    const char *stop_reason = NULL;
    Buffer in = {0};
    size_t consumed = 0;

    while (slow.frame == NULL || fast.frame == NULL || fail.frame == NULL || pong.frame == NULL) {
        /* Decode every complete frame already buffered. */
        bool progressed = true;
        while (progressed && !protocol_error) {
            progressed = false;
            size_t avail = in.len - consumed;
            if (avail < 4) {
                break;
            }
            const uint8_t *p = in.data + consumed;
            uint32_t size = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
            if (size > MAX_FRAME_BYTES) {
                fprintf(stderr, "interop_client: frame of %u bytes exceeds the 4 MiB limit\n", size);
                protocol_error = true;
                stop_reason = "oversized frame";
                break;
            }
            if (avail - 4 < size) {
                break;
            }
            Frame *frame = hearth__rpc__v1__frame__unpack(NULL, size, p + 4);
            consumed += 4 + (size_t)size;
            progressed = true;
            if (frame == NULL) {
                fprintf(stderr, "interop_client: cannot decode a %u-byte frame\n", size);
                protocol_error = true;
                stop_reason = "undecodable frame";
                break;
            }
            Arrival *slot = NULL;
            if (frame->kind == HEARTH__RPC__V1__FRAME__KIND__RESPONSE) {
                if (frame->call_id == CALL_SLOW) {
                    slot = &slow;
                } else if (frame->call_id == CALL_FAST) {
                    slot = &fast;
                } else if (frame->call_id == CALL_FAIL) {
                    slot = &fail;
                }
            } else if (frame->kind == HEARTH__RPC__V1__FRAME__KIND__PONG) {
                slot = &pong;
            } else if (frame->kind == HEARTH__RPC__V1__FRAME__KIND__GOAWAY) {
                fprintf(stderr, "interop_client: GOAWAY from server: %s\n",
                        frame->status ? frame->status->message : "(no status)");
                protocol_error = true;
                stop_reason = "server sent GOAWAY";
                hearth__rpc__v1__frame__free_unpacked(frame, NULL);
                break;
            }
            if (slot == NULL || slot->frame != NULL) {
                fprintf(stderr, "interop_client: unexpected frame: kind %d call_id %llu%s\n", (int)frame->kind,
                        (unsigned long long)frame->call_id, slot ? " (duplicate)" : "");
                unexpected++;
                hearth__rpc__v1__frame__free_unpacked(frame, NULL);
                continue;
            }
            slot->frame = frame;
            slot->order = arrivals++;
        }
        if (protocol_error) {
            break;
        }
        if (slow.frame != NULL && fast.frame != NULL && fail.frame != NULL && pong.frame != NULL) {
            break;
        }

        /* Compact, then read more. */
        if (consumed > 0) {
            memmove(in.data, in.data + consumed, in.len - consumed);
            in.len -= consumed;
            consumed = 0;
        }
        if (!buffer_reserve(&in, 65536)) {
            stop_reason = "out of memory";
            break;
        }
        ssize_t n = recv(fd, in.data + in.len, in.cap - in.len, 0);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            stop_reason = (errno == EAGAIN || errno == EWOULDBLOCK) ? "timed out waiting for frames"
                                                                    : strerror(errno);
            break;
        }
        if (n == 0) {
            stop_reason = in.len > 0 ? "connection closed mid-frame" : "connection closed by server";
            break;
        }
        in.len += (size_t)n;
    }
    free(in.data);
    close(fd);

    bool all = slow.frame && fast.frame && fail.frame && pong.frame;
    check(all, "received 3 responses and the pong%s%s", stop_reason ? ": " : "", stop_reason ? stop_reason : "");
    check(unexpected == 0, "no unexpected or duplicate frames (%d)", unexpected);

    check(fast.frame != NULL && slow.frame != NULL && fast.order < slow.order,
          "response for call 2 (fast) arrived before call 1 (slow) (arrival order: fast=%d slow=%d)", fast.order,
          slow.order);

    check_echo(&slow, "1 (slow)", "slow", SLOW_PAYLOAD, sizeof SLOW_PAYLOAD);
    check_echo(&fast, "2 (fast)", "fast", FAST_PAYLOAD, sizeof FAST_PAYLOAD);

    if (fail.frame == NULL) {
        check(false, "call 3 (fail): no response");
    } else {
        const Hearth__Rpc__V1__Status *status = fail.frame->status;
        check(status != NULL && status->code == HEARTH__RPC__V1__CODE__NOT_FOUND,
              "call 3 (fail): status code NOT_FOUND (5) (got %d)", status ? (int)status->code : 0);
        check(status != NULL && status->message != NULL && status->message[0] != '\0',
              "call 3 (fail): status has a message (\"%s\")", status && status->message ? status->message : "");
    }

    check(pong.frame != NULL && pong.frame->call_id == PING_ID, "pong has call_id 99 (got %llu)",
          pong.frame ? (unsigned long long)pong.frame->call_id : 0ULL);

    Arrival *all_arrivals[] = {&slow, &fast, &fail, &pong};
    for (size_t i = 0; i < sizeof all_arrivals / sizeof all_arrivals[0]; i++) {
        if (all_arrivals[i]->frame != NULL) {
            hearth__rpc__v1__frame__free_unpacked(all_arrivals[i]->frame, NULL);
        }
    }
    return finish();
}
