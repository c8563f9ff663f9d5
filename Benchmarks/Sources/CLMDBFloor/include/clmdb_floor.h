#ifndef CLMDB_FLOOR_H
#define CLMDB_FLOOR_H

// The scenarios of docs/Benchmarks.md through LMDB's C API, written in C:
// the floor Strata is measured against. Every function writes and reads the
// same keys and the same record bytes as Strata (docs/FileFormat.md) and as
// the Swift raw trial (Scenarios/LMDBTrials.swift), so the Swift checks
// verify the files it writes.
//
// Every function returns 0 or an LMDB error code; on failure it sets
// *failed_call to the name of the call that failed.

#include <stddef.h>
#include <stdint.h>

typedef struct MDB_env MDB_env;

// Opens the environment at path the way every trial does (one file, 8 GiB of
// address space, MDB_NOTLS; MDB_NOSYNC unless durable).
int floor_open(const char *path, int durable, MDB_env **env, const char **failed_call);
void floor_close(MDB_env *env);

// e: writes n people in one transaction, keys in order with MDB_APPEND.
// age_text stores the age as a decimal string (the input of c); indexed adds
// the DUPSORT index on lastName (the input of h).
int floor_create(const char *path, int64_t n, int age_text, int indexed, int durable, const char **failed_call);

// a: fullName = firstName + " " + lastName, both removed, in place.
int floor_closure_migration(const char *path, const char **failed_call);

// b: one catalog write.
int floor_additive_migration(const char *path, const char **failed_call);

// c: the age stored as a string becomes an int, in place.
int floor_type_change(const char *path, const char **failed_call);

// a and c into a fresh tree, the migration floor: a read transaction keeps
// the old tree, people is emptied (mdb_drop without delete) and every new
// record appended after the last (MDB_APPEND), in one write transaction.
int floor_closure_migration_append(const char *path, const char **failed_call);
int floor_type_change_append(const char *path, const char **failed_call);

// d: open the file, read the catalog, close.
int floor_open_up_to_date(const char *path, const char **failed_call);

// f: sums every age in a cursor walk.
int floor_scan(MDB_env *env, uint64_t *sum, const char **failed_call);

// g: sums the ages of the people with the given ids.
int floor_lookups(MDB_env *env, const int64_t *ids, size_t count, uint64_t *sum, const char **failed_call);

// h: sums the ages of everyone named by one of the last names, through the
// index. names holds the names back to back; lengths the length of each.
int floor_index_lookups(
    MDB_env *env, const uint8_t *names, const size_t *lengths, size_t count, uint64_t *sum,
    const char **failed_call);

// The records, not the language: the same job as a on plain fixed 40-byte
// records (id, age, firstName[12], lastName[12] become id, age,
// fullName[24]), so that the cost of Strata's tagged varint layout can be
// told apart from the cost of LMDB's cursor.
int floor_create_fixed(const char *path, int64_t n, int durable, const char **failed_call);
int floor_closure_migration_fixed(const char *path, const char **failed_call);

// FNV-1a over every fullName of a fixed file, as Dataset.expected(.a).
int floor_checksum_fixed(const char *path, uint64_t *checksum, const char **failed_call);

#endif
