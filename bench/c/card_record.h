/* The card record both the C baseline and the Swift subject seal: exactly 100 bytes, the PAN at
 * a fixed offset so detokenize can re-derive the fingerprint from the opened plaintext.
 * The Swift side (Sources/cardvault-bench/CardRecordSample.swift) builds the same bytes. */
#ifndef CV_BENCH_CARD_RECORD_H
#define CV_BENCH_CARD_RECORD_H

#define CARD_RECORD_LEN 100
#define CARD_PAN_OFFSET 8
#define CARD_PAN_LEN 16
#define CARD_PAN_COUNT 64

/* Fills `out` (100 bytes) with record number `n`: a test PAN (Luhn-valid shape is irrelevant
 * here), expiry, holder and client fields, space padded. */
static void card_record_fill(unsigned char *out, unsigned n)
{
    static const char tmpl[CARD_RECORD_LEN + 1] =
        "{\"pan\":\"4970100000000000\",\"exp\":\"1229\",\"holder\":\"A SHOPPER\",\"client\":\"merchant-0001\","
        "\"v\":1}         ";
    for (int i = 0; i < CARD_RECORD_LEN; i++) out[i] = (unsigned char)tmpl[i];
    /* last six PAN digits carry n */
    unsigned v = n % CARD_PAN_COUNT;
    for (int i = 0; i < 6; i++) {
        out[CARD_PAN_OFFSET + CARD_PAN_LEN - 1 - i] = (unsigned char)('0' + v % 10);
        v /= 10;
    }
}

#endif
