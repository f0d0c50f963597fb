// splitbrain clock shim: an LD_PRELOAD library that shifts a process's
// wall clock by an offset the harness can change at any time.
//
// Why not libfaketime: it recurses into jemalloc at start-up with Debian's
// redis-server. This shim needs neither dlsym nor malloc: it reads real time
// with the raw clock_gettime syscall and adds an offset in nanoseconds read
// from an 8-byte file (native-endian int64) mapped shared, so a write to that
// file by the harness moves the clock of this process at once.
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
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static volatile int64_t *offset_ns;

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
	void *p = mmap(NULL, sizeof(int64_t), PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		die("cannot map offset file ", path);
	offset_ns = p;
}

static int64_t current_offset(void) {
	if (offset_ns == NULL)
		return 0;
	return __atomic_load_n(offset_ns, __ATOMIC_RELAXED);
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
