/* registry.c - the schema registry's REST API over libcurl (see
 * registry.h): one easy handle per registry, so its connection is kept
 * between calls; HTTP/1.1 with chunked answers, HTTPS with verification
 * always on, basic or bearer credentials, bounded redirects, timeouts and
 * a cap on the answer's size. What an answer means is read by
 * sd_registry_answer, apart from the transfer (the fuzz target's way in). */
#include "registry.h"

#include <curl/curl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SD_REGISTRY_CONNECT_MS 5000
#define SD_REGISTRY_TIMEOUT_MS 10000
#define SD_REGISTRY_MAX_BODY (16u << 20)
#define SD_REGISTRY_MAX_REDIRECTS 5
#define SD_REGISTRY_MAX_SECRET 65536

typedef enum { SD_AUTH_NONE = 0, SD_AUTH_BASIC, SD_AUTH_BEARER } sd_auth_kind_t;

struct sd_registry_s {
    CURL *curl;
    char *url;  /* without a trailing '/' */
    char *ca, *cert, *key;
    sd_auth_kind_t auth;
    char *user, *secret; /* basic: KEY and SECRET; bearer: the token in secret */
    char *basic64;       /* basic: base64 of KEY:SECRET, as the header carries it (blanked in messages too) */
    int64_t connect_ms, timeout_ms;
    size_t max_answer;
    int tries;    /* 4, or 1 with opts->once */
    int status;   /* the last answer's HTTP status, 0: none */
    int over;     /* the answer being read passed max_answer */
    sd_buf_t body;
    char curl_err[CURL_ERROR_SIZE];
};

static pthread_once_t sd_registry_once = PTHREAD_ONCE_INIT;
static void sd_registry_global(void) { curl_global_init(CURL_GLOBAL_DEFAULT); }

/* ---- checking what a drill or a flag gives ---- */

/* auth=KIND:FROM:WHERE split; 0 with err set when it is not one. */
static int sd_auth_parse(const char *spec, sd_auth_kind_t *kind, int *from_file, const char **where, char *err, size_t errlen) {
    const char *p = spec;
    if (!strncmp(p, "basic:", 6)) *kind = SD_AUTH_BASIC, p += 6;
    else if (!strncmp(p, "bearer:", 7)) *kind = SD_AUTH_BEARER, p += 7;
    else *kind = SD_AUTH_NONE;
    if (*kind != SD_AUTH_NONE && !strncmp(p, "env:", 4)) *from_file = 0, p += 4;
    else if (*kind != SD_AUTH_NONE && !strncmp(p, "file:", 5)) *from_file = 1, p += 5;
    else p = NULL;
    if (!p || !*p) {
        /* what was given is not repeated: it may be the secret itself */
        sd_err_set(err, errlen, SD_ERR_REGISTRY, "registry auth: expected basic:env:NAME, basic:file:PATH, bearer:env:NAME or "
                   "bearer:file:PATH (the secret itself comes from the environment or a file, never the drill), found %s",
                   p && !*p ? "no NAME or PATH" : "another form");
        return 0;
    }
    *where = p;
    return 1;
}

sd_err_t sd_registry_auth_check(const char *spec, char *err, size_t errlen) {
    sd_auth_kind_t k;
    int f;
    const char *w;
    return sd_auth_parse(spec, &k, &f, &w, err, errlen) ? SD_OK : SD_ERR_REGISTRY;
}

sd_err_t sd_registry_url_check(const char *url, char *err, size_t errlen) {
    size_t skip = !strncmp(url, "http://", 7) ? 7 : !strncmp(url, "https://", 8) ? 8 : 0;
    const char *host = url + skip;
    size_t alen = strcspn(host, "/?#");
    if (skip && memchr(host, '@', alen))
        return sd_err_set(err, errlen, SD_ERR_REGISTRY, "registry URL %.*s...: expected no user:password@ in it (credentials come "
                          "from auth=basic:env:NAME and the like, never the URL)", (int)skip, url);
    if (!skip || !alen || host[0] == ':')
        return sd_err_set(err, errlen, SD_ERR_REGISTRY, "registry %s: expected a URL http[s]://HOST[:PORT][/PATH]", url);
    return SD_OK;
}

/* ---- the credentials ---- */

/* The secret auth= names, read into reg; the error names where it was
 * looked for, never what was found. */
static sd_err_t sd_registry_secret(sd_registry_t *reg, const char *spec, char *err, size_t errlen) {
    const char *where;
    int from_file;
    if (!sd_auth_parse(spec, &reg->auth, &from_file, &where, err, errlen)) return SD_ERR_REGISTRY;
    char *text = NULL;
    if (!from_file) {
        const char *v = getenv(where);
        if (!v || !*v)
            return sd_err_set(err, errlen, SD_ERR_REGISTRY, "registry %s: auth=%s: the environment variable %s is %s", reg->url, spec,
                              where, v ? "empty" : "not set");
        text = sd_util_strdup(v);
    } else {
        size_t n;
        char why[256];
        if (sd_util_read_file(where, &text, &n, why, sizeof(why)))
            return sd_err_set(err, errlen, SD_ERR_REGISTRY, "registry %s: auth=%s: %s", reg->url, spec, why);
        if (n > SD_REGISTRY_MAX_SECRET || memchr(text, 0, n)) {
            free(text);
            return sd_err_set(err, errlen, SD_ERR_REGISTRY, "registry %s: auth=%s: expected a line of text, found a file of %zu bytes",
                              reg->url, spec, n);
        }
        text[strcspn(text, "\r\n")] = 0; /* its first line */
    }
    size_t n = strlen(text);
    while (n && (text[n - 1] == ' ' || text[n - 1] == '\t')) text[--n] = 0;
    char *colon = strchr(text, ':');
    if (!n || (reg->auth == SD_AUTH_BASIC && (!colon || colon == text))) {
        free(text);
        return sd_err_set(err, errlen, SD_ERR_REGISTRY, "registry %s: auth=%s: expected %s there, found %s", reg->url, spec,
                          reg->auth == SD_AUTH_BASIC ? "KEY:SECRET" : "a token", n ? "no KEY: before the secret" : "nothing");
    }
    if (reg->auth == SD_AUTH_BASIC) {
        reg->basic64 = sd_util_base64(text, strlen(text));
        *colon = 0;
        reg->user = sd_util_strdup(text);
        reg->secret = sd_util_strdup(colon + 1);
        explicit_bzero(text, n);
    } else {
        reg->secret = text, text = NULL;
    }
    free(text);
    return SD_OK;
}

/* Each echo of a secret in err (a registry repeating a header) becomes ***. */
static void sd_registry_blank(const sd_registry_t *reg, char *err) {
    const char *secrets[] = {reg->secret, reg->basic64};
    for (int i = 0; err && i < 2; i++) {
        size_t n = secrets[i] ? strlen(secrets[i]) : 0;
        for (char *at; n && (at = strstr(err, secrets[i]));) {
            memcpy(at, "***", 3);
            memmove(at + 3, at + n, strlen(at + n) + 1);
        }
    }
}

/* ---- the handle ---- */

static size_t sd_registry_write(char *p, size_t size, size_t n, void *arg) {
    sd_registry_t *reg = arg;
    size_t len = size * n;
    if (reg->body.len + len > reg->max_answer) {
        reg->over = 1;
        return 0;
    }
    sd_buf_append(&reg->body, p, len);
    return len;
}

sd_err_t sd_registry_open(const char *url, const sd_registry_opts_t *opts, sd_registry_t **out, char *err, size_t errlen) {
    static const sd_registry_opts_t none = {0};
    const sd_registry_opts_t *o = opts ? opts : &none;
    *out = NULL;
    sd_err_t e = sd_registry_url_check(url, err, errlen);
    if (e) return e;
    if (!o->cert != !o->key)
        return sd_err_set(err, errlen, SD_ERR_REGISTRY, "registry %s: expected a client certificate and its key together (mutual TLS), "
                          "found only the %s", url, o->cert ? "certificate" : "key");
    pthread_once(&sd_registry_once, sd_registry_global);
    sd_registry_t *reg = sd_util_xcalloc(1, sizeof(*reg));
    reg->url = sd_util_strdup(url);
    size_t n = strlen(reg->url);
    while (n && reg->url[n - 1] == '/') reg->url[--n] = 0; /* ".../v7/" and ".../v7" alike */
    reg->ca = o->ca ? sd_util_strdup(o->ca) : NULL;
    reg->cert = o->cert ? sd_util_strdup(o->cert) : NULL;
    reg->key = o->key ? sd_util_strdup(o->key) : NULL;
    reg->connect_ms = o->connect_ms > 0 ? o->connect_ms : sd_util_scaled_ms(SD_REGISTRY_CONNECT_MS);
    reg->timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : sd_util_scaled_ms(SD_REGISTRY_TIMEOUT_MS);
    reg->max_answer = o->max_answer ? o->max_answer : SD_REGISTRY_MAX_BODY;
    reg->tries = o->once ? 1 : 4;
    sd_buf_init(&reg->body);
    if (o->auth && (e = sd_registry_secret(reg, o->auth, err, errlen))) {
        sd_registry_close(reg);
        return e;
    }
    if (!(reg->curl = curl_easy_init())) {
        sd_registry_close(reg);
        return sd_err_set(err, errlen, SD_ERR_REGISTRY, "registry %s: libcurl: cannot make a handle", url);
    }
    CURL *c = reg->curl;
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(c, CURLOPT_MAXREDIRS, (long)SD_REGISTRY_MAX_REDIRECTS);
    curl_easy_setopt(c, CURLOPT_POSTREDIR, (long)CURL_REDIR_POST_ALL); /* a POST stays a POST after a 301 or 302 */
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)reg->connect_ms);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)reg->timeout_ms);
    curl_easy_setopt(c, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)reg->max_answer);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 2L);
    if (reg->ca) curl_easy_setopt(c, CURLOPT_CAINFO, reg->ca);
    if (reg->cert) curl_easy_setopt(c, CURLOPT_SSLCERT, reg->cert), curl_easy_setopt(c, CURLOPT_SSLKEY, reg->key);
    if (reg->auth == SD_AUTH_BASIC) {
        curl_easy_setopt(c, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
        curl_easy_setopt(c, CURLOPT_USERNAME, reg->user);
        curl_easy_setopt(c, CURLOPT_PASSWORD, reg->secret);
    } else if (reg->auth == SD_AUTH_BEARER) {
        curl_easy_setopt(c, CURLOPT_HTTPAUTH, (long)CURLAUTH_BEARER);
        curl_easy_setopt(c, CURLOPT_XOAUTH2_BEARER, reg->secret);
    }
    curl_easy_setopt(c, CURLOPT_USERAGENT, "streamdrill");
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sd_registry_write);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, reg);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, reg->curl_err);
    *out = reg;
    return SD_OK;
}

static void sd_free_secret(char *s) {
    if (s) explicit_bzero(s, strlen(s));
    free(s);
}

void sd_registry_close(sd_registry_t *reg) {
    if (!reg) return;
    if (reg->curl) curl_easy_cleanup(reg->curl);
    sd_free_secret(reg->user), sd_free_secret(reg->secret), sd_free_secret(reg->basic64);
    free(reg->url), free(reg->ca), free(reg->cert), free(reg->key);
    sd_buf_free(&reg->body);
    free(reg);
}

int sd_registry_last_status(const sd_registry_t *reg) { return reg->status; }

/* ---- one request ---- */

/* Why a transfer ended without an answer, as a reader can act on it. */
static void sd_registry_why(const sd_registry_t *reg, CURLcode rc, char *why, size_t whylen) {
    const char *detail = reg->curl_err[0] ? reg->curl_err : curl_easy_strerror(rc);
    switch (rc) {
    case CURLE_OPERATION_TIMEDOUT:
        snprintf(why, whylen, "timed out (connect %lld ms, whole request %lld ms): %s", (long long)reg->connect_ms,
                 (long long)reg->timeout_ms, detail);
        break;
    case CURLE_PEER_FAILED_VERIFICATION:
        if (reg->ca) snprintf(why, whylen, "its TLS certificate is not trusted by the CA file ca=%s: %s", reg->ca, detail);
        else snprintf(why, whylen, "its TLS certificate is not trusted by the system's CAs (ca=PATH names another): %s", detail);
        break;
    case CURLE_SSL_CACERT_BADFILE:
        snprintf(why, whylen, "the CA file ca=%s cannot be read: %s", reg->ca ? reg->ca : "(the system's)", detail);
        break;
    case CURLE_SSL_CERTPROBLEM:
        snprintf(why, whylen, "the client certificate cert=%s key=%s cannot be used: %s", reg->cert ? reg->cert : "",
                 reg->key ? reg->key : "", detail);
        break;
    case CURLE_TOO_MANY_REDIRECTS:
        snprintf(why, whylen, "more than %d redirects: %s", SD_REGISTRY_MAX_REDIRECTS, detail);
        break;
    case CURLE_FILESIZE_EXCEEDED:
        snprintf(why, whylen, "an answer over %zu bytes", reg->max_answer);
        break;
    case CURLE_WRITE_ERROR:
        if (reg->over) {
            snprintf(why, whylen, "an answer over %zu bytes", reg->max_answer);
            break;
        }
        /* fall through */
    default:
        snprintf(why, whylen, "%s: %s%s", rc == CURLE_COULDNT_CONNECT ? "cannot connect" : curl_easy_strerror(rc), detail,
                 !reg->cert && strstr(detail, "certificate required") ? " (the registry wants a client certificate: cert= and key=)" : "");
    }
}

/* One request: method on the registry's URL + rest, with a JSON body or
 * none; the status into reg->status (0: none) and the body into
 * reg->body. A connection refused or closed without an answer (a
 * registry starting up) is asked again: 4 tries over about 3 s (one
 * with opts->once). */
static sd_err_t sd_registry_http(sd_registry_t *reg, const char *method, const char *rest, const char *body, char *err, size_t errlen) {
    char *full = sd_util_fmt("%s%s", reg->url, rest);
    struct curl_slist *h = curl_slist_append(NULL, "Accept: application/vnd.schemaregistry.v1+json, application/json");
    if (body) h = curl_slist_append(h, "Content-Type: application/vnd.schemaregistry.v1+json");
    CURL *c = reg->curl;
    curl_easy_setopt(c, CURLOPT_URL, full);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    if (body) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body));
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, strcmp(method, "POST") ? method : NULL);
    } else {
        curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, strcmp(method, "GET") ? method : NULL);
    }
    CURLcode rc = CURLE_OK;
    for (int i = 0; i < reg->tries; i++) {
        if (i) sd_util_sleep_ms(250 << i);
        sd_buf_reset(&reg->body);
        reg->over = 0, reg->status = 0, reg->curl_err[0] = 0;
        rc = curl_easy_perform(c);
        if (rc != CURLE_COULDNT_CONNECT && rc != CURLE_GOT_NOTHING && rc != CURLE_RECV_ERROR && rc != CURLE_SEND_ERROR) break;
    }
    long status = 0;
    if (rc == CURLE_OK) curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    reg->status = (int)status;
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, NULL);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, NULL);
    curl_slist_free_all(h);
    sd_err_t e = SD_OK;
    if (rc != CURLE_OK) {
        char why[CURL_ERROR_SIZE + 512];
        sd_registry_why(reg, rc, why, sizeof(why));
        e = sd_err_set(err, errlen, SD_ERR_REGISTRY, "registry %s: %s (%s %s)", reg->url, why, method, rest);
        sd_registry_blank(reg, err);
    }
    free(full);
    return e;
}

/* ---- what an answer means ---- */

/* A word on a status that is about the request's credentials. */
static const char *sd_registry_status_hint(int status) {
    switch (status) {
    case 401: return " (unauthorized: the registry wants credentials, or refused those of auth=)";
    case 403: return " (forbidden: the credentials of auth= may not do this)";
    case 407: return " (a proxy wants credentials)";
    default: return "";
    }
}

sd_err_t sd_registry_answer(int status, const char *body, size_t n, sd_registry_want_t want, int also, int *id, sd_buf_t *text,
                            char *why, size_t whylen) {
    json_t *o = n ? json_loadb(body, n, 0, NULL) : NULL;
    sd_err_t e = SD_OK;
    if (why && whylen) why[0] = 0;
    if (status != 200) {
        const char *m = json_is_object(o) ? json_string_value(json_object_get(o, "message")) : NULL;
        sd_buf_t b;
        sd_buf_init(&b);
        if (m) sd_buf_put_printable(&b, m, strlen(m), 300);
        else sd_buf_put_printable(&b, body, n, 300);
        snprintf(why, whylen, "HTTP %d%s: %s", status, sd_registry_status_hint(status), b.data ? b.data : "");
        sd_buf_free(&b);
        e = also && status == also ? SD_OK : SD_ERR_REGISTRY;
    } else if (want == SD_REGISTRY_WANT_ID) {
        json_t *v = json_is_object(o) ? json_object_get(o, "id") : NULL;
        if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > INT32_MAX)
            e = sd_err_set(why, whylen, SD_ERR_REGISTRY, "an answer without an id");
        else *id = (int)json_integer_value(v);
    } else if (want == SD_REGISTRY_WANT_SCHEMA) {
        const char *s = json_is_object(o) ? json_string_value(json_object_get(o, "schema")) : NULL;
        if (!s) e = sd_err_set(why, whylen, SD_ERR_REGISTRY, "an answer without a schema");
        else sd_buf_reset(text), sd_buf_puts(text, s);
    }
    json_decref(o);
    return e;
}

/* One call of the API (method on rest, with body or none) read by
 * sd_registry_answer; its error reads "registry URL: what: why". */
static sd_err_t sd_registry_call(sd_registry_t *reg, const char *method, const char *rest, const char *body, const char *what,
                                 sd_registry_want_t want, int also, int *id, sd_buf_t *text, char *err, size_t errlen) {
    sd_err_t e = sd_registry_http(reg, method, rest, body, err, errlen);
    if (e) return e;
    char why[512];
    e = sd_registry_answer(reg->status, reg->body.data, reg->body.len, want, also, id, text, why, sizeof(why));
    if (e || reg->status != 200) {
        sd_err_set(err, errlen, SD_ERR_REGISTRY, "registry %s: %s: %s", reg->url, what, why);
        sd_registry_blank(reg, err);
    }
    return e;
}

/* A subject as one path segment: '/', spaces and the rest %-escaped. */
static char *sd_registry_escape(sd_registry_t *reg, const char *subject) {
    char *esc = curl_easy_escape(reg->curl, subject, 0);
    char *s = sd_util_strdup(esc ? esc : "");
    curl_free(esc);
    return s;
}

sd_err_t sd_registry_register(sd_registry_t *reg, const char *subject, sd_schema_type_t type, const char *schema, int *id,
                              int *refused, char *err, size_t errlen) {
    json_t *req = json_pack("{s:s}", "schema", schema);
    /* AVRO, the default, is left out */
    if (type != SD_SCHEMA_AVRO) json_object_set_new(req, "schemaType", json_string(type == SD_SCHEMA_PROTOBUF ? "PROTOBUF" : "JSON"));
    char *body = json_dumps(req, JSON_COMPACT);
    json_decref(req);
    char *esc = sd_registry_escape(reg, subject);
    char *rest = sd_util_fmt("/subjects/%s/versions", esc);
    char *what = sd_util_fmt("registering a schema under %s", subject);
    sd_err_t e = sd_registry_call(reg, "POST", rest, body, what, SD_REGISTRY_WANT_ID, 409, id, NULL, err, errlen);
    *refused = !e && reg->status == 409;
    free(body), free(esc), free(rest), free(what);
    return e;
}

sd_err_t sd_registry_compatibility(sd_registry_t *reg, const char *subject, const char *level, char *err, size_t errlen) {
    char *esc = sd_registry_escape(reg, subject);
    char *rest = sd_util_fmt("/config/%s", esc), *what = sd_util_fmt("setting %s's compatibility to %s", subject, level);
    json_t *req = json_pack("{s:s}", "compatibility", level);
    char *body = json_dumps(req, JSON_COMPACT);
    json_decref(req);
    sd_err_t e = sd_registry_call(reg, "PUT", rest, body, what, SD_REGISTRY_WANT_NOTHING, 0, NULL, NULL, err, errlen);
    free(esc), free(rest), free(what), free(body);
    return e;
}

void sd_registry_refs_free(sd_registry_refs_t *refs) {
    if (!refs) return;
    for (size_t i = 0; i < refs->n; i++) free(refs->names[i]), free(refs->texts[i]);
    free(refs->names), free(refs->texts);
    memset(refs, 0, sizeof(*refs));
}

/* The `references` of the answer just read appended to queue. */
static void sd_registry_queue_refs(sd_registry_t *reg, json_t *queue) {
    json_t *o = reg->body.len ? json_loadb(reg->body.data, reg->body.len, 0, NULL) : NULL;
    json_t *a = json_is_object(o) ? json_object_get(o, "references") : NULL;
    if (json_is_array(a)) json_array_extend(queue, a);
    json_decref(o);
}

/* The references queue holds fetched into refs, theirs in turn; of schema id. */
static sd_err_t sd_registry_fetch_refs(sd_registry_t *reg, int id, json_t *queue, sd_registry_refs_t *refs, char *err, size_t errlen) {
    sd_err_t e = SD_OK;
    for (size_t i = 0; !e && i < json_array_size(queue); i++) {
        json_t *r = json_array_get(queue, i);
        const char *name = json_string_value(json_object_get(r, "name")), *subject = json_string_value(json_object_get(r, "subject"));
        json_t *v = json_object_get(r, "version");
        if (!name || !subject || !json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > INT32_MAX) {
            sd_buf_t b;
            sd_buf_init(&b);
            char *t = json_dumps(r, JSON_COMPACT);
            sd_buf_put_printable(&b, t ? t : "?", t ? strlen(t) : 1, 200);
            free(t);
            e = sd_err_set(err, errlen, SD_ERR_REGISTRY, "registry %s: schema %d: a reference without a name, a subject and a version "
                           "from 1: %s", reg->url, id, b.data ? b.data : "");
            sd_buf_free(&b);
            break;
        }
        int held = 0;
        for (size_t k = 0; k < refs->n && !held; k++) held = !strcmp(refs->names[k], name);
        if (held) continue;
        if (refs->n == SD_REGISTRY_MAX_REFS) {
            e = sd_err_set(err, errlen, SD_ERR_REGISTRY, "registry %s: schema %d: more than %d references", reg->url, id,
                           SD_REGISTRY_MAX_REFS);
            break;
        }
        char *esc = sd_registry_escape(reg, subject);
        char *rest = sd_util_fmt("/subjects/%s/versions/%lld", esc, (long long)json_integer_value(v));
        char *what = sd_util_fmt("schema %d's reference %s (subject %s version %lld)", id, name, subject, (long long)json_integer_value(v));
        sd_buf_t text;
        sd_buf_init(&text);
        e = sd_registry_call(reg, "GET", rest, NULL, what, SD_REGISTRY_WANT_SCHEMA, 0, NULL, &text, err, errlen);
        if (!e) {
            if (!(refs->n & 7)) {
                refs->names = sd_util_xrealloc(refs->names, sizeof(char *) * (refs->n + 8));
                refs->texts = sd_util_xrealloc(refs->texts, sizeof(char *) * (refs->n + 8));
            }
            refs->names[refs->n] = sd_util_strdup(name);
            refs->texts[refs->n++] = sd_util_strdup(text.data ? text.data : "");
            sd_registry_queue_refs(reg, queue);
        }
        sd_buf_free(&text);
        free(esc), free(rest), free(what);
    }
    return e;
}

sd_err_t sd_registry_schema(sd_registry_t *reg, int id, sd_buf_t *out, sd_registry_refs_t *refs, int *found, char *err, size_t errlen) {
    char rest[64], what[64];
    snprintf(rest, sizeof(rest), "/schemas/ids/%d", id);
    snprintf(what, sizeof(what), "schema %d", id);
    sd_err_t e = sd_registry_call(reg, "GET", rest, NULL, what, SD_REGISTRY_WANT_SCHEMA, 404, NULL, out, err, errlen);
    *found = !e && reg->status == 200;
    if (e || !*found || !refs) return e;
    json_t *queue = json_array();
    sd_registry_queue_refs(reg, queue);
    e = sd_registry_fetch_refs(reg, id, queue, refs, err, errlen);
    json_decref(queue);
    if (e) sd_registry_refs_free(refs);
    return e;
}

sd_err_t sd_registry_latest(sd_registry_t *reg, const char *subject, sd_buf_t *out, int *found, char *err, size_t errlen) {
    char *esc = sd_registry_escape(reg, subject);
    char *rest = sd_util_fmt("/subjects/%s/versions/latest", esc), *what = sd_util_fmt("%s's newest schema", subject);
    sd_err_t e = sd_registry_call(reg, "GET", rest, NULL, what, SD_REGISTRY_WANT_SCHEMA, 404, NULL, out, err, errlen);
    *found = !e && reg->status == 200;
    free(esc), free(rest), free(what);
    return e;
}
