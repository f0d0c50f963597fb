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
#define _GNU_SOURCE
#include <fcntl.h>
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
