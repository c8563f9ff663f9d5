// A library preloaded (LD_PRELOAD) into a process whose writes a test
// replays as a power loss would leave them (WriteRecorder.swift). For the
// files directly inside one folder, it appends to a log, in the order the
// calls returned, every call that changes what the disk may hold after a
// power loss: writes with their bytes, truncations, new files, renames and
// unlinks, and the flushes that make them durable (fsync and fdatasync of
// a file or of the folder, msync with MS_SYNC, and writes to a descriptor
// opened with O_DSYNC or O_SYNC, which LMDB uses for its meta pages).
// Lock files (names ending in "-lock") are left out: LMDB rebuilds them.
//
// Environment:
//   STRATA_RECORD_FOLDER  the folder, as its real path (no symbolic links)
//   STRATA_RECORD_LOG     the log, outside the folder
//   STRATA_FAIL_SYNC      optional: fsync and fdatasync of a path ending
//                         with this fail with EIO, and are not recorded
//
// Each record: a header of six little-endian fields (op, flags: u32;
// inode: u64; offset, length: i64; then u32 lengths of two names), the two
// names (base names within the folder), then `length` bytes for a write.
// A call that fails is not recorded. Calls on recorded files are made one
// at a time, under one lock, so that the log's order is the order in which
// they happened.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

enum {
    OP_WRITE = 1,
    OP_TRUNCATE = 2,
    OP_SYNC = 3,
    OP_RANGE_SYNC = 4,
    OP_FOLDER_SYNC = 5,
    OP_CREATE = 6,
    OP_RENAME = 7,
    OP_UNLINK = 8,
};

enum { FLAG_DURABLE = 1 };

struct header {
    uint32_t op;
    uint32_t flags;
    uint64_t inode;
    int64_t offset;
    int64_t length;
    uint32_t name_length;
    uint32_t second_name_length;
};

static ssize_t (*real_write)(int, const void *, size_t);
static ssize_t (*real_pwrite)(int, const void *, size_t, off_t);
static ssize_t (*real_writev)(int, const struct iovec *, int);
static ssize_t (*real_pwritev)(int, const struct iovec *, int, off_t);
static int (*real_ftruncate)(int, off_t);
static int (*real_fsync)(int);
static int (*real_fdatasync)(int);
static int (*real_msync)(void *, size_t, int);
static int (*real_renameat)(int, const char *, int, const char *);
static int (*real_unlinkat)(int, const char *, int);
static int (*real_open)(const char *, int, ...);
static int (*real_openat)(int, const char *, int, ...);

static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_mutex_t lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static char folder[PATH_MAX];
static size_t folder_length;
static const char *fail_sync;
static int log_fd = -1;

static void setup(void) {
    real_write = dlsym(RTLD_NEXT, "write");
    real_pwrite = dlsym(RTLD_NEXT, "pwrite");
    real_writev = dlsym(RTLD_NEXT, "writev");
    real_pwritev = dlsym(RTLD_NEXT, "pwritev");
    real_ftruncate = dlsym(RTLD_NEXT, "ftruncate");
    real_fsync = dlsym(RTLD_NEXT, "fsync");
    real_fdatasync = dlsym(RTLD_NEXT, "fdatasync");
    real_msync = dlsym(RTLD_NEXT, "msync");
    real_renameat = dlsym(RTLD_NEXT, "renameat");
    real_unlinkat = dlsym(RTLD_NEXT, "unlinkat");
    real_open = dlsym(RTLD_NEXT, "open");
    real_openat = dlsym(RTLD_NEXT, "openat");
    const char *watched = getenv("STRATA_RECORD_FOLDER");
    const char *log = getenv("STRATA_RECORD_LOG");
    fail_sync = getenv("STRATA_FAIL_SYNC");
    if (watched && log && strlen(watched) < sizeof(folder)) {
        strcpy(folder, watched);
        folder_length = strlen(folder);
        log_fd = real_open(log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    }
}

static int recording(void) {
    pthread_once(&once, setup);
    return log_fd >= 0;
}

// The base name of `path` when it is a recorded file directly inside the
// folder, else NULL; `path` must be absolute.
static const char *recorded_name(const char *path) {
    size_t length = strlen(path);
    if (length <= folder_length + 1 || strncmp(path, folder, folder_length) != 0 || path[folder_length] != '/')
        return NULL;
    const char *name = path + folder_length + 1;
    if (strchr(name, '/')) return NULL;
    size_t name_length = strlen(name);
    if (name_length >= 5 && strcmp(name + name_length - 5, "-lock") == 0) return NULL;
    return name;
}

// The path `descriptor` names, without the " (deleted)" of an unlinked file.
static int descriptor_path(int descriptor, char *path) {
    char link[64];
    snprintf(link, sizeof(link), "/proc/self/fd/%d", descriptor);
    ssize_t length = readlink(link, path, PATH_MAX - 1);
    if (length < 0) return 0;
    path[length] = 0;
    return 1;
}

// The inode of the recorded file open as `descriptor`, or 0.
static uint64_t recorded_descriptor(int descriptor, char *name) {
    char path[PATH_MAX];
    if (!recording() || !descriptor_path(descriptor, path)) return 0;
    const char *base = recorded_name(path);
    if (!base) return 0;
    struct stat info;
    if (fstat(descriptor, &info) != 0 || !S_ISREG(info.st_mode)) return 0;
    if (name) strcpy(name, base);
    return (uint64_t)info.st_ino;
}

static int is_folder(int descriptor) {
    char path[PATH_MAX];
    return recording() && descriptor_path(descriptor, path) && strcmp(path, folder) == 0;
}

// `path` made absolute against `at` (a descriptor of a folder, or
// AT_FDCWD), with its folder's symbolic links resolved.
static int absolute_path(int at, const char *path, char *result) {
    char joined[PATH_MAX];
    if (path[0] == '/') {
        snprintf(joined, sizeof(joined), "%s", path);
    } else {
        char base[PATH_MAX];
        if (at == AT_FDCWD) {
            if (!getcwd(base, sizeof(base))) return 0;
        } else if (!descriptor_path(at, base)) {
            return 0;
        }
        snprintf(joined, sizeof(joined), "%s/%s", base, path);
    }
    char *slash = strrchr(joined, '/');
    char parent[PATH_MAX];
    if (slash == joined) {
        strcpy(parent, "/");
    } else {
        *slash = 0;
        if (!realpath(joined, parent)) return 0;
        *slash = '/';
    }
    snprintf(result, PATH_MAX, "%s/%s", strcmp(parent, "/") == 0 ? "" : parent, slash + 1);
    return 1;
}

static const char *recorded_path(int at, const char *path, char *storage) {
    if (!recording() || !absolute_path(at, path, storage)) return NULL;
    return recorded_name(storage);
}

static void append(
    uint32_t op, uint32_t flags, uint64_t inode, int64_t offset, int64_t length, const char *name,
    const char *second_name, const struct iovec *data, int count) {
    struct header header = {op, flags, inode, offset, length, 0, 0};
    header.name_length = name ? (uint32_t)strlen(name) : 0;
    header.second_name_length = second_name ? (uint32_t)strlen(second_name) : 0;
    size_t bytes = op == OP_WRITE ? (size_t)length : 0;
    size_t size = sizeof(header) + header.name_length + header.second_name_length + bytes;
    char *record = malloc(size);
    if (!record) abort();
    char *end = record;
    memcpy(end, &header, sizeof(header));
    end += sizeof(header);
    memcpy(end, name, header.name_length);
    end += header.name_length;
    memcpy(end, second_name, header.second_name_length);
    end += header.second_name_length;
    for (int index = 0; index < count && bytes > 0; index++) {
        size_t part = data[index].iov_len < bytes ? data[index].iov_len : bytes;
        memcpy(end, data[index].iov_base, part);
        end += part;
        bytes -= part;
    }
    size_t written = 0;
    while (written < size) {
        ssize_t result = real_write(log_fd, record + written, size - written);
        if (result <= 0) abort();
        written += (size_t)result;
    }
    free(record);
}

static uint32_t durability(int descriptor) {
    int flags = fcntl(descriptor, F_GETFL);
    return flags != -1 && (flags & O_DSYNC) ? FLAG_DURABLE : 0;
}

static ssize_t record_write(int descriptor, const struct iovec *data, int count, off_t offset, int positioned,
    ssize_t (*call)(int, const struct iovec *, int, off_t)) {
    uint64_t inode = recorded_descriptor(descriptor, NULL);
    if (!inode) return call(descriptor, data, count, offset);
    pthread_mutex_lock(&lock);
    ssize_t result = call(descriptor, data, count, offset);
    if (result > 0) {
        int64_t at = positioned ? (int64_t)offset : (int64_t)lseek(descriptor, 0, SEEK_CUR) - result;
        append(OP_WRITE, durability(descriptor), inode, at, result, NULL, NULL, data, count);
    }
    pthread_mutex_unlock(&lock);
    return result;
}

static ssize_t call_write(int descriptor, const struct iovec *data, int count, off_t offset) {
    (void)offset;
    return count == 1 ? real_write(descriptor, data[0].iov_base, data[0].iov_len) : real_writev(descriptor, data, count);
}

static ssize_t call_pwrite(int descriptor, const struct iovec *data, int count, off_t offset) {
    (void)count;
    return real_pwrite(descriptor, data[0].iov_base, data[0].iov_len, offset);
}

static ssize_t call_pwritev(int descriptor, const struct iovec *data, int count, off_t offset) {
    return real_pwritev(descriptor, data, count, offset);
}

ssize_t write(int descriptor, const void *buffer, size_t size) {
    struct iovec data = {(void *)buffer, size};
    pthread_once(&once, setup);
    return record_write(descriptor, &data, 1, 0, 0, call_write);
}

ssize_t writev(int descriptor, const struct iovec *data, int count) {
    pthread_once(&once, setup);
    return record_write(descriptor, data, count, 0, 0, call_write);
}

ssize_t pwrite(int descriptor, const void *buffer, size_t size, off_t offset) {
    struct iovec data = {(void *)buffer, size};
    pthread_once(&once, setup);
    return record_write(descriptor, &data, 1, offset, 1, call_pwrite);
}

ssize_t pwrite64(int descriptor, const void *buffer, size_t size, off_t offset) {
    return pwrite(descriptor, buffer, size, offset);
}

ssize_t pwritev(int descriptor, const struct iovec *data, int count, off_t offset) {
    pthread_once(&once, setup);
    return record_write(descriptor, data, count, offset, 1, call_pwritev);
}

ssize_t pwritev64(int descriptor, const struct iovec *data, int count, off_t offset) {
    return pwritev(descriptor, data, count, offset);
}

int ftruncate(int descriptor, off_t length) {
    pthread_once(&once, setup);
    uint64_t inode = recorded_descriptor(descriptor, NULL);
    if (!inode) return real_ftruncate(descriptor, length);
    pthread_mutex_lock(&lock);
    int result = real_ftruncate(descriptor, length);
    if (result == 0) append(OP_TRUNCATE, 0, inode, 0, length, NULL, NULL, NULL, 0);
    pthread_mutex_unlock(&lock);
    return result;
}

int ftruncate64(int descriptor, off_t length) { return ftruncate(descriptor, length); }

static int record_sync(int descriptor, int (*call)(int)) {
    pthread_once(&once, setup);
    char path[PATH_MAX];
    if (fail_sync && recording() && descriptor_path(descriptor, path)) {
        size_t length = strlen(path), suffix = strlen(fail_sync);
        if (length >= suffix && strcmp(path + length - suffix, fail_sync) == 0) {
            errno = EIO;
            return -1;
        }
    }
    uint64_t inode = recorded_descriptor(descriptor, NULL);
    int folder_sync = !inode && is_folder(descriptor);
    if (!inode && !folder_sync) return call(descriptor);
    pthread_mutex_lock(&lock);
    int result = call(descriptor);
    if (result == 0) append(folder_sync ? OP_FOLDER_SYNC : OP_SYNC, 0, inode, 0, 0, NULL, NULL, NULL, 0);
    pthread_mutex_unlock(&lock);
    return result;
}

int fsync(int descriptor) {
    pthread_once(&once, setup);
    return record_sync(descriptor, real_fsync);
}

int fdatasync(int descriptor) {
    pthread_once(&once, setup);
    return record_sync(descriptor, real_fdatasync);
}

// The recorded file mapped at `address`, from /proc/self/maps: its inode
// and the file offset of `address`.
static uint64_t mapped_file(void *address, int64_t *offset) {
    FILE *maps = fopen("/proc/self/maps", "re");
    if (!maps) return 0;
    char line[PATH_MAX + 256];
    uint64_t inode = 0;
    while (fgets(line, sizeof(line), maps)) {
        unsigned long start, end, file_offset, node;
        char path[PATH_MAX] = "";
        if (sscanf(line, "%lx-%lx %*s %lx %*s %lu %4095s", &start, &end, &file_offset, &node, path) < 4) continue;
        if ((uintptr_t)address < start || (uintptr_t)address >= end) continue;
        if (recorded_name(path)) {
            inode = node;
            *offset = (int64_t)(file_offset + ((uintptr_t)address - start));
        }
        break;
    }
    fclose(maps);
    return inode;
}

int msync(void *address, size_t length, int flags) {
    pthread_once(&once, setup);
    int64_t offset = 0;
    uint64_t inode = recording() && (flags & MS_SYNC) ? mapped_file(address, &offset) : 0;
    if (!inode) return real_msync(address, length, flags);
    pthread_mutex_lock(&lock);
    int result = real_msync(address, length, flags);
    if (result == 0) append(OP_RANGE_SYNC, 0, inode, offset, (int64_t)length, NULL, NULL, NULL, 0);
    pthread_mutex_unlock(&lock);
    return result;
}

static int record_rename(int from_at, const char *from, int to_at, const char *to) {
    char from_storage[PATH_MAX], to_storage[PATH_MAX];
    const char *from_name = recorded_path(from_at, from, from_storage);
    const char *to_name = recorded_path(to_at, to, to_storage);
    if (!from_name && !to_name) return real_renameat(from_at, from, to_at, to);
    pthread_mutex_lock(&lock);
    struct stat info;
    uint64_t inode = fstatat(from_at, from, &info, AT_SYMLINK_NOFOLLOW) == 0 ? (uint64_t)info.st_ino : 0;
    int result = real_renameat(from_at, from, to_at, to);
    if (result == 0) append(OP_RENAME, 0, inode, 0, 0, from_name ? from_name : "", to_name ? to_name : "", NULL, 0);
    pthread_mutex_unlock(&lock);
    return result;
}

int rename(const char *from, const char *to) {
    pthread_once(&once, setup);
    return record_rename(AT_FDCWD, from, AT_FDCWD, to);
}

int renameat(int from_at, const char *from, int to_at, const char *to) {
    pthread_once(&once, setup);
    return record_rename(from_at, from, to_at, to);
}

static int record_unlink(int at, const char *path, int flags) {
    char storage[PATH_MAX];
    const char *name = (flags & AT_REMOVEDIR) ? NULL : recorded_path(at, path, storage);
    if (!name) return real_unlinkat(at, path, flags);
    pthread_mutex_lock(&lock);
    int result = real_unlinkat(at, path, flags);
    if (result == 0) append(OP_UNLINK, 0, 0, 0, 0, name, NULL, NULL, 0);
    pthread_mutex_unlock(&lock);
    return result;
}

int unlink(const char *path) {
    pthread_once(&once, setup);
    return record_unlink(AT_FDCWD, path, 0);
}

int unlinkat(int at, const char *path, int flags) {
    pthread_once(&once, setup);
    return record_unlink(at, path, flags);
}

// An open that may create or empty a file: a new file is recorded with its
// inode, an existing one that O_TRUNC empties as a truncation.
static int record_open(int at, const char *path, int flags, mode_t mode) {
    char storage[PATH_MAX];
    const char *name = (flags & (O_CREAT | O_TRUNC)) ? recorded_path(at, path, storage) : NULL;
    if (!name) return real_openat(at, path, flags, mode);
    pthread_mutex_lock(&lock);
    struct stat info;
    int existed = fstatat(at, path, &info, 0) == 0;
    int result = real_openat(at, path, flags, mode);
    if (result >= 0 && fstat(result, &info) == 0) {
        if (!existed)
            append(OP_CREATE, 0, (uint64_t)info.st_ino, 0, 0, name, NULL, NULL, 0);
        else if ((flags & O_TRUNC) && (flags & O_ACCMODE) != O_RDONLY)
            append(OP_TRUNCATE, 0, (uint64_t)info.st_ino, 0, 0, NULL, NULL, NULL, 0);
    }
    pthread_mutex_unlock(&lock);
    return result;
}

static mode_t mode_argument(int flags, va_list arguments) {
    return (flags & (O_CREAT | __O_TMPFILE)) ? (mode_t)va_arg(arguments, int) : 0;
}

int open(const char *path, int flags, ...) {
    va_list arguments;
    va_start(arguments, flags);
    mode_t mode = mode_argument(flags, arguments);
    va_end(arguments);
    pthread_once(&once, setup);
    return record_open(AT_FDCWD, path, flags, mode);
}

int open64(const char *path, int flags, ...) {
    va_list arguments;
    va_start(arguments, flags);
    mode_t mode = mode_argument(flags, arguments);
    va_end(arguments);
    pthread_once(&once, setup);
    return record_open(AT_FDCWD, path, flags, mode);
}

int openat(int at, const char *path, int flags, ...) {
    va_list arguments;
    va_start(arguments, flags);
    mode_t mode = mode_argument(flags, arguments);
    va_end(arguments);
    pthread_once(&once, setup);
    return record_open(at, path, flags, mode);
}

int openat64(int at, const char *path, int flags, ...) {
    va_list arguments;
    va_start(arguments, flags);
    mode_t mode = mode_argument(flags, arguments);
    va_end(arguments);
    pthread_once(&once, setup);
    return record_open(at, path, flags, mode);
}
