// splitbrain clock shim: an LD_PRELOAD library that shifts a process's
// wall clock by an offset the harness can change at any time, and lets
// that offset grow with real time (a clock that runs fast or slow).
//
// Why not libfaketime: it recurses into jemalloc at start-up with Debian's
// redis-server. This shim needs neither dlsym nor malloc: it reads real time
// with the raw clock_gettime syscall and adds an offset read from a small
// file mapped shared (struct clock_state: native-endian int64 words), so a
// write to that file by the harness moves the clock of this process at
// once. The offset is off + (real - anchor) * rate_ppb / 1e9: zero rate is
// a plain offset; 50 000 000 ppb is a clock 5 % fast from anchor on.
//
// Only wall clocks move (CLOCK_REALTIME and friends, gettimeofday, time):
// Redis expires keys by gettimeofday, while its monotonic clock keeps
// measuring real durations, as it would after an NTP step.
//
// It also routes the process's outgoing loopback connections (see
// connect below): Sentinel and replication learn each other's addresses
// from the servers themselves, one address per server for everyone, so
// only the dialling process can be told to go through its own proxy.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <linux/stat.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

// clock_state is the mapped file's layout (cluster.ClockFile writes it).
// The harness changes it under a sequence lock: seq is odd while it
// writes, and a reader that saw it change reads again.
struct clock_state {
	int64_t seq;
	int64_t off;      // the offset at anchor, in ns
	int64_t rate_ppb; // how much faster than real time, in parts per 10^9
	int64_t anchor;   // real CLOCK_REALTIME, in ns, when off was right
	// How long each fsync and fdatasync waits before it starts, in ns (a
	// slow disk); one word outside the sequence lock, read alone.
	int64_t fsync_delay;
};

static struct clock_state *state;

static void die(const char *msg, const char *path) {
	// No stdio: it may allocate. The harness shows the node's stderr.
	(void)!write(2, "splitbrain clock shim: ", 23);
	(void)!write(2, msg, strlen(msg));
	(void)!write(2, path, strlen(path));
	(void)!write(2, "\n", 1);
	_exit(70);
}

__attribute__((constructor)) static void splitbrain_clock_init(void) {
	const char *path = getenv("SPLITBRAIN_CLOCK_FILE");
	if (path == NULL || path[0] == '\0')
		return;
	// The harness asked for a controllable clock: running without one would
	// silently make every clock fault a no-op, so refuse to start instead.
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		die("cannot open offset file ", path);
	// A shorter file would fault at the first read past its end.
	struct stat st;
	if (fstat(fd, &st) != 0 || st.st_size < (off_t)sizeof(struct clock_state))
		die("offset file too short (a harness of another version?): ", path);
	void *p = mmap(NULL, sizeof(struct clock_state), PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		die("cannot map offset file ", path);
	state = p;
}

static int real_clock(clockid_t clk, struct timespec *ts);

// current_offset is the offset now. A reader retries while the harness
// writes, a bounded number of times: a harness killed in the middle of a
// write must not hang the server (it dies with the harness anyway).
static int64_t current_offset(void) {
	if (state == NULL)
		return 0;
	int64_t off = 0, rate = 0, anchor = 0;
	for (int i = 0; i < 1000; i++) {
		int64_t s1 = __atomic_load_n(&state->seq, __ATOMIC_ACQUIRE);
		off = __atomic_load_n(&state->off, __ATOMIC_RELAXED);
		rate = __atomic_load_n(&state->rate_ppb, __ATOMIC_RELAXED);
		anchor = __atomic_load_n(&state->anchor, __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		int64_t s2 = __atomic_load_n(&state->seq, __ATOMIC_RELAXED);
		if (s1 == s2 && (s1 & 1) == 0)
			break;
	}
	if (rate == 0)
		return off;
	// The drift counts real CLOCK_REALTIME, whatever clock was asked
	// (CLOCK_TAI is 37 s off it, which a rate would scale).
	struct timespec now;
	if (real_clock(CLOCK_REALTIME, &now) != 0)
		return off;
	__int128 elapsed = (__int128)now.tv_sec * 1000000000 + now.tv_nsec - anchor;
	return off + (int64_t)(elapsed * rate / 1000000000);
}

static int is_wall_clock(clockid_t clk) {
	return clk == CLOCK_REALTIME || clk == CLOCK_REALTIME_COARSE ||
	       clk == CLOCK_TAI;
}

static void shift(struct timespec *ts, int64_t off) {
	if (off == 0)
		return;
	int64_t ns = (int64_t)ts->tv_nsec + off % 1000000000LL;
	int64_t sec = (int64_t)ts->tv_sec + off / 1000000000LL;
	if (ns < 0) {
		ns += 1000000000LL;
		sec -= 1;
	} else if (ns >= 1000000000LL) {
		ns -= 1000000000LL;
		sec += 1;
	}
	ts->tv_sec = (time_t)sec;
	ts->tv_nsec = (long)ns;
}

static int real_clock(clockid_t clk, struct timespec *ts) {
	return (int)syscall(SYS_clock_gettime, clk, ts);
}

int clock_gettime(clockid_t clk, struct timespec *ts) {
	if (real_clock(clk, ts) != 0)
		return -1;
	if (is_wall_clock(clk))
		shift(ts, current_offset());
	return 0;
}

int gettimeofday(struct timeval *restrict tv, void *restrict tz) {
	(void)tz; // obsolete; glibc ignores it too
	struct timespec ts;
	if (real_clock(CLOCK_REALTIME, &ts) != 0)
		return -1;
	shift(&ts, current_offset());
	tv->tv_sec = ts.tv_sec;
	tv->tv_usec = ts.tv_nsec / 1000;
	return 0;
}

time_t time(time_t *out) {
	struct timespec ts;
	if (real_clock(CLOCK_REALTIME, &ts) != 0)
		return (time_t)-1;
	shift(&ts, current_offset());
	if (out != NULL)
		*out = ts.tv_sec;
	return ts.tv_sec;
}

// Routes: SPLITBRAIN_ROUTE_FILE names a text file of "port proxyport" lines.
// A connect() to 127.0.0.1:port goes to 127.0.0.1:proxyport instead, the
// harness's proxy on the link from this process to the server on port,
// so that a sentinel, or a replica told by Sentinel to follow a new master,
// reaches the server by the address Sentinel knows it by and the nemesis
// can still cut that link. A line "a.b.c.d:port w.x.y.z:proxyport" routes
// a connect() to that IPv4 address and port, whatever the address: in a
// container, where the servers have addresses of their own and the proxy
// is reached through a relay on the network's gateway. The file is read at
// every connect (they are rare: links are long-lived), so the harness can
// add routes while the process runs. No file, or no line for the address,
// connects as asked.
static int route(struct sockaddr_in *to) {
	const char *path = getenv("SPLITBRAIN_ROUTE_FILE");
	if (path == NULL || path[0] == '\0')
		return 0;
	int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	char buf[8192];
	ssize_t n = 0, r;
	while (n < (ssize_t)sizeof(buf) - 1 &&
	       (r = syscall(SYS_read, fd, buf + n, sizeof(buf) - 1 - n)) > 0)
		n += r;
	syscall(SYS_close, fd);
	buf[n < 0 ? 0 : n] = '\0';
	uint32_t ip = ntohl(to->sin_addr.s_addr);
	int port = ntohs(to->sin_port);
	long vals[10];
	int field = 0;
	long v = -1;
	for (char *c = buf;; c++) {
		if (*c >= '0' && *c <= '9') {
			v = (v < 0 ? 0 : v * 10) + (*c - '0');
			continue;
		}
		if (v >= 0 && field < 10)
			vals[field++] = v;
		v = -1;
		if (*c == '\n' || *c == '\0') {
			if (field == 2 && ip == INADDR_LOOPBACK && vals[0] == port &&
			    vals[1] > 0 && vals[1] < 65536) {
				to->sin_port = htons((uint16_t)vals[1]);
				return 1;
			}
			if (field == 10 && vals[4] == port && vals[9] > 0 && vals[9] < 65536 &&
			    (uint32_t)((vals[0] << 24) | (vals[1] << 16) | (vals[2] << 8) | vals[3]) == ip) {
				to->sin_addr.s_addr = htonl((uint32_t)((vals[5] << 24) | (vals[6] << 16) | (vals[7] << 8) | vals[8]));
				to->sin_port = htons((uint16_t)vals[9]);
				return 1;
			}
			field = 0;
		}
		if (*c == '\0')
			return 0;
	}
}

int connect(int fd, const struct sockaddr *addr, socklen_t len) {
	struct sockaddr_in to;
	if (addr != NULL && addr->sa_family == AF_INET && len >= sizeof(to)) {
		memcpy(&to, addr, sizeof(to));
		if (route(&to))
			return (int)syscall(SYS_connect, fd, &to, sizeof(to));
	}
	return (int)syscall(SYS_connect, fd, addr, len);
}

// Power loss: SPLITBRAIN_SYNC_LOG names a file to which every successful
// fsync or fdatasync of a regular file appends what it made durable, and
// every truncation what it cut:
//
//	S major minor inode btime_sec btime_nsec size
//	T major minor inode btime_sec btime_nsec size
//
// The file is known by its device, inode and birth time (an inode number
// is reused once its file is gone), its size read before the sync: what
// the file held when the sync began is on disk once it returns. The
// harness cuts every file back to that on a power loss (see
// cluster.LoseUnsynced): Jepsen's lazyfs "lose un-fsynced writes", without
// FUSE. Lines are written whole with O_APPEND, so a forked child's (Redis's
// rewrite) and the threads' lines never mix.
static int sync_log = -1;

__attribute__((constructor)) static void splitbrain_sync_init(void) {
	const char *path = getenv("SPLITBRAIN_SYNC_LOG");
	if (path == NULL || path[0] == '\0')
		return;
	// Asked for, but missing, every power loss would keep what it must
	// lose: refuse to start instead.
	int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_WRONLY | O_APPEND | O_CLOEXEC);
	if (fd < 0)
		die("cannot open sync log ", path);
	sync_log = fd;
}

static char *put_u64(char *p, uint64_t v) {
	char tmp[20];
	int n = 0;
	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v != 0);
	while (n > 0)
		*p++ = tmp[--n];
	*p++ = ' ';
	return p;
}

static void log_file(char kind, const struct statx *st, uint64_t size) {
	char line[160], *p = line;
	*p++ = kind;
	*p++ = ' ';
	p = put_u64(p, st->stx_dev_major);
	p = put_u64(p, st->stx_dev_minor);
	p = put_u64(p, st->stx_ino);
	uint64_t bsec = 0, bnsec = 0;
	if (st->stx_mask & STATX_BTIME) {
		bsec = (uint64_t)st->stx_btime.tv_sec;
		bnsec = st->stx_btime.tv_nsec;
	}
	p = put_u64(p, bsec);
	p = put_u64(p, bnsec);
	p = put_u64(p, size);
	p[-1] = '\n';
	int saved = errno;
	(void)!syscall(SYS_write, sync_log, line, (size_t)(p - line));
	errno = saved;
}

// file_of reads a regular file's identity and size: by fd, or by path
// when path is not NULL.
static int file_of(int fd, const char *path, struct statx *st) {
	int saved = errno;
	int r = path == NULL
		? (int)syscall(SYS_statx, fd, "", AT_EMPTY_PATH, STATX_TYPE | STATX_INO | STATX_SIZE | STATX_BTIME, st)
		: (int)syscall(SYS_statx, AT_FDCWD, path, 0, STATX_TYPE | STATX_INO | STATX_SIZE | STATX_BTIME, st);
	errno = saved;
	return r == 0 && S_ISREG(st->stx_mode);
}

// stall_fsync waits while the harness says the disk is slow: until the
// delay, read again every 5 ms, has passed since the fsync was asked, so
// that the heal (delay 0) lets a waiting fsync go at once. Monotonic
// time: the wall clock is the harness's to move.
static void stall_fsync(void) {
	if (state == NULL || __atomic_load_n(&state->fsync_delay, __ATOMIC_RELAXED) <= 0)
		return;
	int saved = errno;
	struct timespec start, now;
	if (real_clock(CLOCK_MONOTONIC, &start) != 0) {
		errno = saved;
		return;
	}
	for (;;) {
		int64_t delay = __atomic_load_n(&state->fsync_delay, __ATOMIC_RELAXED);
		if (real_clock(CLOCK_MONOTONIC, &now) != 0)
			break;
		int64_t waited = ((int64_t)now.tv_sec - start.tv_sec) * 1000000000LL + (now.tv_nsec - start.tv_nsec);
		if (delay <= 0 || waited >= delay)
			break;
		struct timespec slice = {0, 5000000};
		(void)syscall(SYS_nanosleep, &slice, NULL);
	}
	errno = saved;
}

static int synced(long nr, int fd) {
	stall_fsync();
	struct statx st;
	int known = sync_log >= 0 && file_of(fd, NULL, &st);
	int r = (int)syscall(nr, fd);
	if (r == 0 && known)
		log_file('S', &st, st.stx_size);
	return r;
}

int fsync(int fd) { return synced(SYS_fsync, fd); }

int fdatasync(int fd) { return synced(SYS_fdatasync, fd); }

int ftruncate(int fd, off_t len) {
	int r = (int)syscall(SYS_ftruncate, fd, len);
	struct statx st;
	if (r == 0 && sync_log >= 0 && file_of(fd, NULL, &st))
		log_file('T', &st, (uint64_t)len);
	return r;
}

int truncate(const char *path, off_t len) {
	int r = (int)syscall(SYS_truncate, path, len);
	struct statx st;
	if (r == 0 && sync_log >= 0 && file_of(-1, path, &st))
		log_file('T', &st, (uint64_t)len);
	return r;
}

// Programs built with large-file support (Debian's redis-server) call these.
int ftruncate64(int fd, off_t len) { return ftruncate(fd, len); }

int truncate64(const char *path, off_t len) { return truncate(path, len); }
