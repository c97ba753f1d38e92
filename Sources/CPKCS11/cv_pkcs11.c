#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cv_pkcs11.h"

struct cv_p11_module {
    void *library;
    CK_FUNCTION_LIST_PTR functions;
};

enum { GCM_TAG_BYTES = 16, GCM_IV_BYTES = 12, TOKEN_LABEL_BYTES = 32 };

cv_p11_module *cv_p11_load(const char *path, char *error, size_t error_size) {
    if (error_size > 0) error[0] = 0;
    void *library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) {
        const char *reason = dlerror();
        snprintf(error, error_size, "%s", reason != NULL ? reason : "dlopen failed");
        return NULL;
    }
    CK_C_GetFunctionList get_function_list = (CK_C_GetFunctionList)dlsym(library, "C_GetFunctionList");
    if (get_function_list == NULL) {
        snprintf(error, error_size, "no C_GetFunctionList in %s: not a PKCS#11 module", path);
        dlclose(library);
        return NULL;
    }
    CK_FUNCTION_LIST_PTR functions = NULL;
    CK_RV rv = get_function_list(&functions);
    if (rv != CKR_OK || functions == NULL) {
        const char *name = cv_p11_rv_name(rv);
        snprintf(error, error_size, "C_GetFunctionList failed: %s (0x%lx)", name != NULL ? name : "?", rv);
        dlclose(library);
        return NULL;
    }
    cv_p11_module *module = calloc(1, sizeof *module);
    if (module == NULL) {
        snprintf(error, error_size, "out of memory");
        dlclose(library);
        return NULL;
    }
    module->library = library;
    module->functions = functions;
    return module;
}

void cv_p11_unload(cv_p11_module *module) {
    if (module == NULL) return;
    dlclose(module->library);
    free(module);
}

int cv_p11_same_library(const cv_p11_module *a, const cv_p11_module *b) {
    return a->library == b->library;
}

CK_RV cv_p11_initialize(cv_p11_module *module) {
    CK_C_INITIALIZE_ARGS arguments;
    memset(&arguments, 0, sizeof arguments);
    arguments.flags = CKF_OS_LOCKING_OK;
    return module->functions->C_Initialize(&arguments);
}

CK_RV cv_p11_finalize(cv_p11_module *module) {
    return module->functions->C_Finalize(NULL);
}

/// Whether a token's blank-padded 32-byte label is `label`.
static int label_matches(const unsigned char padded[TOKEN_LABEL_BYTES], const uint8_t *label, size_t length) {
    if (length > TOKEN_LABEL_BYTES || memcmp(padded, label, length) != 0) return 0;
    for (size_t index = length; index < TOKEN_LABEL_BYTES; index++) {
        if (padded[index] != ' ') return 0;
    }
    return 1;
}

CK_RV cv_p11_find_token(
    cv_p11_module *module, const uint8_t *label, size_t label_length, CK_SLOT_ID *slot, size_t *matches) {
    CK_FUNCTION_LIST_PTR f = module->functions;
    *matches = 0;
    CK_ULONG count = 0;
    CK_SLOT_ID *slots = NULL;
    CK_RV rv;
    // The number of slots may grow between the two calls (CKR_BUFFER_TOO_SMALL): ask again.
    for (;;) {
        rv = f->C_GetSlotList(CK_TRUE, NULL, &count);
        if (rv != CKR_OK) return rv;
        free(slots);
        slots = calloc(count > 0 ? count : 1, sizeof *slots);
        if (slots == NULL) return CKR_HOST_MEMORY;
        rv = f->C_GetSlotList(CK_TRUE, slots, &count);
        if (rv != CKR_BUFFER_TOO_SMALL) break;
    }
    for (CK_ULONG index = 0; rv == CKR_OK && index < count; index++) {
        CK_TOKEN_INFO info;
        CK_RV info_rv = f->C_GetTokenInfo(slots[index], &info);
        if (info_rv == CKR_TOKEN_NOT_PRESENT || info_rv == CKR_TOKEN_NOT_RECOGNIZED) continue;
        if (info_rv != CKR_OK) {
            rv = info_rv;
            break;
        }
        if (label_matches(info.label, label, label_length)) {
            if (*matches == 0) *slot = slots[index];
            *matches += 1;
        }
    }
    free(slots);
    return rv;
}

CK_RV cv_p11_open_session(cv_p11_module *module, CK_SLOT_ID slot, int read_write, CK_SESSION_HANDLE *session) {
    CK_FLAGS flags = CKF_SERIAL_SESSION | (read_write ? CKF_RW_SESSION : 0);
    return module->functions->C_OpenSession(slot, flags, NULL, NULL, session);
}

CK_RV cv_p11_close_session(cv_p11_module *module, CK_SESSION_HANDLE session) {
    return module->functions->C_CloseSession(session);
}

CK_RV cv_p11_login(cv_p11_module *module, CK_SESSION_HANDLE session, const uint8_t *pin, size_t pin_length) {
    return module->functions->C_Login(session, CKU_USER, (CK_UTF8CHAR_PTR)pin, (CK_ULONG)pin_length);
}

CK_RV cv_p11_logout(cv_p11_module *module, CK_SESSION_HANDLE session) {
    return module->functions->C_Logout(session);
}

CK_RV cv_p11_find_aes_key(
    cv_p11_module *module, CK_SESSION_HANDLE session, const uint8_t *label, size_t label_length,
    CK_OBJECT_HANDLE *key, size_t *matches) {
    CK_FUNCTION_LIST_PTR f = module->functions;
    CK_OBJECT_CLASS class = CKO_SECRET_KEY;
    CK_KEY_TYPE type = CKK_AES;
    CK_ATTRIBUTE template[] = {
        {CKA_CLASS, &class, sizeof class},
        {CKA_KEY_TYPE, &type, sizeof type},
        {CKA_LABEL, (void *)label, (CK_ULONG)label_length},
    };
    *matches = 0;
    CK_RV rv = f->C_FindObjectsInit(session, template, sizeof template / sizeof template[0]);
    if (rv != CKR_OK) return rv;
    CK_OBJECT_HANDLE found[2];
    CK_ULONG count = 0;
    rv = f->C_FindObjects(session, found, 2, &count);
    CK_RV final_rv = f->C_FindObjectsFinal(session);
    if (rv != CKR_OK) return rv;
    if (final_rv != CKR_OK) return final_rv;
    if (count > 0) *key = found[0];
    *matches = count;
    return CKR_OK;
}

CK_RV cv_p11_generate_aes_key(
    cv_p11_module *module, CK_SESSION_HANDLE session, const uint8_t *label, size_t label_length,
    CK_OBJECT_HANDLE *key) {
    CK_OBJECT_CLASS class = CKO_SECRET_KEY;
    CK_KEY_TYPE type = CKK_AES;
    CK_ULONG length = 32;
    CK_BBOOL yes = CK_TRUE, no = CK_FALSE;
    CK_MECHANISM_TYPE allowed[] = {CKM_AES_GCM, CKM_AES_CMAC};
    CK_ATTRIBUTE template[] = {
        {CKA_CLASS, &class, sizeof class},
        {CKA_KEY_TYPE, &type, sizeof type},
        {CKA_VALUE_LEN, &length, sizeof length},
        {CKA_LABEL, (void *)label, (CK_ULONG)label_length},
        {CKA_TOKEN, &yes, sizeof yes},
        {CKA_PRIVATE, &yes, sizeof yes},
        {CKA_SENSITIVE, &yes, sizeof yes},
        {CKA_EXTRACTABLE, &no, sizeof no},
        {CKA_ENCRYPT, &yes, sizeof yes},
        {CKA_DECRYPT, &yes, sizeof yes},
        {CKA_SIGN, &yes, sizeof yes},
        {CKA_VERIFY, &no, sizeof no},
        {CKA_WRAP, &no, sizeof no},
        {CKA_UNWRAP, &no, sizeof no},
        {CKA_DERIVE, &no, sizeof no},
        {CKA_ALLOWED_MECHANISMS, allowed, sizeof allowed},
    };
    CK_MECHANISM mechanism = {CKM_AES_KEY_GEN, NULL, 0};
    return module->functions->C_GenerateKey(
        session, &mechanism, template, sizeof template / sizeof template[0], key);
}

/// The CKM_AES_GCM parameters for a 12-byte IV, `aad` and a 128-bit tag.
static CK_GCM_PARAMS gcm_parameters(const uint8_t *iv, const uint8_t *aad, size_t aad_length) {
    CK_GCM_PARAMS parameters;
    memset(&parameters, 0, sizeof parameters);
    parameters.pIv = (CK_BYTE_PTR)iv;
    parameters.ulIvLen = GCM_IV_BYTES;
    parameters.ulIvBits = GCM_IV_BYTES * 8;
    parameters.pAAD = (CK_BYTE_PTR)aad;
    parameters.ulAADLen = (CK_ULONG)aad_length;
    parameters.ulTagBits = GCM_TAG_BYTES * 8;
    return parameters;
}

CK_RV cv_p11_gcm_encrypt(
    cv_p11_module *module, CK_SESSION_HANDLE session, CK_OBJECT_HANDLE key, const uint8_t *iv,
    const uint8_t *aad, size_t aad_length, const uint8_t *plain, size_t plain_length, uint8_t *output,
    size_t *output_length) {
    // An empty AAD crashes some modules (SoftHSM 2.6.1); CardVault's labels are never empty.
    if (aad_length == 0) return CKR_ARGUMENTS_BAD;
    CK_GCM_PARAMS parameters = gcm_parameters(iv, aad, aad_length);
    CK_MECHANISM mechanism = {CKM_AES_GCM, &parameters, sizeof parameters};
    CK_RV rv = module->functions->C_EncryptInit(session, &mechanism, key);
    if (rv != CKR_OK) return rv;
    CK_ULONG length = (CK_ULONG)*output_length;
    rv = module->functions->C_Encrypt(session, (CK_BYTE_PTR)plain, (CK_ULONG)plain_length, output, &length);
    *output_length = (size_t)length;
    return rv;
}

CK_RV cv_p11_gcm_decrypt(
    cv_p11_module *module, CK_SESSION_HANDLE session, CK_OBJECT_HANDLE key, const uint8_t *iv,
    const uint8_t *aad, size_t aad_length, const uint8_t *sealed, size_t sealed_length, uint8_t *output,
    size_t *output_length) {
    if (aad_length == 0) return CKR_ARGUMENTS_BAD;
    CK_GCM_PARAMS parameters = gcm_parameters(iv, aad, aad_length);
    CK_MECHANISM mechanism = {CKM_AES_GCM, &parameters, sizeof parameters};
    CK_RV rv = module->functions->C_DecryptInit(session, &mechanism, key);
    if (rv != CKR_OK) return rv;
    CK_ULONG length = (CK_ULONG)*output_length;
    rv = module->functions->C_Decrypt(session, (CK_BYTE_PTR)sealed, (CK_ULONG)sealed_length, output, &length);
    *output_length = (size_t)length;
    return rv;
}

CK_RV cv_p11_cmac(
    cv_p11_module *module, CK_SESSION_HANDLE session, CK_OBJECT_HANDLE key, const uint8_t *message,
    size_t message_length, uint8_t mac[16]) {
    CK_MECHANISM mechanism = {CKM_AES_CMAC, NULL, 0};
    CK_RV rv = module->functions->C_SignInit(session, &mechanism, key);
    if (rv != CKR_OK) return rv;
    CK_ULONG length = 16;
    rv = module->functions->C_Sign(session, (CK_BYTE_PTR)message, (CK_ULONG)message_length, mac, &length);
    if (rv == CKR_OK && length != 16) return CKR_FUNCTION_FAILED;
    return rv;
}

CK_RV cv_p11_key_protection(
    cv_p11_module *module, CK_SESSION_HANDLE session, CK_OBJECT_HANDLE key, int *sensitive, int *extractable,
    CK_RV *value_rv) {
    CK_BBOOL is_sensitive = CK_FALSE, is_extractable = CK_TRUE;
    CK_ATTRIBUTE flags[] = {
        {CKA_SENSITIVE, &is_sensitive, sizeof is_sensitive},
        {CKA_EXTRACTABLE, &is_extractable, sizeof is_extractable},
    };
    CK_RV rv = module->functions->C_GetAttributeValue(session, key, flags, 2);
    if (rv != CKR_OK) return rv;
    *sensitive = is_sensitive == CK_TRUE;
    *extractable = is_extractable == CK_TRUE;
    CK_ATTRIBUTE value = {CKA_VALUE, NULL, 0};
    *value_rv = module->functions->C_GetAttributeValue(session, key, &value, 1);
    return CKR_OK;
}

#define RV_NAME(rv) \
    case rv: \
        return #rv;

const char *cv_p11_rv_name(CK_RV rv) {
    switch (rv) {
        RV_NAME(CKR_OK)
        RV_NAME(CKR_CANCEL)
        RV_NAME(CKR_HOST_MEMORY)
        RV_NAME(CKR_SLOT_ID_INVALID)
        RV_NAME(CKR_GENERAL_ERROR)
        RV_NAME(CKR_FUNCTION_FAILED)
        RV_NAME(CKR_ARGUMENTS_BAD)
        RV_NAME(CKR_NO_EVENT)
        RV_NAME(CKR_NEED_TO_CREATE_THREADS)
        RV_NAME(CKR_CANT_LOCK)
        RV_NAME(CKR_ATTRIBUTE_READ_ONLY)
        RV_NAME(CKR_ATTRIBUTE_SENSITIVE)
        RV_NAME(CKR_ATTRIBUTE_TYPE_INVALID)
        RV_NAME(CKR_ATTRIBUTE_VALUE_INVALID)
        RV_NAME(CKR_ACTION_PROHIBITED)
        RV_NAME(CKR_DATA_INVALID)
        RV_NAME(CKR_DATA_LEN_RANGE)
        RV_NAME(CKR_DEVICE_ERROR)
        RV_NAME(CKR_DEVICE_MEMORY)
        RV_NAME(CKR_DEVICE_REMOVED)
        RV_NAME(CKR_ENCRYPTED_DATA_INVALID)
        RV_NAME(CKR_ENCRYPTED_DATA_LEN_RANGE)
        RV_NAME(CKR_FUNCTION_CANCELED)
        RV_NAME(CKR_FUNCTION_NOT_PARALLEL)
        RV_NAME(CKR_FUNCTION_NOT_SUPPORTED)
        RV_NAME(CKR_KEY_HANDLE_INVALID)
        RV_NAME(CKR_KEY_SIZE_RANGE)
        RV_NAME(CKR_KEY_TYPE_INCONSISTENT)
        RV_NAME(CKR_KEY_NOT_NEEDED)
        RV_NAME(CKR_KEY_CHANGED)
        RV_NAME(CKR_KEY_NEEDED)
        RV_NAME(CKR_KEY_INDIGESTIBLE)
        RV_NAME(CKR_KEY_FUNCTION_NOT_PERMITTED)
        RV_NAME(CKR_KEY_NOT_WRAPPABLE)
        RV_NAME(CKR_KEY_UNEXTRACTABLE)
        RV_NAME(CKR_MECHANISM_INVALID)
        RV_NAME(CKR_MECHANISM_PARAM_INVALID)
        RV_NAME(CKR_OBJECT_HANDLE_INVALID)
        RV_NAME(CKR_OPERATION_ACTIVE)
        RV_NAME(CKR_OPERATION_NOT_INITIALIZED)
        RV_NAME(CKR_PIN_INCORRECT)
        RV_NAME(CKR_PIN_INVALID)
        RV_NAME(CKR_PIN_LEN_RANGE)
        RV_NAME(CKR_PIN_EXPIRED)
        RV_NAME(CKR_PIN_LOCKED)
        RV_NAME(CKR_SESSION_CLOSED)
        RV_NAME(CKR_SESSION_COUNT)
        RV_NAME(CKR_SESSION_HANDLE_INVALID)
        RV_NAME(CKR_SESSION_PARALLEL_NOT_SUPPORTED)
        RV_NAME(CKR_SESSION_READ_ONLY)
        RV_NAME(CKR_SESSION_EXISTS)
        RV_NAME(CKR_SESSION_READ_ONLY_EXISTS)
        RV_NAME(CKR_SESSION_READ_WRITE_SO_EXISTS)
        RV_NAME(CKR_SIGNATURE_INVALID)
        RV_NAME(CKR_SIGNATURE_LEN_RANGE)
        RV_NAME(CKR_TEMPLATE_INCOMPLETE)
        RV_NAME(CKR_TEMPLATE_INCONSISTENT)
        RV_NAME(CKR_TOKEN_NOT_PRESENT)
        RV_NAME(CKR_TOKEN_NOT_RECOGNIZED)
        RV_NAME(CKR_TOKEN_WRITE_PROTECTED)
        RV_NAME(CKR_USER_ALREADY_LOGGED_IN)
        RV_NAME(CKR_USER_NOT_LOGGED_IN)
        RV_NAME(CKR_USER_PIN_NOT_INITIALIZED)
        RV_NAME(CKR_USER_TYPE_INVALID)
        RV_NAME(CKR_USER_ANOTHER_ALREADY_LOGGED_IN)
        RV_NAME(CKR_USER_TOO_MANY_TYPES)
        RV_NAME(CKR_DOMAIN_PARAMS_INVALID)
        RV_NAME(CKR_CURVE_NOT_SUPPORTED)
        RV_NAME(CKR_BUFFER_TOO_SMALL)
        RV_NAME(CKR_SAVED_STATE_INVALID)
        RV_NAME(CKR_INFORMATION_SENSITIVE)
        RV_NAME(CKR_STATE_UNSAVEABLE)
        RV_NAME(CKR_CRYPTOKI_NOT_INITIALIZED)
        RV_NAME(CKR_CRYPTOKI_ALREADY_INITIALIZED)
        RV_NAME(CKR_MUTEX_BAD)
        RV_NAME(CKR_MUTEX_NOT_LOCKED)
        RV_NAME(CKR_FUNCTION_REJECTED)
        default:
            return NULL;
    }
}
