#ifndef CARDVAULT_CV_PROCESS_H
#define CARDVAULT_CV_PROCESS_H
/* Process-wide protections Swift cannot set directly (prctl is variadic). */

/// Sets the core-file limit to 0 (soft and hard) and marks the process not dumpable
/// (PR_SET_DUMPABLE 0: no core file, no ptrace attach or /proc/PID/mem by other processes of the
/// same user). Returns 0 on success, else the errno of the first call that failed.
int cv_disable_core_dumps(void);

/// Whether the process is dumpable (prctl PR_GET_DUMPABLE): 1 or 0, -1 on error.
int cv_is_dumpable(void);
#endif
