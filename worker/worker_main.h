/*
 * worker_main.h - the worker's entry point: the one symbol of worker/
 * another part of outboxd may use. The supervisor's role table
 * (supervisor/roles.c) runs it in a forked child, once per OUTBOX_WORKERS;
 * common/child.h is the contract (exit codes, child_init, drain and reload).
 */
#ifndef OUTBOX_WORKER_MAIN_H
#define OUTBOX_WORKER_MAIN_H

#include "common/child.h"

child_entry_fn worker_main;

#endif
