// SPDX-License-Identifier: BSL-1.0
// An LD_PRELOAD shim that makes a process's wall clock run REDLOCK_CLOCK_RATE times
// as fast as the real one (default 2) from the moment it is first read: a node whose
// clock misbehaves, for the clock-jump tests.
//
// Why not libfaketime (Debian's `faketime`): it cannot start Debian's redis-server,
// whose jemalloc reads the clock while libfaketime initialises (libfaketime issue
// #130). This shim needs no initialisation: it reads the clock with the raw system
// call and keeps no state but the first reading.

#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>

namespace {

std::atomic<long long> base_ns{-1};

long long to_ns(const timespec& ts) {
  return ts.tv_sec * 1'000'000'000LL + ts.tv_nsec;
}

double rate() {
  const char* v = std::getenv("REDLOCK_CLOCK_RATE");
  const double r = v ? std::atof(v) : 2.0;
  return r > 0 ? r : 2.0;
}

void speed_up(timespec* ts) {
  const long long now = to_ns(*ts);
  long long base = base_ns.load();
  if (base < 0) {
    base_ns.compare_exchange_strong(base, now);
    base = base_ns.load();
  }
  const long long fast = base + static_cast<long long>(static_cast<double>(now - base) * rate());
  ts->tv_sec = fast / 1'000'000'000LL;
  ts->tv_nsec = fast % 1'000'000'000LL;
}

}  // namespace

extern "C" int clock_gettime(clockid_t id, timespec* ts) {
  if (::syscall(SYS_clock_gettime, id, ts) != 0) return -1;
  if (id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE) speed_up(ts);
  return 0;
}

extern "C" int gettimeofday(timeval* tv, void*) {
  timespec ts{};
  if (clock_gettime(CLOCK_REALTIME, &ts) != 0) return -1;
  tv->tv_sec = ts.tv_sec;
  tv->tv_usec = ts.tv_nsec / 1000;
  return 0;
}

extern "C" time_t time(time_t* out) {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  if (out) *out = ts.tv_sec;
  return ts.tv_sec;
}
