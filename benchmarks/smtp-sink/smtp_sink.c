#define _GNU_SOURCE
/* A fast SMTP sink for the safety benchmark: accepts every message on every connection
 * (epoll, one thread, non-blocking), counts them, and prints the count once a second and
 * on SIGTERM/SIGINT. It speaks just enough SMTP for Hearth's client: EHLO/HELO, MAIL, RCPT,
 * DATA (until CRLF.CRLF), RSET, NOOP, QUIT. Its EHLO offers PIPELINING (RFC 2920), as mail
 * relays do: every complete line read is answered in order.
 *
 *   smtp_sink PORT_FILE     listens on a free loopback port and writes it to PORT_FILE
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_EVENTS 256
#define BUFFER 65536

struct conn {
    int fd;
    int in_data;
    size_t used;
    char buf[BUFFER];
    size_t out_used;
    char out[BUFFER];
};

static volatile sig_atomic_t stop = 0;
static unsigned long long messages = 0;

static void on_signal(int sig) { (void)sig; stop = 1; }

/* Replies are gathered while a read's lines are handled and written together after them, as
 * mail servers answer pipelined commands: one write per reply would leave the second behind
 * the first's ACK (Nagle), which the client delays while it waits for the rest. */
static void reply(struct conn *c, const char *text) {
    size_t len = strlen(text);
    if (c->out_used + len > sizeof c->out) return;
    memcpy(c->out + c->out_used, text, len);
    c->out_used += len;
}

static void flush_replies(struct conn *c) {
    const char *text = c->out;
    size_t left = c->out_used;
    while (left > 0) {
        ssize_t n = write(c->fd, text, left);
        if (n < 0) { if (errno == EINTR) continue; break; }
        text += n; left -= (size_t)n;
    }
    c->out_used = 0;
}

/* Handles complete lines; returns 0 to close the connection. */
static int handle(struct conn *c) {
    size_t start = 0;
    for (size_t i = 0; i + 1 < c->used; i++) {
        if (c->buf[i] != '\r' || c->buf[i + 1] != '\n') continue;
        char *line = c->buf + start;
        size_t len = i - start;
        start = i + 2;
        if (c->in_data) {
            if (len == 1 && line[0] == '.') {
                c->in_data = 0;
                messages++;
                reply(c, "250 OK\r\n");
            }
            continue;
        }
        if (len >= 4 && strncasecmp(line, "EHLO", 4) == 0) reply(c, "250-sink\r\n250 PIPELINING\r\n");
        else if (len >= 4 && strncasecmp(line, "HELO", 4) == 0) reply(c, "250 sink\r\n");
        else if (len >= 4 && strncasecmp(line, "MAIL", 4) == 0) reply(c, "250 OK\r\n");
        else if (len >= 4 && strncasecmp(line, "RCPT", 4) == 0) reply(c, "250 OK\r\n");
        else if (len >= 4 && strncasecmp(line, "DATA", 4) == 0) { c->in_data = 1; reply(c, "354 go on\r\n"); }
        else if (len >= 4 && strncasecmp(line, "QUIT", 4) == 0) { reply(c, "221 bye\r\n"); flush_replies(c); return 0; }
        else reply(c, "250 OK\r\n");
    }
    flush_replies(c);
    memmove(c->buf, c->buf + start, c->used - start);
    c->used -= start;
    if (c->used == BUFFER) c->used = 0; /* an endless line: drop it */
    return 1;
}

int main(int argc, char **argv) {
    if (argc != 2) { fprintf(stderr, "usage: smtp_sink PORT_FILE\n"); return 2; }
    signal(SIGTERM, on_signal);
    signal(SIGINT, on_signal);
    signal(SIGPIPE, SIG_IGN);
    int listener = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    int one = 1;
    setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = 0};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(listener, (struct sockaddr *)&addr, sizeof addr) < 0 || listen(listener, 4096) < 0) { perror("listen"); return 1; }
    socklen_t size = sizeof addr;
    getsockname(listener, (struct sockaddr *)&addr, &size);
    FILE *port = fopen(argv[1], "w");
    fprintf(port, "%d\n", ntohs(addr.sin_port));
    fclose(port);

    int ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
    epoll_ctl(ep, EPOLL_CTL_ADD, listener, &ev);
    struct epoll_event events[MAX_EVENTS];
    time_t last = time(NULL);
    while (!stop) {
        int n = epoll_wait(ep, events, MAX_EVENTS, 200);
        for (int i = 0; i < n; i++) {
            struct conn *c = events[i].data.ptr;
            if (c == NULL) {
                int fd;
                while ((fd = accept4(listener, NULL, NULL, SOCK_NONBLOCK)) >= 0) {
                    struct conn *nc = calloc(1, sizeof *nc);
                    nc->fd = fd;
                    struct epoll_event cev = {.events = EPOLLIN, .data.ptr = nc};
                    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &cev);
                    reply(nc, "220 sink ready\r\n");
                    flush_replies(nc);
                }
                continue;
            }
            ssize_t got = read(c->fd, c->buf + c->used, BUFFER - c->used);
            if (got <= 0 || (c->used += (size_t)got, !handle(c))) {
                close(c->fd);
                free(c);
            }
        }
        time_t now = time(NULL);
        if (now != last) { printf("messages %llu\n", messages); fflush(stdout); last = now; }
    }
    printf("messages %llu\n", messages);
    return 0;
}
