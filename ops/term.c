/*
 * term.c - terminal control for `outboxctl top` (term.h).
 */
#include "ops/term.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

static struct termios saved;
static bool active;
static volatile sig_atomic_t stop_signal;

static void on_stop(int sig)
{
	stop_signal = sig;
}

/* SIGWINCH only has to interrupt poll(): the next frame reads the size. */
static void on_winch(int sig)
{
	(void)sig;
}

int term_open(void)
{
	struct sigaction sa;
	struct termios raw;

	if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
		fprintf(stderr, "outboxctl top: stdin and stdout must be a terminal "
				"(outboxctl top --once prints one frame; outboxctl stats --json "
				"is for scripts)\n");
		return -1;
	}
	if (tcgetattr(STDIN_FILENO, &saved)) {
		fprintf(stderr, "outboxctl top: cannot read terminal settings: %s\n",
			strerror(errno));
		return -1;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop; /* no SA_RESTART: poll() returns EINTR */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sa.sa_handler = on_winch;
	sigaction(SIGWINCH, &sa, NULL);
	raw = saved;
	raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
	raw.c_cc[VMIN] = 0;
	raw.c_cc[VTIME] = 0;
	tcsetattr(STDIN_FILENO, TCSAFLUSH, &raw);
	active = true;
	/* alternate screen, cursor hidden: the operator's scrollback survives */
	fputs("\033[?1049h\033[?25l\033[H\033[2J", stdout);
	fflush(stdout);
	return 0;
}

void term_close(void)
{
	if (!active)
		return;
	active = false;
	fputs("\033[0m\033[?25h\033[?1049l", stdout);
	fflush(stdout);
	tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved);
}

void term_size(int *rows, int *cols)
{
	struct winsize ws;

	*rows = 24;
	*cols = 80;
	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0 && ws.ws_col > 0) {
		*rows = ws.ws_row;
		*cols = ws.ws_col;
	}
}

int term_key(int timeout_ms)
{
	struct pollfd p = {.fd = STDIN_FILENO, .events = POLLIN};
	unsigned char c;

	if (poll(&p, 1, timeout_ms) <= 0)
		return 0;
	if (p.revents & (POLLHUP | POLLERR)) {
		stop_signal = SIGHUP; /* the terminal went away */
		return 0;
	}
	if (read(STDIN_FILENO, &c, 1) != 1)
		return 0;
	return c;
}

bool term_stop_requested(void)
{
	return stop_signal != 0;
}

void term_draw(const char *const *lines, const bool *alert, int n)
{
	fputs("\033[H", stdout);
	for (int i = 0; i < n; i++) {
		if (alert[i])
			fputs("\033[7m", stdout); /* inverse: visible without colours */
		fputs(lines[i], stdout);
		fputs(alert[i] ? "\033[0m\033[K" : "\033[K", stdout);
		if (i + 1 < n)
			fputs("\r\n", stdout);
	}
	fputs("\033[J", stdout);
	fflush(stdout);
}
