/* fsync_baseline: the anchor of the `store` suite. It appends fixed-size records to a fresh file
 * in batches, one write(2) and one fdatasync(2) per batch, which is the physical limit a
 * group-commit store on this disk works against. Like the store, it keeps 4 MiB of zeros written
 * ahead of the appends (extending the file once per 4 MiB), so that most syncs write data only.
 *
 * usage: fsync_baseline DIRECTORY BATCH SECONDS [RECORD_BYTES]
 * prints one JSON line:
 *   {"batch":16,"record_bytes":192,"records":N,"fsyncs":F,"seconds":S,"records_per_second":R,
 *    "commit_us":{"p50":…,"p99":…,"p999":…}}
 * where commit_us is the time from the start of a batch's write to the end of its fsync (what a
 * writer in that batch waits at best). The file is removed at the end. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_SAMPLES 2000000

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int compare_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double percentile(const double *sorted, size_t n, double p)
{
    if (n == 0) return 0;
    size_t rank = (size_t)(p / 100.0 * (double)(n - 1) + 0.5);
    return sorted[rank < n ? rank : n - 1];
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: %s DIRECTORY BATCH SECONDS [RECORD_BYTES]\n", argv[0]);
        return 64;
    }
    const char *dir = argv[1];
    long batch = atol(argv[2]);
    double seconds = atof(argv[3]);
    long record_bytes = argc > 4 ? atol(argv[4]) : 192;
    if (batch < 1 || batch > 4096 || seconds <= 0 || record_bytes < 1 || record_bytes > 65536) {
        fprintf(stderr, "fsync_baseline: bad BATCH, SECONDS or RECORD_BYTES\n");
        return 64;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/fsync-baseline-%ld.log", dir, (long)getpid());
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        fprintf(stderr, "fsync_baseline: cannot create %s: %s\n", path, strerror(errno));
        return 1;
    }
    size_t chunk = (size_t)(batch * record_bytes);
    unsigned char *buffer = malloc(chunk);
    double *samples = malloc(sizeof(double) * MAX_SAMPLES);
    if (buffer == NULL || samples == NULL) return 1;
    for (size_t i = 0; i < chunk; i++) buffer[i] = (unsigned char)(i * 131u + 7u);
    enum { PREALLOCATION = 4 << 20 };
    unsigned char *zeros = calloc(1, PREALLOCATION);
    if (zeros == NULL) return 1;
    off_t end = 0, allocated = 0;

    uint64_t records = 0, fsyncs = 0;
    size_t n = 0;
    double begin = now_seconds();
    double deadline = begin + seconds;
    double t = begin;
    while (t < deadline) {
        double start = t;
        /* a record header changes per batch so no layer can dedupe it */
        memcpy(buffer, &records, sizeof records);
        ssize_t written = pwrite(fd, buffer, chunk, end);
        if (written != (ssize_t)chunk) {
            fprintf(stderr, "fsync_baseline: write failed: %s\n", strerror(errno));
            return 1;
        }
        end += (off_t)chunk;
        if (end > allocated) {
            if (pwrite(fd, zeros, PREALLOCATION, end) != PREALLOCATION) {
                fprintf(stderr, "fsync_baseline: write failed: %s\n", strerror(errno));
                return 1;
            }
            allocated = end + PREALLOCATION;
        }
        if (fdatasync(fd) != 0) {
            fprintf(stderr, "fsync_baseline: fdatasync failed: %s\n", strerror(errno));
            return 1;
        }
        t = now_seconds();
        if (n < MAX_SAMPLES) samples[n++] = (t - start) * 1e6;
        records += (uint64_t)batch;
        fsyncs++;
    }
    double elapsed = t - begin;
    close(fd);
    unlink(path);
    qsort(samples, n, sizeof(double), compare_double);
    printf("{\"batch\":%ld,\"record_bytes\":%ld,\"records\":%llu,\"fsyncs\":%llu,\"seconds\":%.6f,"
           "\"records_per_second\":%.1f,\"commit_us\":{\"p50\":%.1f,\"p99\":%.1f,\"p999\":%.1f}}\n",
           batch, record_bytes, (unsigned long long)records, (unsigned long long)fsyncs, elapsed,
           (double)records / elapsed, percentile(samples, n, 50), percentile(samples, n, 99),
           percentile(samples, n, 99.9));
    free(buffer);
    free(zeros);
    free(samples);
    return 0;
}
