/* crypto_baseline: the anchor of the `crypto` suite. It does CardVault's tokenize and detokenize
 * work with OpenSSL directly, on one thread per core, as fast as plain C reasonably can:
 *
 *   tokenize   = 16-byte random token and 12-byte nonce taken from a RAND_bytes pool
 *                + HMAC-SHA256 fingerprint of the PAN (key set once, context re-initialised)
 *                + AES-256-GCM seal of a 100-byte card record, AAD = token || key version,
 *                  full 16-byte tag;
 *   detokenize = AES-256-GCM open (tag verified) of a sealed record
 *                + HMAC-SHA256 of the PAN read from the plaintext, compared in constant time
 *                  with the stored fingerprint.
 *
 * usage: crypto_baseline tokenize|detokenize SECONDS [THREADS]
 * prints one JSON line: {"work":"tokenize","threads":1,"ops":N,"seconds":S,"ops_per_second":R}
 * (ops and the rate are summed over threads, each timed from the end of its set-up; divide by
 * threads for a per-core figure). */
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "card_record.h"

#define POOL_BYTES 4096
#define TOKEN_LEN 16
#define NONCE_LEN 12
#define TAG_LEN 16
#define FP_LEN 32
#define SEALED_SET 1024

static unsigned char data_key[32];
static unsigned char fingerprint_key[32];
static const uint32_t key_version = 1;

/* Everything one worker thread owns. */
struct worker {
    int detokenize;
    double seconds;
    uint64_t ops;
    double elapsed;
    int failed;
};

/* Where workers leave a byte of every result, so the compiler cannot drop the work. */
static volatile uint64_t sink_all;

/* A random pool: one RAND_bytes call per 4 KiB instead of one per small value. */
struct pool {
    unsigned char bytes[POOL_BYTES];
    size_t used;
};

static void pool_take(struct pool *p, unsigned char *out, size_t n)
{
    if (p->used + n > POOL_BYTES) {
        if (RAND_bytes(p->bytes, POOL_BYTES) != 1) abort();
        p->used = 0;
    }
    memcpy(out, p->bytes + p->used, n);
    p->used += n;
}

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Per-thread OpenSSL state, made once and reused for every operation. */
struct crypto {
    EVP_CIPHER_CTX *seal;
    EVP_CIPHER_CTX *open;
    EVP_MAC_CTX *mac;
};

static int crypto_init(struct crypto *c)
{
    EVP_CIPHER *gcm = EVP_CIPHER_fetch(NULL, "AES-256-GCM", NULL);
    EVP_MAC *hmac = EVP_MAC_fetch(NULL, "HMAC", NULL);
    if (gcm == NULL || hmac == NULL) return 0;
    c->seal = EVP_CIPHER_CTX_new();
    c->open = EVP_CIPHER_CTX_new();
    c->mac = EVP_MAC_CTX_new(hmac);
    if (c->seal == NULL || c->open == NULL || c->mac == NULL) return 0;
    if (EVP_EncryptInit_ex2(c->seal, gcm, data_key, NULL, NULL) != 1) return 0;
    if (EVP_DecryptInit_ex2(c->open, gcm, data_key, NULL, NULL) != 1) return 0;
    OSSL_PARAM params[2];
    params[0] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, "SHA256", 0);
    params[1] = OSSL_PARAM_construct_end();
    if (EVP_MAC_init(c->mac, fingerprint_key, sizeof fingerprint_key, params) != 1) return 0;
    EVP_CIPHER_free(gcm);
    EVP_MAC_free(hmac);
    return 1;
}

static void crypto_free(struct crypto *c)
{
    EVP_CIPHER_CTX_free(c->seal);
    EVP_CIPHER_CTX_free(c->open);
    EVP_MAC_CTX_free(c->mac);
}

static int fingerprint(struct crypto *c, const unsigned char *pan, unsigned char out[FP_LEN])
{
    size_t len = 0;
    if (EVP_MAC_init(c->mac, NULL, 0, NULL) != 1) return 0;
    if (EVP_MAC_update(c->mac, pan, CARD_PAN_LEN) != 1) return 0;
    return EVP_MAC_final(c->mac, out, &len, FP_LEN) == 1 && len == FP_LEN;
}

/* A tokenized card: what the store would keep. */
struct sealed {
    unsigned char token[TOKEN_LEN];
    unsigned char fingerprint[FP_LEN];
    unsigned char nonce[NONCE_LEN];
    unsigned char body[CARD_RECORD_LEN];
    unsigned char tag[TAG_LEN];
};

static void make_aad(const unsigned char *token, unsigned char aad[TOKEN_LEN + 4])
{
    memcpy(aad, token, TOKEN_LEN);
    aad[TOKEN_LEN] = (unsigned char)(key_version >> 24);
    aad[TOKEN_LEN + 1] = (unsigned char)(key_version >> 16);
    aad[TOKEN_LEN + 2] = (unsigned char)(key_version >> 8);
    aad[TOKEN_LEN + 3] = (unsigned char)key_version;
}

static int tokenize(struct crypto *c, struct pool *p, const unsigned char *record, struct sealed *out)
{
    unsigned char aad[TOKEN_LEN + 4];
    int len = 0;
    pool_take(p, out->token, TOKEN_LEN);
    pool_take(p, out->nonce, NONCE_LEN);
    if (!fingerprint(c, record + CARD_PAN_OFFSET, out->fingerprint)) return 0;
    make_aad(out->token, aad);
    if (EVP_EncryptInit_ex2(c->seal, NULL, NULL, out->nonce, NULL) != 1) return 0;
    if (EVP_EncryptUpdate(c->seal, NULL, &len, aad, sizeof aad) != 1) return 0;
    if (EVP_EncryptUpdate(c->seal, out->body, &len, record, CARD_RECORD_LEN) != 1) return 0;
    if (EVP_EncryptFinal_ex(c->seal, out->body + len, &len) != 1) return 0;
    return EVP_CIPHER_CTX_ctrl(c->seal, EVP_CTRL_GCM_GET_TAG, TAG_LEN, out->tag) == 1;
}

static int detokenize(struct crypto *c, const struct sealed *in, unsigned char plain[CARD_RECORD_LEN])
{
    unsigned char aad[TOKEN_LEN + 4];
    unsigned char fp[FP_LEN];
    int len = 0;
    make_aad(in->token, aad);
    if (EVP_DecryptInit_ex2(c->open, NULL, NULL, in->nonce, NULL) != 1) return 0;
    if (EVP_DecryptUpdate(c->open, NULL, &len, aad, sizeof aad) != 1) return 0;
    if (EVP_DecryptUpdate(c->open, plain, &len, in->body, CARD_RECORD_LEN) != 1) return 0;
    if (EVP_CIPHER_CTX_ctrl(c->open, EVP_CTRL_GCM_SET_TAG, TAG_LEN, (void *)in->tag) != 1) return 0;
    if (EVP_DecryptFinal_ex(c->open, plain + len, &len) != 1) {
        OPENSSL_cleanse(plain, CARD_RECORD_LEN);
        return 0;
    }
    if (!fingerprint(c, plain + CARD_PAN_OFFSET, fp)) return 0;
    return CRYPTO_memcmp(fp, in->fingerprint, FP_LEN) == 0;
}

static void *run_worker(void *arg)
{
    struct worker *w = arg;
    struct crypto c;
    struct pool p = {.used = POOL_BYTES};
    unsigned char records[CARD_PAN_COUNT][CARD_RECORD_LEN];
    unsigned char plain[CARD_RECORD_LEN];
    static __thread struct sealed set[SEALED_SET];
    struct sealed out;
    uint64_t sink = 0;

    if (!crypto_init(&c)) {
        w->failed = 1;
        return NULL;
    }
    for (unsigned i = 0; i < CARD_PAN_COUNT; i++) card_record_fill(records[i], i);
    if (w->detokenize) {
        for (unsigned i = 0; i < SEALED_SET; i++) {
            if (!tokenize(&c, &p, records[i % CARD_PAN_COUNT], &set[i])) w->failed = 1;
        }
    }
    uint64_t ops = 0;
    double begin = now_seconds();
    double deadline = begin + w->seconds;
    for (;;) {
        for (unsigned i = 0; i < 256; i++) {
            unsigned n = (unsigned)(ops + i);
            if (w->detokenize) {
                if (!detokenize(&c, &set[n % SEALED_SET], plain)) w->failed = 1;
                sink += plain[CARD_PAN_OFFSET + CARD_PAN_LEN - 1];
            } else {
                if (!tokenize(&c, &p, records[n % CARD_PAN_COUNT], &out)) w->failed = 1;
                sink += out.tag[0];
            }
        }
        ops += 256;
        if (now_seconds() >= deadline) break;
    }
    w->elapsed = now_seconds() - begin;
    OPENSSL_cleanse(plain, sizeof plain);
    crypto_free(&c);
    w->ops = ops;
    sink_all += sink;
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 3 || (strcmp(argv[1], "tokenize") != 0 && strcmp(argv[1], "detokenize") != 0)) {
        fprintf(stderr, "usage: %s tokenize|detokenize SECONDS [THREADS]\n", argv[0]);
        return 64;
    }
    double seconds = atof(argv[2]);
    int threads = argc > 3 ? atoi(argv[3]) : 1;
    if (seconds <= 0 || threads < 1 || threads > 256) {
        fprintf(stderr, "crypto_baseline: bad SECONDS or THREADS\n");
        return 64;
    }
    if (RAND_bytes(data_key, sizeof data_key) != 1 || RAND_bytes(fingerprint_key, sizeof fingerprint_key) != 1) {
        return 1;
    }
    struct worker *workers = calloc((size_t)threads, sizeof *workers);
    pthread_t *ids = calloc((size_t)threads, sizeof *ids);
    if (workers == NULL || ids == NULL) return 1;
    for (int i = 0; i < threads; i++) {
        workers[i].detokenize = argv[1][0] == 'd';
        workers[i].seconds = seconds;
        if (pthread_create(&ids[i], NULL, run_worker, &workers[i]) != 0) return 1;
    }
    uint64_t ops = 0;
    double rate = 0, elapsed = 0;
    int failed = 0;
    for (int i = 0; i < threads; i++) {
        pthread_join(ids[i], NULL);
        ops += workers[i].ops;
        rate += (double)workers[i].ops / workers[i].elapsed;
        if (workers[i].elapsed > elapsed) elapsed = workers[i].elapsed;
        failed |= workers[i].failed;
    }
    if (failed) {
        fprintf(stderr, "crypto_baseline: an operation failed\n");
        return 1;
    }
    printf("{\"work\":\"%s\",\"threads\":%d,\"ops\":%llu,\"seconds\":%.6f,\"ops_per_second\":%.1f}\n", argv[1],
           threads, (unsigned long long)ops, elapsed, rate);
    OPENSSL_cleanse(data_key, sizeof data_key);
    OPENSSL_cleanse(fingerprint_key, sizeof fingerprint_key);
    free(workers);
    free(ids);
    return 0;
}
