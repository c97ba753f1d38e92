#ifndef CARDVAULT_CV_PKCS11_H
#define CARDVAULT_CV_PKCS11_H
/* A PKCS#11 module loaded at run time with dlopen (no link dependency on any PKCS#11 library), and the few
   calls CardVault makes through its function list: find a token, log in, find or generate the master key,
   AES-GCM with it and its check value. Every call returns the module's CK_RV unchanged. The PIN and key
   bytes pass through as pointers; nothing here copies, keeps or prints them. */

#include <stddef.h>
#include <stdint.h>
#include <p11-kit-1/p11-kit/pkcs11.h>

/// A loaded module: its dlopen handle and its function list.
typedef struct cv_p11_module cv_p11_module;

/// Loads the module at `path` (dlopen, RTLD_NOW | RTLD_LOCAL) and takes its function list. Returns NULL on
/// failure with a reason (dlerror's text, which names the path) in `error` (always NUL-terminated).
cv_p11_module *cv_p11_load(const char *path, char *error, size_t error_size);

/// dlclose and free; the module must be finalized (or never initialized) first.
void cv_p11_unload(cv_p11_module *module);

/// Whether two loaded modules are the same library (dlopen gave the same handle).
int cv_p11_same_library(const cv_p11_module *a, const cv_p11_module *b);

/// C_Initialize with CKF_OS_LOCKING_OK (the module may use the system's locks).
CK_RV cv_p11_initialize(cv_p11_module *module);

/// C_Finalize.
CK_RV cv_p11_finalize(cv_p11_module *module);

/// The slot of the present token whose label is `label` (at most 32 bytes; the token's label is padded with
/// spaces). `*matches` is the number of tokens with that label (0, 1, or 2 for "more than one").
CK_RV cv_p11_find_token(
    cv_p11_module *module, const uint8_t *label, size_t label_length, CK_SLOT_ID *slot, size_t *matches);

/// C_OpenSession on `slot`: a serial session, read-write when `read_write` is not 0.
CK_RV cv_p11_open_session(cv_p11_module *module, CK_SLOT_ID slot, int read_write, CK_SESSION_HANDLE *session);

/// C_CloseSession.
CK_RV cv_p11_close_session(cv_p11_module *module, CK_SESSION_HANDLE session);

/// C_Login as the normal user (CKU_USER) with `pin`.
CK_RV cv_p11_login(cv_p11_module *module, CK_SESSION_HANDLE session, const uint8_t *pin, size_t pin_length);

/// C_Logout.
CK_RV cv_p11_logout(cv_p11_module *module, CK_SESSION_HANDLE session);

/// The AES secret key whose CKA_LABEL is `label`. `*matches` is the number found (0, 1, or 2 for "more").
CK_RV cv_p11_find_aes_key(
    cv_p11_module *module, CK_SESSION_HANDLE session, const uint8_t *label, size_t label_length,
    CK_OBJECT_HANDLE *key, size_t *matches);

/// Generates an AES-256 key on the token (CKA_TOKEN, CKA_PRIVATE, CKA_SENSITIVE, not CKA_EXTRACTABLE) labelled
/// `label`, that may encrypt and decrypt (AES-GCM) and sign (AES-CMAC, for its check value) and nothing else.
CK_RV cv_p11_generate_aes_key(
    cv_p11_module *module, CK_SESSION_HANDLE session, const uint8_t *label, size_t label_length,
    CK_OBJECT_HANDLE *key);

/// AES-GCM encryption (CKM_AES_GCM, 128-bit tag) with a 12-byte `iv` and non-empty `aad`: writes
/// `ciphertext || tag` to `output` (capacity `*output_length`, at least `plain_length + 16`) and sets
/// `*output_length` to the bytes written.
CK_RV cv_p11_gcm_encrypt(
    cv_p11_module *module, CK_SESSION_HANDLE session, CK_OBJECT_HANDLE key, const uint8_t *iv,
    const uint8_t *aad, size_t aad_length, const uint8_t *plain, size_t plain_length, uint8_t *output,
    size_t *output_length);

/// AES-GCM decryption of `ciphertext || tag` (the tag is its last 16 bytes) with a 12-byte `iv` and non-empty
/// `aad`: writes the plaintext to `output` (capacity `*output_length`) and sets `*output_length`.
CK_RV cv_p11_gcm_decrypt(
    cv_p11_module *module, CK_SESSION_HANDLE session, CK_OBJECT_HANDLE key, const uint8_t *iv,
    const uint8_t *aad, size_t aad_length, const uint8_t *sealed, size_t sealed_length, uint8_t *output,
    size_t *output_length);

/// AES-CMAC (CKM_AES_CMAC, full 16 bytes) of `message` under `key` into `mac`.
CK_RV cv_p11_cmac(
    cv_p11_module *module, CK_SESSION_HANDLE session, CK_OBJECT_HANDLE key, const uint8_t *message,
    size_t message_length, uint8_t mac[16]);

/// The key's CKA_SENSITIVE and CKA_EXTRACTABLE flags, and what C_GetAttributeValue answers when asked for
/// its CKA_VALUE (length only: no buffer is given) in `*value_rv`.
CK_RV cv_p11_key_protection(
    cv_p11_module *module, CK_SESSION_HANDLE session, CK_OBJECT_HANDLE key, int *sensitive, int *extractable,
    CK_RV *value_rv);

/// The name of a CK_RV ("CKR_PIN_INCORRECT"), or NULL for a value not in the standard list.
const char *cv_p11_rv_name(CK_RV rv);

#endif
