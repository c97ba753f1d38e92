#ifndef CARDVAULT_CV_SANITIZER_HOOKS_H
#define CARDVAULT_CV_SANITIZER_HOOKS_H
/* ThreadSanitizer annotations for the lock it cannot see.
 *
 * Swift's Synchronization.Mutex locks with futex calls inside the (uninstrumented) standard library, so
 * ThreadSanitizer never learns that two critical sections of one Mutex are ordered and reports every
 * access inside them as a race. `Locked` (VaultCore) calls these around each critical section. In a
 * ThreadSanitizer build they tell the runtime "acquired / released `address`"; in every other build
 * the runtime's functions are absent (weak symbols resolve to null) and these return at once. */

/// After taking the lock identified by `address`.
void cv_sanitizer_acquire(void *address);

/// Before releasing the lock identified by `address`.
void cv_sanitizer_release(void *address);
#endif
