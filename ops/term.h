/*
 * term.h - the little terminal control `outboxctl top` needs: an alternate
 * screen, no echo, one key at a time, the window size, and a restore that
 * runs however top ends (q, Ctrl-C, SIGTERM, SIGHUP from a dropped ssh).
 *
 * Plain VT100/xterm escape sequences only (every terminal and multiplexer
 * an operator reaches over ssh understands them), so no curses dependency.
 */
#ifndef OUTBOX_OPS_TERM_H
#define OUTBOX_OPS_TERM_H

#include <stdbool.h>

/*
 * Take over the terminal on stdin/stdout. Returns 0, or -1 after printing
 * why (not a terminal). Installs SIGINT/SIGTERM/SIGHUP/SIGWINCH handlers
 * that only set flags: term_stop_requested() reports them.
 */
int term_open(void);
/* Give the terminal back exactly as found (idempotent). */
void term_close(void);
/* Rows and columns of the window (24x80 when the size cannot be read). */
void term_size(int *rows, int *cols);
/* Wait up to timeout_ms for a key; returns it, 0 on timeout or a signal. */
int term_key(int timeout_ms);
/* A signal asked top to end. */
bool term_stop_requested(void);
/* Draw lines from the top-left corner, clearing what the last frame left. */
void term_draw(const char *const *lines, const bool *alert, int n);

#endif
