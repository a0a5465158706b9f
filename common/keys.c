/*
 * keys.c - see keys.h.
 *
 * The whole file is read into one sodium_malloc'd buffer (it is nothing but
 * seeds), parsed in place, and wiped. Seeds are decoded straight into a
 * sodium_malloc'd array that is made read-only once complete. Duplicates are
 * found by sorting the public keys, which are not secret, so no secret is
 * ever compared in a data-dependent order.
 */
#include "common/keys.h"

#include "common/stellar/strkey.h"

#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FIELD "OUTBOX_SIGNER_KEYS_FILE"

struct line_ref {
	const char *s; /* first char of the seed in the buffer */
	size_t len;
	unsigned line;
};

struct sorted_pub {
	const uint8_t *pub;
	size_t idx;
};

static int read_secret_file(const char *path, char **buf, size_t *len, struct outbox_error *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	struct stat st;
	size_t n = 0;
	char *b;

	if (fd < 0)
		return outbox_error_set(err, -errno, FIELD, "cannot open '%s': %s", path,
					strerror(errno));
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return outbox_error_set(err, OUTBOX_EINVAL, FIELD, "'%s' is not a regular file",
					path);
	}
	if (st.st_mode & (S_IRWXG | S_IRWXO)) {
		close(fd);
		return outbox_error_set(err, OUTBOX_EINVAL, FIELD,
					"'%s' has mode %04o: it is accessible by group or others "
					"(use chmod 600)",
					path, (unsigned)(st.st_mode & 07777));
	}
	if (st.st_size > (off_t)KEYS_FILE_MAX) {
		close(fd);
		return outbox_error_set(err, OUTBOX_ETOOBIG, FIELD, "'%s' is larger than %u bytes",
					path, KEYS_FILE_MAX);
	}
	b = sodium_malloc(KEYS_FILE_MAX + 1);
	if (!b) {
		close(fd);
		return outbox_error_set(err, -ENOMEM, FIELD, "out of secure memory");
	}
	for (;;) {
		ssize_t r = read(fd, b + n, KEYS_FILE_MAX + 1 - n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = errno;

			close(fd);
			sodium_free(b);
			return outbox_error_set(err, -e, FIELD, "cannot read '%s': %s", path,
						strerror(e));
		}
		if (r == 0)
			break;
		n += (size_t)r;
		if (n > KEYS_FILE_MAX) {
			close(fd);
			sodium_free(b);
			return outbox_error_set(err, OUTBOX_ETOOBIG, FIELD,
						"'%s' is larger than %u bytes", path,
						KEYS_FILE_MAX);
		}
	}
	close(fd);
	b[n] = '\0';
	*buf = b;
	*len = n;
	return 0;
}

static int cmp_pub(const void *a, const void *b)
{
	const struct sorted_pub *x = a, *y = b;
	int c = memcmp(x->pub, y->pub, 32);

	if (c)
		return c;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* Split buf into seed lines; malformed lines are reported by number. */
static int split_lines(const char *path, char *buf, size_t len, struct line_ref *refs,
		       size_t *n_refs, struct outbox_error *err)
{
	unsigned line = 0;
	size_t n = 0;
	char *p = buf, *end = buf + len;

	while (p < end) {
		char *nl = memchr(p, '\n', (size_t)(end - p));
		char *e = nl ? nl : end;
		char *s = p;

		line++;
		p = nl ? nl + 1 : end;
		while (s < e && (*s == ' ' || *s == '\t'))
			s++;
		while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
			e--;
		if (s == e || *s == '#')
			continue;
		if (memchr(s, '\0', (size_t)(e - s)))
			return outbox_error_set(err, OUTBOX_EINVAL, FIELD,
						"'%s' line %u: contains a NUL byte", path, line);
		if (n == KEYS_MAX)
			return outbox_error_set(err, OUTBOX_ETOOBIG, FIELD,
						"'%s' has more than %u seeds", path, KEYS_MAX);
		refs[n].s = s;
		refs[n].len = (size_t)(e - s);
		refs[n].line = line;
		n++;
	}
	if (n == 0)
		return outbox_error_set(err, OUTBOX_EINVAL, FIELD, "'%s' contains no seed", path);
	*n_refs = n;
	return 0;
}

static int decode_all(const char *path, const struct line_ref *refs, size_t n,
		      struct signer_keys *k, struct outbox_error *err)
{
	unsigned char *sk = sodium_malloc(crypto_sign_SECRETKEYBYTES);
	int rc = 0;

	if (!sk)
		return outbox_error_set(err, -ENOMEM, FIELD, "out of secure memory");
	for (size_t i = 0; i < n; i++) {
		rc = strkey_decode(STRKEY_SEED, refs[i].s, refs[i].len, k->seed[i], 32, FIELD,
				   NULL);
		if (rc < 0) {
			rc = outbox_error_set(err, OUTBOX_EINVAL, FIELD,
					      "'%s' line %u: not a secret seed strkey (%s)", path,
					      refs[i].line, strkey_status_name(rc));
			break;
		}
		rc = 0;
		crypto_sign_seed_keypair(k->pub[i], sk, k->seed[i]);
	}
	sodium_free(sk);
	return rc;
}

static int find_duplicates(const char *path, const struct line_ref *refs, size_t n,
			   const struct signer_keys *k, struct outbox_error *err)
{
	struct sorted_pub *s = calloc(n, sizeof(*s));
	int rc = 0;

	if (!s)
		return outbox_error_set(err, -ENOMEM, FIELD, "out of memory");
	for (size_t i = 0; i < n; i++) {
		s[i].pub = k->pub[i];
		s[i].idx = i;
	}
	qsort(s, n, sizeof(*s), cmp_pub);
	for (size_t i = 1; i < n && !rc; i++) {
		size_t a = s[i - 1].idx, b = s[i].idx;

		if (!memcmp(s[i - 1].pub, s[i].pub, 32))
			rc = outbox_error_set(err, OUTBOX_EINVAL, FIELD,
					      "'%s' line %u: duplicate of line %u", path,
					      refs[a > b ? a : b].line, refs[a < b ? a : b].line);
	}
	free(s);
	return rc;
}

int signer_keys_load(struct signer_keys *k, const char *path, struct outbox_error *err)
{
	struct line_ref *refs = NULL;
	size_t len = 0, n = 0;
	char *buf = NULL;
	int rc;

	k->n = 0;
	k->seed = NULL;
	k->pub = NULL;
	if (sodium_init() < 0)
		return outbox_error_set(err, -ENOSYS, FIELD, "libsodium failed to initialise");
	rc = read_secret_file(path, &buf, &len, err);
	if (rc)
		return rc;
	refs = calloc(KEYS_MAX, sizeof(*refs));
	if (!refs) {
		rc = outbox_error_set(err, -ENOMEM, FIELD, "out of memory");
		goto out;
	}
	rc = split_lines(path, buf, len, refs, &n, err);
	if (rc)
		goto out;
	k->seed = sodium_allocarray(n, 32);
	k->pub = calloc(n, 32);
	if (!k->seed || !k->pub) {
		rc = outbox_error_set(err, -ENOMEM, FIELD, "out of memory");
		goto out;
	}
	k->n = n;
	rc = decode_all(path, refs, n, k, err);
	if (!rc)
		rc = find_duplicates(path, refs, n, k, err);
	if (!rc)
		sodium_mprotect_readonly(k->seed);
out:
	free(refs);
	sodium_free(buf); /* wipes */
	if (rc)
		signer_keys_release(k);
	return rc;
}

int keys_file_check(const char *path, size_t *count, struct outbox_error *err)
{
	struct signer_keys k = SIGNER_KEYS_INIT;
	int rc = signer_keys_load(&k, path, err);

	if (!rc && count)
		*count = k.n;
	signer_keys_release(&k);
	return rc;
}

long signer_keys_find(const struct signer_keys *k, const uint8_t pub[32])
{
	for (size_t i = 0; i < k->n; i++)
		if (!memcmp(k->pub[i], pub, 32))
			return (long)i;
	return -1;
}

void signer_keys_release(struct signer_keys *k)
{
	if (k->seed)
		sodium_free(k->seed); /* wipes, even when read-only */
	free(k->pub);
	k->seed = NULL;
	k->pub = NULL;
	k->n = 0;
}
