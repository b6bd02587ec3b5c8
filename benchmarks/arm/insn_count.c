/*
 * insn_count.c: a QEMU TCG plugin that counts executed AArch64 instructions by class.
 *
 * Built against QEMU's own plugin header (qemu-plugin.h, plugin API version 1 and later):
 *
 *     cc -O2 -shared -fPIC -I<dir of qemu-plugin.h> -o insn_count.so insn_count.c \
 *        $(pkg-config --cflags glib-2.0)    # (glib is not needed: plain C only)
 *
 *     qemu-aarch64 -cpu cortex-a72 -plugin ./insn_count.so python3 script.py
 *
 * Each instruction is classified once, when QEMU translates its block; every execution of
 * the block then adds the block's per-class counts to global counters (inline additions,
 * no callback per instruction). Counts are per block entry: a block left early by an
 * exception is counted whole (rare, and never in the kernels measured here).
 *
 * Markers: the guest marks phases with lseek(-1, MAGIC, label) (fails with EBADF, changes
 * nothing). At each marker the plugin writes one line to QEMU's log (stderr unless -D):
 *
 *     insn_count mark <label> total=<n> <class>=<n> ...
 *
 * with the counts since the process started; a last line `insn_count exit ...` at exit.
 * The driver subtracts consecutive markers to get the counts of one phase (one decoder run).
 * Counters are shared by all guest threads without atomics: run the measured code on one
 * thread (ONNX Runtime intra_op_num_threads=1), as the drivers here do.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <qemu-plugin.h>

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

#define NR_LSEEK_AARCH64 62
#define MARKER_MAGIC UINT64_C(0x48796b6f65417231) /* "HykoeAr1" */

#include "insn_classes.h"

static uint64_t counts[C_N];

static uint64_t total;

static void report(const char *what, int64_t label)
{
    char line[1024];
    int n = snprintf(line, sizeof line, "insn_count %s %" PRId64 " total=%" PRIu64, what, label,
                     total);
    for (int c = 0; c < C_N && n < (int)sizeof line; c++) {
        n += snprintf(line + n, sizeof line - n, " %s=%" PRIu64, class_names[c], counts[c]);
    }
    if (n < (int)sizeof line - 1) {
        line[n++] = '\n';
        line[n] = '\0';
    }
    qemu_plugin_outs(line);
}

static void on_tb(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
    uint64_t per[C_N];
    size_t n = qemu_plugin_tb_n_insns(tb);
    memset(per, 0, sizeof per);
    for (size_t k = 0; k < n; k++) {
        struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, k);
        uint32_t word = 0;
        int q;
        if (qemu_plugin_insn_size(insn) == 4) {
            memcpy(&word, qemu_plugin_insn_data(insn), 4);
        }
        int c = classify(word, &q);
        per[c]++;
        if (c == C_LOAD && q) {
            per[C_LOAD_SIMD_Q]++;
        }
    }
    qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &total, n);
    for (int c = 0; c < C_N; c++) {
        if (per[c]) {
            qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &counts[c],
                                                     per[c]);
        }
    }
}

static void on_syscall(qemu_plugin_id_t id, unsigned int vcpu, int64_t num, uint64_t a1,
                       uint64_t a2, uint64_t a3, uint64_t a4, uint64_t a5, uint64_t a6,
                       uint64_t a7, uint64_t a8)
{
    if (num == NR_LSEEK_AARCH64 && a2 == MARKER_MAGIC) {
        report("mark", (int64_t)a3);
    }
}

static void on_exit(qemu_plugin_id_t id, void *p)
{
    report("exit", 0);
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info,
                                           int argc, char **argv)
{
    if (strcmp(info->target_name, "aarch64") != 0) {
        fprintf(stderr, "insn_count: aarch64 guests only, not %s\n", info->target_name);
        return -1;
    }
    qemu_plugin_register_vcpu_tb_trans_cb(id, on_tb);
    qemu_plugin_register_vcpu_syscall_cb(id, on_syscall);
    qemu_plugin_register_atexit_cb(id, on_exit, NULL);
    return 0;
}
