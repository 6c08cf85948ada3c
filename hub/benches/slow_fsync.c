/* A slow disk for the group-commit bench: LD_PRELOAD this and every fsync/fdatasync of the process
 * first sleeps SLOW_FSYNC_US microseconds (default 3000), as a network volume that commits a few
 * hundred times a second would make it wait. Built by hub/benches/http.rs with the system's cc. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <time.h>

static void slow_down(void) {
    static long us = -1;
    if (us < 0) {
        const char *e = getenv("SLOW_FSYNC_US");
        us = e ? atol(e) : 3000;
    }
    struct timespec t = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&t, NULL);
}

int fsync(int fd) {
    static int (*real)(int);
    if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
    slow_down();
    return real(fd);
}

int fdatasync(int fd) {
    static int (*real)(int);
    if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
    slow_down();
    return real(fd);
}
