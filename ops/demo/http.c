/*
 * http.c - enqueue through the gateway's HTTP API (http.h).
 */
#include "ops/demo/http.h"

#include <curl/curl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GW_ANSWER_MAX 65536 /* an answer larger than this is not the gateway's */

struct answer {
	char buf[GW_ANSWER_MAX + 1];
	size_t len;
	bool too_big;
};

static size_t on_data(char *p, size_t size, size_t n, void *arg)
{
	struct answer *a = arg;
	size_t got = size * n;

	if (a->len + got > GW_ANSWER_MAX) {
		a->too_big = true;
		return 0; /* ends the transfer with an error */
	}
	memcpy(a->buf + a->len, p, got);
	a->len += got;
	a->buf[a->len] = '\0';
	return got;
}

/* The key: the first line of the file, printable, 16..200 characters. */
static int read_key(const char *path, char *key, size_t cap, char *errbuf, size_t errlen)
{
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f || !fgets(key, (int)cap, f)) {
		snprintf(errbuf, errlen, "%s: cannot read the API key", path);
		if (f)
			fclose(f);
		return -1;
	}
	fclose(f);
	key[strcspn(key, "\r\n")] = '\0';
	n = strlen(key);
	for (size_t i = 0; i < n; i++)
		if (key[i] <= ' ' || key[i] > '~')
			n = 0;
	if (n < 16 || n > 200) {
		snprintf(errbuf, errlen, "%s: the first line is not an API key", path);
		return -1;
	}
	return 0;
}

int gw_open(struct gw_client *g, const char *base, const char *key_file, char *errbuf,
	    size_t errlen)
{
	char key[256], auth[300];

	memset(g, 0, sizeof(*g));
	if (strncmp(base, "http://", 7) || strlen(base) > sizeof(g->url) - 16) {
		snprintf(errbuf, errlen, "--gateway: '%.80s' is not http://HOST:PORT", base);
		return -1;
	}
	if (read_key(key_file, key, sizeof(key), errbuf, errlen))
		return -1;
	snprintf(g->url, sizeof(g->url), "%s/api/v1/ops", base);
	snprintf(auth, sizeof(auth), "Authorization: Bearer %s", key);
	g->hdrs =
		curl_slist_append(curl_slist_append(NULL, "Content-Type: application/json"), auth);
	g->curl = curl_easy_init();
	if (!g->hdrs || !g->curl) {
		snprintf(errbuf, errlen, "libcurl could not be set up");
		gw_close(g);
		return -1;
	}
	return 0;
}

void gw_close(struct gw_client *g)
{
	if (g->curl)
		curl_easy_cleanup(g->curl);
	curl_slist_free_all(g->hdrs);
	memset(g, 0, sizeof(*g));
}

/* The request body for it; NULL when it cannot be built. */
static char *request_body(const struct intent *it)
{
	char payload[1024];
	json_t *body, *p;
	char *s;

	if (intent_payload(it, payload, sizeof(payload)) || !(p = json_loads(payload, 0, NULL)))
		return NULL;
	body = json_pack("{s:s, s:s, s:s, s:o}", "kind", it->kind, "userId", it->user, "signer",
			 it->signer, "payload", p);
	if (!body)
		return NULL;
	/* a referral's record id is derived (conversion:leg) by outbox.enqueue() */
	if (it->what != IW_REFERRAL)
		json_object_set_new(body, "businessRecordId", json_string(it->record));
	if (it->priority)
		json_object_set_new(body, "priority", json_string(it->priority));
	s = json_dumps(body, JSON_COMPACT);
	json_decref(body);
	return s;
}

/* 200 or 201 with {"op": {"id", "priority"}} into *out; else an error naming what came back. */
static int read_answer(long http, const struct answer *a, struct app_result *out,
		       struct outbox_error *err)
{
	json_t *doc = json_loads(a->buf, 0, NULL), *op = json_object_get(doc, "op");
	json_t *id = json_object_get(op, "id"), *prio = json_object_get(op, "priority");
	int rc = 0;

	if ((http == 200 || http == 201) && json_is_integer(id) && json_is_string(prio)) {
		out->op_id = json_integer_value(id);
		out->created = http == 201;
		snprintf(out->priority, sizeof(out->priority), "%s", json_string_value(prio));
	} else {
		rc = outbox_error_set(err, http == 409 ? OUTBOX_ECONFLICT : OUTBOX_EPROTO, "",
				      "POST /api/v1/ops answered %ld: %.200s", http, a->buf);
	}
	json_decref(doc);
	return rc;
}

int gw_enqueue(struct gw_client *g, const struct intent *it, struct app_result *out,
	       struct outbox_error *err)
{
	static struct answer a;
	char *body = request_body(it);
	CURLcode cc;
	long http = 0;
	int rc;

	if (!body)
		return outbox_error_set(err, OUTBOX_EINVAL, "payload", "cannot build the request");
	a.len = 0;
	a.buf[0] = '\0';
	a.too_big = false;
	curl_easy_setopt(g->curl, CURLOPT_URL, g->url);
	curl_easy_setopt(g->curl, CURLOPT_HTTPHEADER, g->hdrs);
	curl_easy_setopt(g->curl, CURLOPT_COPYPOSTFIELDS, body);
	curl_easy_setopt(g->curl, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(g->curl, CURLOPT_WRITEDATA, &a);
	curl_easy_setopt(g->curl, CURLOPT_TIMEOUT_MS, 10000L);
	curl_easy_setopt(g->curl, CURLOPT_NOSIGNAL, 1L);
	cc = curl_easy_perform(g->curl);
	free(body);
	if (cc != CURLE_OK)
		return outbox_error_set(err, OUTBOX_EPROTO, "", "POST %s: %s", g->url,
					a.too_big ? "answer too large" : curl_easy_strerror(cc));
	curl_easy_getinfo(g->curl, CURLINFO_RESPONSE_CODE, &http);
	rc = read_answer(http, &a, out, err);
	return rc;
}
