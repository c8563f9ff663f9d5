#include "clmdb_floor.h"

#include <lmdb.h>
#include <stdio.h>
#include <string.h>

#define CHECK(expr, name)          \
    do {                           \
        int rc_ = (expr);          \
        if (rc_ != 0) {            \
            *failed_call = (name); \
            return rc_;            \
        }                          \
    } while (0)

// The same as CHECK, but aborts the transaction first.
#define CHECK_TXN(txn, expr, name) \
    do {                           \
        int rc_ = (expr);          \
        if (rc_ != 0) {            \
            mdb_txn_abort(txn);    \
            *failed_call = (name); \
            return rc_;            \
        }                          \
    } while (0)

enum { TAG_INT = 3, TAG_STRING = 5, FIXED_SIZE = 40, NAME_SIZE = 12 };

// Strata's record layout (docs/FileFormat.md).

static inline uint8_t *put_varint(uint8_t *out, uint64_t value) {
    while (value >= 0x80) {
        *out++ = (uint8_t)(value & 0x7F) | 0x80;
        value >>= 7;
    }
    *out++ = (uint8_t)value;
    return out;
}

static inline uint64_t get_varint(const uint8_t **p) {
    uint64_t result = 0;
    unsigned shift = 0;
    for (;;) {
        uint8_t byte = *(*p)++;
        result |= (uint64_t)(byte & 0x7F) << shift;
        if (byte < 0x80) return result;
        shift += 7;
    }
}

static inline uint8_t *put_header(uint8_t *out, uint64_t version, uint64_t count) {
    *out++ = 1;
    out = put_varint(out, version);
    return put_varint(out, count);
}

static inline uint8_t *put_int(uint8_t *out, uint64_t id, int64_t value) {
    out = put_varint(out, id);
    *out++ = TAG_INT;
    return put_varint(out, ((uint64_t)value << 1) ^ (uint64_t)(value >> 63));
}

static inline uint8_t *put_string(uint8_t *out, uint64_t id, const uint8_t *bytes, size_t length) {
    out = put_varint(out, id);
    *out++ = TAG_STRING;
    out = put_varint(out, length);
    memcpy(out, bytes, length);
    return out + length;
}

static inline int64_t unzigzag(uint64_t raw) { return (int64_t)(raw >> 1) ^ -(int64_t)(raw & 1); }

// One field of a record: an int, or a string as a view into the record.
typedef struct {
    int64_t integer;
    const uint8_t *bytes;
    size_t length;
} field;

static inline const uint8_t *get_field(const uint8_t *p, field *f) {
    (void)get_varint(&p);
    uint8_t tag = *p++;
    if (tag == TAG_INT) {
        f->integer = unzigzag(get_varint(&p));
    } else {
        f->length = (size_t)get_varint(&p);
        f->bytes = p;
        p += f->length;
    }
    return p;
}

// The four fields of a version-1 record, in order.
static inline void get_fields(const MDB_val *value, field fields[4]) {
    const uint8_t *p = (const uint8_t *)value->mv_data + 1;
    (void)get_varint(&p);
    (void)get_varint(&p);
    for (int i = 0; i < 4; i++) p = get_field(p, &fields[i]);
}

// The age: the int field with id 4 (or 5 after a type change).
static inline int64_t get_age(const MDB_val *value) {
    const uint8_t *p = (const uint8_t *)value->mv_data + 1;
    (void)get_varint(&p);
    uint64_t count = get_varint(&p);
    for (uint64_t i = 0; i < count; i++) {
        uint64_t id = get_varint(&p);
        uint8_t tag = *p++;
        if (tag == TAG_INT) {
            uint64_t raw = get_varint(&p);
            if (id >= 4) return unzigzag(raw);
        } else {
            p += get_varint(&p);
        }
    }
    return 0;
}

// The primary key of an int: the sign bit flipped, big-endian, so keys sort
// as the ints do.
static inline void put_key(uint8_t out[8], int64_t id) {
    uint64_t k = (uint64_t)id ^ (UINT64_C(1) << 63);
    for (int i = 0; i < 8; i++) out[i] = (uint8_t)(k >> (56 - 8 * i));
}

// Decimal digits of value, without the sign (ids and ages are never negative).
static inline size_t put_decimal(uint8_t *out, uint64_t value) {
    uint8_t digits[20];
    size_t count = 0;
    do {
        digits[count++] = (uint8_t)('0' + value % 10);
        value /= 10;
    } while (value != 0);
    for (size_t i = 0; i < count; i++) out[i] = digits[count - 1 - i];
    return count;
}

// Dataset.firstName / lastName: "First" + id % 1000, "Last" + id % 10000.
static inline size_t first_name(uint8_t *out, int64_t id) {
    memcpy(out, "First", 5);
    return 5 + put_decimal(out + 5, (uint64_t)(id % 1000));
}

static inline size_t last_name(uint8_t *out, int64_t id) {
    memcpy(out, "Last", 4);
    return 4 + put_decimal(out + 4, (uint64_t)(id % 10000));
}

// Environments and transactions.

int floor_open(const char *path, int durable, MDB_env **env, const char **failed_call) {
    CHECK(mdb_env_create(env), "mdb_env_create");
    int rc = mdb_env_set_maxdbs(*env, 8);
    if (rc == 0) rc = mdb_env_set_mapsize(*env, (size_t)8 << 30);
    if (rc == 0) rc = mdb_env_open(*env, path, MDB_NOSUBDIR | MDB_NOTLS | (durable ? 0 : MDB_NOSYNC), 0644);
    if (rc != 0) {
        mdb_env_close(*env);
        *env = NULL;
        *failed_call = "mdb_env_open";
    }
    return rc;
}

void floor_close(MDB_env *env) { mdb_env_close(env); }

// Begins a write transaction with the people and meta databases open.
static int begin_write(MDB_env *env, MDB_txn **txn, MDB_dbi *people, MDB_dbi *meta, const char **failed_call) {
    CHECK(mdb_txn_begin(env, NULL, 0, txn), "mdb_txn_begin");
    CHECK_TXN(*txn, mdb_dbi_open(*txn, "people", MDB_CREATE, people), "mdb_dbi_open");
    CHECK_TXN(*txn, mdb_dbi_open(*txn, "meta", MDB_CREATE, meta), "mdb_dbi_open");
    return 0;
}

static int put_catalog(MDB_txn *txn, MDB_dbi meta, int version) {
    char catalog[64];
    int length = snprintf(catalog, sizeof catalog, "{\"schemaVersion\":%d,\"types\":[]}", version);
    MDB_val key = {7, (void *)"catalog"};
    MDB_val value = {(size_t)length, catalog};
    return mdb_put(txn, meta, &key, &value, 0);
}

int floor_create(const char *path, int64_t n, int age_text, int indexed, int durable, const char **failed_call) {
    MDB_env *env;
    int rc = floor_open(path, durable, &env, failed_call);
    if (rc != 0) return rc;
    MDB_txn *txn;
    MDB_dbi people, meta, index = 0;
    rc = begin_write(env, &txn, &people, &meta, failed_call);
    if (rc != 0) {
        mdb_env_close(env);
        return rc;
    }
    if (indexed) {
        rc = mdb_dbi_open(txn, "people.lastName", MDB_CREATE | MDB_DUPSORT, &index);
        if (rc != 0) *failed_call = "mdb_dbi_open";
    }
    uint8_t record[128], key[8], name[16], last[16], text[24];
    for (int64_t id = 0; rc == 0 && id < n; id++) {
        uint8_t *out = put_header(record, 1, 4);
        out = put_int(out, 1, id);
        out = put_string(out, 2, name, first_name(name, id));
        size_t last_length = last_name(last + 1, id);
        out = put_string(out, 3, last + 1, last_length);
        if (age_text) {
            out = put_string(out, 4, text, put_decimal(text, (uint64_t)(id % 90)));
        } else {
            out = put_int(out, 4, id % 90);
        }
        put_key(key, id);
        MDB_val k = {8, key};
        MDB_val v = {(size_t)(out - record), record};
        rc = mdb_put(txn, people, &k, &v, MDB_APPEND);
        if (rc != 0) {
            *failed_call = "mdb_put";
        } else if (indexed) {
            // Strata's index key of a string: its tag, then its bytes.
            last[0] = TAG_STRING;
            MDB_val ik = {last_length + 1, last};
            MDB_val iv = {8, key};
            rc = mdb_put(txn, index, &ik, &iv, 0);
            if (rc != 0) *failed_call = "mdb_put";
        }
    }
    if (rc == 0) {
        rc = put_catalog(txn, meta, 1);
        if (rc != 0) *failed_call = "mdb_put";
    }
    if (rc == 0) {
        rc = mdb_txn_commit(txn);
        if (rc != 0) *failed_call = "mdb_txn_commit";
    } else {
        mdb_txn_abort(txn);
    }
    mdb_env_close(env);
    return rc;
}

// Rewrites every record of people, then writes the catalog at version 2
// and commits. transform writes the new record into out and returns its
// length.
//
// In place (appending 0): through one write cursor, each record replaced
// where it is (MDB_CURRENT).
//
// Into a fresh tree (appending 1), the migration floor: a read transaction
// begun first keeps the old tree readable; the write transaction empties
// people (mdb_drop without delete: its pages go to the free list, its root
// is reset) and appends each new record after the last (MDB_APPEND), in the
// order the read cursor walks the old ones, so every page is written once,
// full.
typedef size_t (*transform_fn)(const MDB_val *record, uint8_t *out);

static int begin_read(MDB_env *env, MDB_txn **txn, MDB_dbi *people, const char **failed_call);

static int rewrite(const char *path, transform_fn transform, int appending, const char **failed_call) {
    MDB_env *env;
    int rc = floor_open(path, 1, &env, failed_call);
    if (rc != 0) return rc;
    MDB_txn *snapshot = NULL, *txn;
    MDB_dbi old_people = 0, people, meta;
    if (appending) rc = begin_read(env, &snapshot, &old_people, failed_call);
    if (rc == 0) rc = begin_write(env, &txn, &people, &meta, failed_call);
    if (rc != 0) {
        if (snapshot != NULL) mdb_txn_abort(snapshot);
        mdb_env_close(env);
        return rc;
    }
    MDB_cursor *reader = NULL, *writer = NULL;
    if (appending && (rc = mdb_drop(txn, people, 0)) != 0) {
        *failed_call = "mdb_drop";
    } else if ((rc = mdb_cursor_open(appending ? snapshot : txn, appending ? old_people : people, &reader)) != 0 ||
               (appending && (rc = mdb_cursor_open(txn, people, &writer)) != 0)) {
        *failed_call = "mdb_cursor_open";
    } else {
        uint8_t out[128], key_copy[8];
        MDB_val key, value;
        rc = mdb_cursor_get(reader, &key, &value, MDB_FIRST);
        while (rc == 0) {
            MDB_val v = {transform(&value, out), out};
            if (appending) {
                // The key points into the snapshot's pages, which no write
                // of this transaction touches.
                rc = mdb_cursor_put(writer, &key, &v, MDB_APPEND);
            } else {
                // The put may move the page the key points into (DESIGN.md §4.5).
                memcpy(key_copy, key.mv_data, 8);
                MDB_val k = {8, key_copy};
                rc = mdb_cursor_put(reader, &k, &v, MDB_CURRENT);
            }
            if (rc != 0) {
                *failed_call = "mdb_cursor_put";
                break;
            }
            rc = mdb_cursor_get(reader, &key, &value, MDB_NEXT);
        }
        if (rc == MDB_NOTFOUND) {
            rc = 0;
        } else if (rc != 0 && *failed_call == NULL) {
            *failed_call = "mdb_cursor_get";
        }
    }
    if (writer != NULL) mdb_cursor_close(writer);
    if (reader != NULL) mdb_cursor_close(reader);
    if (rc == 0) {
        rc = put_catalog(txn, meta, 2);
        if (rc != 0) *failed_call = "mdb_put";
    }
    if (rc == 0) {
        rc = mdb_txn_commit(txn);
        if (rc != 0) *failed_call = "mdb_txn_commit";
    } else {
        mdb_txn_abort(txn);
    }
    if (snapshot != NULL) mdb_txn_abort(snapshot);
    mdb_env_close(env);
    return rc;
}

static size_t full_name(const MDB_val *record, uint8_t *out) {
    field f[4];
    get_fields(record, f);
    uint8_t *p = put_header(out, 2, 3);
    p = put_int(p, 1, f[0].integer);
    p = put_int(p, 4, f[3].integer);
    p = put_varint(p, 5);
    *p++ = TAG_STRING;
    p = put_varint(p, f[1].length + 1 + f[2].length);
    memcpy(p, f[1].bytes, f[1].length);
    p += f[1].length;
    *p++ = ' ';
    memcpy(p, f[2].bytes, f[2].length);
    return (size_t)(p + f[2].length - out);
}

static size_t age_to_int(const MDB_val *record, uint8_t *out) {
    field f[4];
    get_fields(record, f);
    int64_t age = 0;
    for (size_t i = 0; i < f[3].length; i++) age = age * 10 + (f[3].bytes[i] - '0');
    uint8_t *p = put_header(out, 2, 4);
    p = put_int(p, 1, f[0].integer);
    p = put_string(p, 2, f[1].bytes, f[1].length);
    p = put_string(p, 3, f[2].bytes, f[2].length);
    p = put_int(p, 5, age);
    return (size_t)(p - out);
}

int floor_closure_migration(const char *path, const char **failed_call) {
    *failed_call = NULL;
    return rewrite(path, full_name, 0, failed_call);
}

int floor_type_change(const char *path, const char **failed_call) {
    *failed_call = NULL;
    return rewrite(path, age_to_int, 0, failed_call);
}

int floor_closure_migration_append(const char *path, const char **failed_call) {
    *failed_call = NULL;
    return rewrite(path, full_name, 1, failed_call);
}

int floor_type_change_append(const char *path, const char **failed_call) {
    *failed_call = NULL;
    return rewrite(path, age_to_int, 1, failed_call);
}

int floor_additive_migration(const char *path, const char **failed_call) {
    MDB_env *env;
    int rc = floor_open(path, 1, &env, failed_call);
    if (rc != 0) return rc;
    MDB_txn *txn;
    MDB_dbi people, meta;
    rc = begin_write(env, &txn, &people, &meta, failed_call);
    if (rc == 0) {
        rc = put_catalog(txn, meta, 2);
        if (rc != 0) {
            *failed_call = "mdb_put";
            mdb_txn_abort(txn);
        } else {
            rc = mdb_txn_commit(txn);
            if (rc != 0) *failed_call = "mdb_txn_commit";
        }
    }
    mdb_env_close(env);
    return rc;
}

int floor_open_up_to_date(const char *path, const char **failed_call) {
    MDB_env *env;
    int rc = floor_open(path, 1, &env, failed_call);
    if (rc != 0) return rc;
    MDB_txn *txn;
    MDB_dbi people, meta;
    MDB_val key = {7, (void *)"catalog"}, value;
    rc = mdb_txn_begin(env, NULL, MDB_RDONLY, &txn);
    if (rc != 0) {
        *failed_call = "mdb_txn_begin";
    } else {
        const char *call = "mdb_dbi_open";
        rc = mdb_dbi_open(txn, "people", 0, &people);
        if (rc == 0) rc = mdb_dbi_open(txn, "meta", 0, &meta);
        if (rc == 0) {
            call = "mdb_get";
            rc = mdb_get(txn, meta, &key, &value);
        }
        if (rc == 0) {
            call = "mdb_txn_commit";
            rc = mdb_txn_commit(txn);
        } else {
            mdb_txn_abort(txn);
        }
        if (rc != 0) *failed_call = call;
    }
    mdb_env_close(env);
    return rc;
}

// Reads.

static int begin_read(MDB_env *env, MDB_txn **txn, MDB_dbi *people, const char **failed_call) {
    CHECK(mdb_txn_begin(env, NULL, MDB_RDONLY, txn), "mdb_txn_begin");
    CHECK_TXN(*txn, mdb_dbi_open(*txn, "people", 0, people), "mdb_dbi_open");
    return 0;
}

int floor_scan(MDB_env *env, uint64_t *sum, const char **failed_call) {
    MDB_txn *txn;
    MDB_dbi people;
    int rc = begin_read(env, &txn, &people, failed_call);
    if (rc != 0) return rc;
    MDB_cursor *cursor;
    CHECK_TXN(txn, mdb_cursor_open(txn, people, &cursor), "mdb_cursor_open");
    int64_t total = 0;
    MDB_val key, value;
    rc = mdb_cursor_get(cursor, &key, &value, MDB_FIRST);
    while (rc == 0) {
        total += get_age(&value);
        rc = mdb_cursor_get(cursor, &key, &value, MDB_NEXT);
    }
    mdb_cursor_close(cursor);
    mdb_txn_abort(txn);
    *sum = (uint64_t)total;
    if (rc != MDB_NOTFOUND) {
        *failed_call = "mdb_cursor_get";
        return rc;
    }
    return 0;
}

int floor_lookups(MDB_env *env, const int64_t *ids, size_t count, uint64_t *sum, const char **failed_call) {
    MDB_txn *txn;
    MDB_dbi people;
    int rc = begin_read(env, &txn, &people, failed_call);
    if (rc != 0) return rc;
    int64_t total = 0;
    uint8_t bytes[8];
    for (size_t i = 0; i < count; i++) {
        put_key(bytes, ids[i]);
        MDB_val key = {8, bytes}, value;
        CHECK_TXN(txn, mdb_get(txn, people, &key, &value), "mdb_get");
        total += get_age(&value);
    }
    mdb_txn_abort(txn);
    *sum = (uint64_t)total;
    return 0;
}

int floor_index_lookups(
    MDB_env *env, const uint8_t *names, const size_t *lengths, size_t count, uint64_t *sum,
    const char **failed_call) {
    MDB_txn *txn;
    MDB_dbi people, index;
    int rc = begin_read(env, &txn, &people, failed_call);
    if (rc != 0) return rc;
    CHECK_TXN(txn, mdb_dbi_open(txn, "people.lastName", MDB_DUPSORT, &index), "mdb_dbi_open");
    MDB_cursor *cursor;
    CHECK_TXN(txn, mdb_cursor_open(txn, index, &cursor), "mdb_cursor_open");
    int64_t total = 0;
    uint8_t index_key[64];
    for (size_t i = 0; i < count; names += lengths[i], i++) {
        index_key[0] = TAG_STRING;
        memcpy(index_key + 1, names, lengths[i]);
        MDB_val key = {lengths[i] + 1, index_key}, object_key;
        rc = mdb_cursor_get(cursor, &key, &object_key, MDB_SET_KEY);
        while (rc == 0) {
            MDB_val value;
            rc = mdb_get(txn, people, &object_key, &value);
            if (rc != 0) {
                mdb_cursor_close(cursor);
                mdb_txn_abort(txn);
                *failed_call = "mdb_get";
                return rc;
            }
            total += get_age(&value);
            rc = mdb_cursor_get(cursor, &key, &object_key, MDB_NEXT_DUP);
        }
    }
    mdb_cursor_close(cursor);
    mdb_txn_abort(txn);
    *sum = (uint64_t)total;
    return 0;
}

// Fixed 40-byte records: id and age as 8-byte little-endian ints, then two
// zero-padded 12-byte names (v1) or one 24-byte fullName (v2).

int floor_create_fixed(const char *path, int64_t n, int durable, const char **failed_call) {
    MDB_env *env;
    int rc = floor_open(path, durable, &env, failed_call);
    if (rc != 0) return rc;
    MDB_txn *txn;
    MDB_dbi people, meta;
    rc = begin_write(env, &txn, &people, &meta, failed_call);
    if (rc != 0) {
        mdb_env_close(env);
        return rc;
    }
    uint8_t record[FIXED_SIZE], key[8];
    for (int64_t id = 0; rc == 0 && id < n; id++) {
        int64_t age = id % 90;
        memset(record, 0, sizeof record);
        memcpy(record, &id, 8);
        memcpy(record + 8, &age, 8);
        first_name(record + 16, id);
        last_name(record + 16 + NAME_SIZE, id);
        put_key(key, id);
        MDB_val k = {8, key}, v = {FIXED_SIZE, record};
        rc = mdb_put(txn, people, &k, &v, MDB_APPEND);
        if (rc != 0) *failed_call = "mdb_put";
    }
    if (rc == 0) {
        rc = mdb_txn_commit(txn);
        if (rc != 0) *failed_call = "mdb_txn_commit";
    } else {
        mdb_txn_abort(txn);
    }
    mdb_env_close(env);
    return rc;
}

static size_t fixed_full_name(const MDB_val *record, uint8_t *out) {
    const uint8_t *in = record->mv_data;
    const uint8_t *first = in + 16, *last = in + 16 + NAME_SIZE;
    size_t first_length = strnlen((const char *)first, NAME_SIZE);
    size_t last_length = strnlen((const char *)last, NAME_SIZE);
    memcpy(out, in, 16);
    memset(out + 16, 0, FIXED_SIZE - 16);
    memcpy(out + 16, first, first_length);
    out[16 + first_length] = ' ';
    size_t room = FIXED_SIZE - 17 - first_length;
    memcpy(out + 17 + first_length, last, last_length < room ? last_length : room);
    return FIXED_SIZE;
}

int floor_closure_migration_fixed(const char *path, const char **failed_call) {
    *failed_call = NULL;
    return rewrite(path, fixed_full_name, 0, failed_call);
}

int floor_checksum_fixed(const char *path, uint64_t *checksum, const char **failed_call) {
    MDB_env *env;
    int rc = floor_open(path, 1, &env, failed_call);
    if (rc != 0) return rc;
    MDB_txn *txn;
    MDB_dbi people;
    rc = begin_read(env, &txn, &people, failed_call);
    if (rc != 0) {
        mdb_env_close(env);
        return rc;
    }
    MDB_cursor *cursor;
    rc = mdb_cursor_open(txn, people, &cursor);
    uint64_t hash = UINT64_C(0xcbf29ce484222325);
    if (rc != 0) {
        *failed_call = "mdb_cursor_open";
    } else {
        MDB_val key, value;
        rc = mdb_cursor_get(cursor, &key, &value, MDB_FIRST);
        while (rc == 0) {
            const uint8_t *name = (const uint8_t *)value.mv_data + 16;
            size_t length = strnlen((const char *)name, FIXED_SIZE - 16);
            for (size_t i = 0; i < length; i++) hash = (hash ^ name[i]) * UINT64_C(0x100000001b3);
            hash = hash * UINT64_C(0x100000001b3);
            rc = mdb_cursor_get(cursor, &key, &value, MDB_NEXT);
        }
        if (rc == MDB_NOTFOUND) {
            rc = 0;
        } else {
            *failed_call = "mdb_cursor_get";
        }
        mdb_cursor_close(cursor);
    }
    mdb_txn_abort(txn);
    mdb_env_close(env);
    *checksum = hash;
    return rc;
}
