/*
 * gateway_main.h - the HTTP gateway's entry point: the one symbol of
 * ops/gateway/ another part of outboxd may use. The supervisor's role table
 * (supervisor/roles.c) runs it in a forked child unless OUTBOX_HTTP_ADDR is
 * off; common/child.h is the contract (exit codes, child_init, drain and
 * reload).
 */
#ifndef OUTBOX_OPS_GATEWAY_MAIN_H
#define OUTBOX_OPS_GATEWAY_MAIN_H

#include "common/child.h"

child_entry_fn gateway_main;

#endif
