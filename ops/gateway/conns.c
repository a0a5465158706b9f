/*
 * conns.c - the open connections and the request deadline.
 *
 * libmicrohttpd's connection timeout counts inactivity: a client that
 * sends one byte of its headers a second is never idle and would hold its
 * connection (and its 64 KiB of buffer) for as long as it likes; a few
 * hundred of them would hold them all. So every request must arrive whole,
 * head and body, within OUTBOX_HTTP_TIMEOUT_S of the moment the gateway
 * started waiting for it (the connection's accept, or the previous
 * request's end). Answering is not bounded here: a synchronous enqueue may
 * wait two minutes with its connection suspended.
 *
 * MHD tells us when a connection opens and closes (NOTIFY_CONNECTION);
 * each has an entry in a list the loop thread walks every tick. A late
 * connection's socket is shut down (shutdown(2), never closed: MHD owns
 * the descriptor): MHD reads its end and closes the connection as if the
 * client had gone. The list's mutex makes that safe: MHD's CLOSED
 * notification, which removes the entry under the mutex, comes before it
 * closes the descriptor, so the loop never shuts a descriptor number that
 * was reused by another socket.
 */
#include "ops/gateway/gateway.h"

#include "common/clock.h"
#include "common/log.h"

#include <stdlib.h>
#include <sys/socket.h>

#define GW_CONNS_LOG_MS 10000 /* at most one log line this often */

struct gw_conn {
	struct gw_conn *prev, *next;
	int fd;
	_Atomic int64_t since_ms; /* waiting for a request since (monotonic); 0: it is in */
	bool shut;
};

struct gw_conns {
	pthread_mutex_t lock;
	struct gw_conn *head;
	int64_t deadline_ms;
	uint64_t late, late_logged; /* loop thread */
	int64_t logged_at_ms;
};

struct gw_conns *gw_conns_new(int64_t deadline_ms)
{
	struct gw_conns *cs = calloc(1, sizeof(*cs));

	if (!cs)
		return NULL;
	pthread_mutex_init(&cs->lock, NULL);
	cs->deadline_ms = deadline_ms;
	return cs;
}

void gw_conns_free(struct gw_conns *cs)
{
	if (!cs)
		return;
	/* MHD stopped first: every connection's CLOSED came, the list is empty */
	while (cs->head) {
		struct gw_conn *c = cs->head;

		cs->head = c->next;
		free(c);
	}
	pthread_mutex_destroy(&cs->lock);
	free(cs);
}

void gw_conns_notify(void *cls, struct MHD_Connection *mc, void **socket_context,
		     enum MHD_ConnectionNotificationCode code)
{
	struct gw_conns *cs = cls;
	struct gw_conn *c = *socket_context;
	const union MHD_ConnectionInfo *ci;

	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		ci = MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CONNECTION_FD);
		if (!ci || !(c = calloc(1, sizeof(*c))))
			return; /* no deadline for it: MHD's inactivity timeout still holds */
		c->fd = ci->connect_fd;
		atomic_store(&c->since_ms, (int64_t)mono_ms());
		pthread_mutex_lock(&cs->lock);
		c->next = cs->head;
		if (cs->head)
			cs->head->prev = c;
		cs->head = c;
		pthread_mutex_unlock(&cs->lock);
		*socket_context = c;
	} else if (code == MHD_CONNECTION_NOTIFY_CLOSED && c) {
		pthread_mutex_lock(&cs->lock);
		if (c->prev)
			c->prev->next = c->next;
		else
			cs->head = c->next;
		if (c->next)
			c->next->prev = c->prev;
		pthread_mutex_unlock(&cs->lock);
		free(c);
		*socket_context = NULL;
	}
}

static struct gw_conn *conn_of(struct MHD_Connection *mc)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(mc, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	return ci ? ci->socket_context : NULL;
}

void gw_conns_received(struct MHD_Connection *mc)
{
	struct gw_conn *c = conn_of(mc);

	if (c)
		atomic_store(&c->since_ms, 0);
}

void gw_conns_next(struct MHD_Connection *mc)
{
	struct gw_conn *c = conn_of(mc);

	if (c)
		atomic_store(&c->since_ms, (int64_t)mono_ms());
}

void gw_conns_tick(struct gw_conns *cs, int64_t now_ms)
{
	if (!cs)
		return;
	pthread_mutex_lock(&cs->lock);
	for (struct gw_conn *c = cs->head; c; c = c->next) {
		int64_t since = atomic_load(&c->since_ms);

		if (since && !c->shut && now_ms - since > cs->deadline_ms) {
			shutdown(c->fd, SHUT_RDWR);
			c->shut = true;
			cs->late++;
		}
	}
	pthread_mutex_unlock(&cs->lock);
	/* an attack would be a line per connection: one line per period */
	if (cs->late != cs->late_logged && now_ms - cs->logged_at_ms >= GW_CONNS_LOG_MS) {
		log_warn("http: closed %llu connection(s) whose request did not arrive whole "
			 "within %lld s (OUTBOX_HTTP_TIMEOUT_S)",
			 (unsigned long long)(cs->late - cs->late_logged),
			 (long long)(cs->deadline_ms / 1000));
		cs->late_logged = cs->late;
		cs->logged_at_ms = now_ms;
	}
}
