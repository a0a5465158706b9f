/*
 * report.h - outbox-demo-report, the demo's summary after the run: what it
 * reads (report_data.c) and what it prints (report_main.c, chart.c).
 *
 * Times are seconds since the load started (demo.marks 'load'), all taken
 * from PostgreSQL's clock, so nothing depends on the caller's.
 */
#ifndef OUTBOX_OPS_DEMO_REPORT_H
#define OUTBOX_OPS_DEMO_REPORT_H

#include <libpq-fe.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The lines of the state table: the kind, and for DEPOSIT its priority too. */
enum report_line { RL_WITHDRAW, RL_DEPOSIT, RL_RECURRING, RL_REFERRAL, RL_REBALANCE, RL__COUNT };

struct report_op {
	int64_t id;
	enum report_line line;
	int priority; /* 0 CRITICAL, 1 NORMAL, 2 LOW */
	char status[12];
	bool overdraft;                     /* WITHDRAW wdx-...: meant to fail on chain */
	double created, confirmed, settled; /* confirmed < 0: not confirmed */
	char detail[96];                    /* last_error or hold_reason, for a line about it */
};

struct report_mark {
	char label[41];
	double start, end;
};

struct report_sample {
	double at;
	double fee;     /* recommended, stroops; < 0 unknown */
	int congestion; /* 0 low .. 3 severe; -1 unknown */
};

struct report_data {
	double load_end;
	struct report_op *ops;
	size_t n_ops;
	struct report_mark marks[16];
	size_t n_marks;
	struct report_sample *samples;
	size_t n_samples;
	int64_t bumps, bumped_ops, deferrals, deferred_ops, retries;
	int64_t fee_median, fee_max; /* bids of the transactions that landed */
	int64_t rows, rows_agree, rows_paid, rows_failed, rows_open;
	int64_t via_sql; /* ops with a business row: enqueued in the app's transaction */
};

/* Read everything; 0, or -1 with the reason on stderr. */
int report_load(PGconn *conn, struct report_data *d);
void report_free(struct report_data *d);

#endif
