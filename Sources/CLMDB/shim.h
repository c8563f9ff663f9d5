#ifndef STRATA_CLMDB_SHIM_H
#define STRATA_CLMDB_SHIM_H
#include <lmdb.h>
#include <stdatomic.h>

/* A counter read on every write transaction without taking a lock (how
   many observers a file's commit feed has): C11 atomics, which Swift
   cannot name on every platform Strata supports. */
static inline long strata_atomic_load(const long *value) {
    return atomic_load_explicit((const _Atomic long *)value, memory_order_acquire);
}

static inline void strata_atomic_store(long *value, long newValue) {
    atomic_store_explicit((_Atomic long *)value, newValue, memory_order_release);
}
#endif
