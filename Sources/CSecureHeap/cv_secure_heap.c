#include "cv_secure_heap.h"

#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

// Blocks of 16 << class bytes (16 B ... 4 KiB) are carved from 256 KiB chunks and kept on free lists; larger
// blocks get mappings of their own. Every block is preceded by a 16-byte header that records its class (or, for
// a mapping of its own, the mapping's size), so free and realloc know what they hold.

enum { CLASSES = 9, HEADER = 16, CHUNK = 256 << 10, LARGE = 0xff };

struct header {
    size_t size;   // usable bytes
    size_t klass;  // size class, or LARGE (LARGE | UNLOCKED when mlock refused the mapping)
};

enum { UNLOCKED = 0x100 };

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static void *free_lists[CLASSES];
static size_t mapped_bytes;
static size_t unlocked_bytes;

static void *map_secret(size_t bytes, int *locked) {
    void *start = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (start == MAP_FAILED) return NULL;
    madvise(start, bytes, MADV_DONTDUMP);
    *locked = mlock(start, bytes) == 0;
    __atomic_add_fetch(&mapped_bytes, bytes, __ATOMIC_RELAXED);
    if (!*locked) __atomic_add_fetch(&unlocked_bytes, bytes, __ATOMIC_RELAXED);
    return start;
}

static int class_for(size_t size) {
    size_t block = 16;
    for (int klass = 0; klass < CLASSES; klass++, block <<= 1) {
        if (size <= block) return klass;
    }
    return -1;
}

void *cv_secure_heap_malloc(size_t size, const char *file, int line) {
    (void)file;
    (void)line;
    if (size == 0) size = 1;
    int klass = class_for(size);
    if (klass < 0) {
        long page = sysconf(_SC_PAGESIZE);
        size_t bytes = (size + HEADER + (size_t)page - 1) / (size_t)page * (size_t)page;
        int locked = 0;
        struct header *head = map_secret(bytes, &locked);
        if (head == NULL) return NULL;
        head->size = bytes - HEADER;
        head->klass = locked ? LARGE : (LARGE | UNLOCKED);
        return (char *)head + HEADER;
    }
    size_t unit = HEADER + ((size_t)16 << klass);
    pthread_mutex_lock(&lock);
    if (free_lists[klass] == NULL) {
        int locked = 0;  // counted in unlocked_bytes when refused; chunks are never unmapped
        char *chunk = map_secret(CHUNK, &locked);
        (void)locked;
        if (chunk == NULL) {
            pthread_mutex_unlock(&lock);
            return NULL;
        }
        for (size_t offset = 0; offset + unit <= CHUNK; offset += unit) {
            struct header *head = (struct header *)(chunk + offset);
            head->size = (size_t)16 << klass;
            head->klass = (size_t)klass;
            *(void **)((char *)head + HEADER) = free_lists[klass];
            free_lists[klass] = (char *)head + HEADER;
        }
    }
    void *block = free_lists[klass];
    free_lists[klass] = *(void **)block;
    pthread_mutex_unlock(&lock);
    *(void **)block = NULL;
    return block;
}

void cv_secure_heap_free(void *block, const char *file, int line) {
    (void)file;
    (void)line;
    if (block == NULL) return;
    struct header *head = (struct header *)((char *)block - HEADER);
    explicit_bzero(block, head->size);
    if ((head->klass & LARGE) == LARGE) {
        size_t bytes = head->size + HEADER;
        if (head->klass & UNLOCKED) {
            __atomic_sub_fetch(&unlocked_bytes, bytes, __ATOMIC_RELAXED);
        } else {
            munlock(head, bytes);
        }
        munmap(head, bytes);
        __atomic_sub_fetch(&mapped_bytes, bytes, __ATOMIC_RELAXED);
        return;
    }
    pthread_mutex_lock(&lock);
    *(void **)block = free_lists[head->klass];
    free_lists[head->klass] = block;
    pthread_mutex_unlock(&lock);
}

void *cv_secure_heap_realloc(void *block, size_t size, const char *file, int line) {
    if (block == NULL) return cv_secure_heap_malloc(size, file, line);
    if (size == 0) {
        cv_secure_heap_free(block, file, line);
        return NULL;
    }
    struct header *head = (struct header *)((char *)block - HEADER);
    if (size <= head->size) return block;
    void *grown = cv_secure_heap_malloc(size, file, line);
    if (grown == NULL) return NULL;
    memcpy(grown, block, head->size);
    cv_secure_heap_free(block, file, line);
    return grown;
}

size_t cv_secure_heap_mapped_bytes(void) { return __atomic_load_n(&mapped_bytes, __ATOMIC_RELAXED); }

size_t cv_secure_heap_unlocked_bytes(void) { return __atomic_load_n(&unlocked_bytes, __ATOMIC_RELAXED); }
