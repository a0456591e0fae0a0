//go:build cgo && linux

package leanc

/*
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>

// pepa_leanc runs before the Go runtime starts: the C runtime's defaults
// for every thread created later (see doc.go for why).
__attribute__((constructor)) static void pepa_leanc(void) {
#ifdef M_ARENA_MAX
	mallopt(M_ARENA_MAX, 1);
#endif
	pthread_attr_t attr;
	if (pthread_attr_init(&attr) == 0) {
		if (pthread_attr_setstacksize(&attr, 256 << 10) == 0) {
			pthread_setattr_default_np(&attr);
		}
		pthread_attr_destroy(&attr);
	}
}
*/
import "C"

// Linked reports whether the constructor is in this binary.
const Linked = true
