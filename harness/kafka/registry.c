/* registry.c - the schema registry's REST API over plain HTTP/1.0 (see
 * registry.h): one connection per request, closed by the server after its
 * answer, so a body ends where the connection does. */
#include "registry.h"

#include <errno.h>
#include <jansson.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define SD_REGISTRY_TIMEOUT_MS 10000
#define SD_REGISTRY_MAX_BODY (16u << 20)

typedef struct sd_url_s {
    char host[256], port[16], path[512];
} sd_url_t;

static int sd_url_parse(const char *url, sd_url_t *u, char *err, size_t errlen) {
    if (!strncmp(url, "https://", 8)) {
        sd_err_set(err, errlen, SD_ERR_REGISTRY, "registry %s: https is not spoken here; give its plain http address", url);
        return 0;
    }
    if (strncmp(url, "http://", 7)) {
        sd_err_set(err, errlen, SD_ERR_REGISTRY, "registry %s: expected a URL http://HOST:PORT[/PATH]", url);
        return 0;
    }
    const char *h = url + 7, *slash = strchr(h, '/'), *end = slash ? slash : h + strlen(h);
    const char *colon = memchr(h, ':', (size_t)(end - h));
    size_t hl = (size_t)((colon ? colon : end) - h);
    size_t pl = colon ? (size_t)(end - colon - 1) : 2;
    if (!hl || hl >= sizeof(u->host) || pl >= sizeof(u->port) || (slash && strlen(slash) >= sizeof(u->path))) {
        sd_err_set(err, errlen, SD_ERR_REGISTRY, "registry %s: expected a URL http://HOST:PORT[/PATH]", url);
        return 0;
    }
    memcpy(u->host, h, hl);
    u->host[hl] = 0;
    if (colon) memcpy(u->port, colon + 1, pl), u->port[pl] = 0;
    else strcpy(u->port, "80");
    snprintf(u->path, sizeof(u->path), "%s", slash ? slash : "");
    size_t n = strlen(u->path);
    while (n && u->path[n - 1] == '/') u->path[--n] = 0; /* ".../v7/" and ".../v7" alike */
    return 1;
}

/* Wait until fd is ready for events, at most until deadline (mono ms). */
static int sd_http_wait(int fd, short events, int64_t deadline) {
    int64_t left = deadline - sd_util_mono_ms();
    struct pollfd p = {.fd = fd, .events = events};
    return left > 0 && poll(&p, 1, (int)left) == 1;
}

/* One request: method on url's path + rest, with a JSON body or none; the
 * status into *status and the body into out. */
static sd_err_t sd_http_once(const char *url, const char *method, const char *rest, const char *body, int *status, sd_buf_t *out,
                        char *err, size_t errlen) {
    sd_url_t u;
    if (!sd_url_parse(url, &u, err, errlen)) return SD_ERR_REGISTRY;
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai = NULL;
    int g = getaddrinfo(u.host, u.port, &hints, &ai);
    if (g) return sd_err_set(err, errlen, SD_ERR_REGISTRY, "registry %s: %s: %s", url, u.host, gai_strerror(g));
    int64_t deadline = sd_util_mono_ms() + SD_REGISTRY_TIMEOUT_MS;
    int fd = -1, cerr = 0;
    for (struct addrinfo *a = ai; a && fd < 0; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0) continue;
        if (connect(fd, a->ai_addr, a->ai_addrlen) && errno != EINPROGRESS) cerr = errno;
        else if (!sd_http_wait(fd, POLLOUT, deadline)) cerr = ETIMEDOUT;
        else {
            socklen_t l = sizeof(cerr);
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &cerr, &l);
        }
        if (cerr) close(fd), fd = -1;
    }
    freeaddrinfo(ai);
    if (fd < 0) return sd_err_set(err, errlen, SD_ERR_REGISTRY, "registry %s: cannot connect: %s", url, strerror(cerr ? cerr : EINVAL));
    sd_buf_t req;
    sd_buf_init(&req);
    sd_buf_printf(&req, "%s %s%s HTTP/1.0\r\nHost: %s:%s\r\nAccept: application/json\r\n", method, u.path, rest, u.host, u.port);
    if (body) sd_buf_printf(&req, "Content-Type: application/vnd.schemaregistry.v1+json\r\nContent-Length: %zu\r\n", strlen(body));
    sd_buf_puts(&req, "\r\n");
    if (body) sd_buf_puts(&req, body);
    sd_err_t e = SD_OK;
    for (size_t off = 0; off < req.len && !e;) {
        ssize_t w = send(fd, req.data + off, req.len - off, MSG_NOSIGNAL);
        if (w > 0) off += (size_t)w;
        else if (w < 0 && errno != EAGAIN && errno != EINTR)
            e = sd_err_set(err, errlen, SD_ERR_REGISTRY, "registry %s: sending %s: %s", url, method, strerror(errno));
        else if (!sd_http_wait(fd, POLLOUT, deadline))
            e = sd_err_set(err, errlen, SD_ERR_REGISTRY, "registry %s: no room to send for %d s", url, SD_REGISTRY_TIMEOUT_MS / 1000);
    }
    sd_buf_free(&req);
    sd_buf_t resp;
    sd_buf_init(&resp);
    while (!e) {
        if (!sd_http_wait(fd, POLLIN, deadline)) {
            e = sd_err_set(err, errlen, SD_ERR_REGISTRY, "registry %s: no answer to %s %s%s within %d s", url, method, u.path, rest,
                           SD_REGISTRY_TIMEOUT_MS / 1000);
            break;
        }
        sd_buf_reserve(&resp, 4096);
        ssize_t n = recv(fd, resp.data + resp.len, 4096, 0);
        if (n == 0) break;
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
        if (n < 0) e = sd_err_set(err, errlen, SD_ERR_REGISTRY, "registry %s: reading the answer: %s", url, strerror(errno));
        else if ((resp.len += (size_t)n) > SD_REGISTRY_MAX_BODY)
            e = sd_err_set(err, errlen, SD_ERR_REGISTRY, "registry %s: an answer over %u bytes", url, SD_REGISTRY_MAX_BODY);
    }
    close(fd);
    sd_buf_putc(&resp, 0);
    resp.len--;
    const char *hdr_end = e ? NULL : strstr(resp.data, "\r\n\r\n");
    if (!e && (!hdr_end || sscanf(resp.data, "HTTP/%*d.%*d %d", status) != 1))
        e = sd_err_set(err, errlen, SD_ERR_REGISTRY, "registry %s: an answer that is not HTTP", url);
    if (!e) {
        sd_buf_reset(out);
        sd_buf_append(out, hdr_end + 4, resp.len - (size_t)(hdr_end + 4 - resp.data));
    }
    sd_buf_free(&resp);
    return e;
}

/* sd_http_once, asked again after a connection refused or closed without
 * an answer (a registry starting up, or busy starting its threads): 4
 * tries over about 3 s, then the last error. */
static sd_err_t sd_http(const char *url, const char *method, const char *rest, const char *body, int *status, sd_buf_t *out,
                        char *err, size_t errlen) {
    sd_err_t e = SD_OK;
    for (int i = 0; i < 4; i++) {
        if (i) sd_util_sleep_ms(250 << i);
        e = sd_http_once(url, method, rest, body, status, out, err, errlen);
        if (e != SD_ERR_REGISTRY || (!strstr(err, "cannot connect") && !strstr(err, "not HTTP"))) break;
    }
    return e;
}

/* The registry's own words for a failed request: its "message", or the
 * body's start, made printable. */
static sd_err_t sd_registry_refused(const char *url, const char *what, int status, const sd_buf_t *body, char *err, size_t errlen) {
    json_t *o = json_loadb(body->data, body->len, 0, NULL);
    const char *m = o ? json_string_value(json_object_get(o, "message")) : NULL;
    sd_buf_t b;
    sd_buf_init(&b);
    if (m) sd_buf_put_printable(&b, m, strlen(m), 300);
    else sd_buf_put_printable(&b, body->data, body->len, 300);
    sd_err_set(err, errlen, SD_ERR_REGISTRY, "registry %s: %s: HTTP %d: %s", url, what, status, b.data ? b.data : "");
    sd_buf_free(&b);
    json_decref(o);
    return SD_ERR_REGISTRY;
}

/* One call of the API: method on rest with body (or none). 200 gives the
 * answer's JSON in *answer (NULL when it is not JSON); the status named by
 * also (409, 404, or 0: none) is SD_OK too, with *answer NULL and the
 * registry's words in err; any other status is SD_ERR_REGISTRY. */
static sd_err_t sd_registry_call(const char *url, const char *method, const char *rest, const char *body, const char *what, int also,
                                 int *status, json_t **answer, char *err, size_t errlen) {
    sd_buf_t resp;
    sd_buf_init(&resp);
    *answer = NULL;
    sd_err_t e = sd_http(url, method, rest, body, status, &resp, err, errlen);
    if (!e && *status != 200) {
        e = sd_registry_refused(url, what, *status, &resp, err, errlen);
        if (also && *status == also) e = SD_OK;
    } else if (!e) {
        *answer = json_loadb(resp.data, resp.len, 0, NULL);
    }
    sd_buf_free(&resp);
    return e;
}

sd_err_t sd_registry_register(const char *url, const char *subject, sd_schema_type_t type, const char *schema, int *id,
                              int *refused, char *err, size_t errlen) {
    json_t *req = json_pack("{s:s}", "schema", schema), *o = NULL;
    /* AVRO, the default, is left out */
    if (type != SD_SCHEMA_AVRO) json_object_set_new(req, "schemaType", json_string(type == SD_SCHEMA_PROTOBUF ? "PROTOBUF" : "JSON"));
    char *body = json_dumps(req, JSON_COMPACT);
    json_decref(req);
    char *rest = sd_util_fmt("/subjects/%s/versions", subject);
    char *what = sd_util_fmt("registering a schema under %s", subject);
    int status = 0;
    sd_err_t e = sd_registry_call(url, "POST", rest, body, what, 409, &status, &o, err, errlen);
    *refused = !e && status == 409;
    json_t *v = o ? json_object_get(o, "id") : NULL;
    if (!e && !*refused && (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > INT32_MAX))
        e = sd_err_set(err, errlen, SD_ERR_REGISTRY, "registry %s: %s: an answer without an id", url, what);
    else if (!e && !*refused) *id = (int)json_integer_value(v);
    json_decref(o);
    free(body), free(rest), free(what);
    return e;
}

sd_err_t sd_registry_compatibility(const char *url, const char *subject, const char *level, char *err, size_t errlen) {
    char *rest = sd_util_fmt("/config/%s", subject), *what = sd_util_fmt("setting %s's compatibility to %s", subject, level);
    char *body = sd_util_fmt("{\"compatibility\":\"%s\"}", level);
    json_t *o = NULL;
    int status = 0;
    sd_err_t e = sd_registry_call(url, "PUT", rest, body, what, 0, &status, &o, err, errlen);
    json_decref(o);
    free(rest), free(what), free(body);
    return e;
}

sd_err_t sd_registry_schema(const char *url, int id, sd_buf_t *out, int *found, char *err, size_t errlen) {
    char rest[64], what[64];
    snprintf(rest, sizeof(rest), "/schemas/ids/%d", id);
    snprintf(what, sizeof(what), "schema %d", id);
    json_t *o = NULL;
    int status = 0;
    sd_err_t e = sd_registry_call(url, "GET", rest, NULL, what, 404, &status, &o, err, errlen);
    *found = !e && status == 200;
    const char *text = o ? json_string_value(json_object_get(o, "schema")) : NULL;
    if (!e && *found && !text) e = sd_err_set(err, errlen, SD_ERR_REGISTRY, "registry %s: %s: an answer without a schema", url, what);
    else if (text) sd_buf_reset(out), sd_buf_puts(out, text);
    json_decref(o);
    return e;
}
