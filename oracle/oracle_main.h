/*
 * oracle_main.h - the fee oracle's entry point: the one symbol of oracle/
 * another part of outboxd may use. The supervisor's role table
 * (supervisor/roles.c) runs it in a forked child; common/child.h is the
 * contract (exit codes, child_init, drain and reload).
 */
#ifndef OUTBOX_ORACLE_MAIN_H
#define OUTBOX_ORACLE_MAIN_H

#include "common/child.h"

child_entry_fn oracle_main;

#endif
