/*
 * insn_classes.h: the AArch64 instruction classes counted by insn_count.c, decoded from the
 * 32-bit instruction word alone (plain C, no QEMU: tests/test_arm_evidence.py
 * compiles it with a small driver and checks it against encodings the assembler made).
 *
 * Decoding follows the A64 encoding index of the Arm Architecture Reference Manual
 * (top-level op0 = bits 28:25; Advanced SIMD "three same", "three same (FP16)", "three
 * same extra", "three different", "two-register misc", "vector x indexed element").
 * "d"/"q" classes: 64-bit / 128-bit vector forms (bit 30, Q).
 */
#ifndef INSN_CLASSES_H
#define INSN_CLASSES_H

#include <stdint.h>

enum insn_class {
    C_DOT_D, C_DOT_Q,         /* SDOT/UDOT/USDOT/SUDOT (int8 → int32 dot product) */
    C_MMLA,                   /* SMMLA/UMMLA/USMMLA (int8 matrix multiply, I8MM) */
    C_IMUL_D, C_IMUL_Q,       /* integer SIMD multiply: MUL/MLA/MLS, [SU]MULL/[SU]MLAL/[SU]MLSL, SQDMULH... */
    C_PADAL_D, C_PADAL_Q,     /* SADALP/UADALP (pairwise add-accumulate long) */
    C_F32MLA_D, C_F32MLA_Q,   /* fp32 SIMD FMLA/FMLS/FMUL/FMULX (vector or by element) */
    C_F16MLA_D, C_F16MLA_Q,   /* fp16 SIMD FMLA/FMLS/FMUL/FMULX, FMLAL/FMLSL (fp16 → fp32) */
    C_F16_OTHER,              /* other fp16 SIMD arithmetic (three-same FP16) */
    C_FVEC_OTHER,             /* other fp32/fp64 SIMD arithmetic (FADD, FMAX, compares) */
    C_SIMD_OTHER_D, C_SIMD_OTHER_Q, /* other SIMD: integer add/logic/shift, moves, permutes, converts */
    C_FP_SCALAR,              /* scalar FP and scalar SIMD */
    C_LOAD, C_STORE,          /* every load / store (GPR or SIMD, any width) */
    C_LOAD_SIMD_Q,            /* of the loads: 128-bit SIMD register loads (LDR q, LDP q, LD1 .16b...) */
    C_BRANCH,                 /* branches */
    C_SCALAR,                 /* scalar integer, system, everything else */
    C_N
};

static const char *const class_names[C_N] = {
    "dot.d", "dot.q", "mmla", "imul.d", "imul.q", "padal.d", "padal.q",
    "f32mla.d", "f32mla.q", "f16mla.d", "f16mla.q", "f16other", "fvecother",
    "simdother.d", "simdother.q", "fpscalar", "load", "store", "load.q",
    "branch", "scalar",
};

static inline uint32_t bits(uint32_t x, int hi, int lo)
{
    return (x >> lo) & ((1u << (hi - lo + 1)) - 1);
}

/* Loads and stores (op0 = x1x0). Returns C_LOAD or C_STORE; *q set for 128-bit SIMD loads. */
static int classify_ldst(uint32_t i, int *q)
{
    uint32_t v = bits(i, 26, 26);
    *q = 0;
    switch (bits(i, 29, 28)) {
    case 3: { /* register forms: unsigned imm, imm9, register offset, atomics */
        uint32_t opc = bits(i, 23, 22), size = bits(i, 31, 30);
        if (bits(i, 24, 24) == 0 && bits(i, 21, 21) == 1 && bits(i, 11, 10) == 0) {
            return C_LOAD; /* atomic memory operation: a read first */
        }
        if (v) {
            int store = (opc == 0 || opc == 2);
            if (!store && size == 0 && opc == 3) {
                *q = 1;
            }
            return store ? C_STORE : C_LOAD;
        }
        return opc == 0 ? C_STORE : C_LOAD; /* PRFM counts as a load */
    }
    case 2: /* register pairs */
        if (bits(i, 22, 22)) {
            *q = v && bits(i, 31, 30) == 2;
            return C_LOAD;
        }
        return C_STORE;
    case 1: /* literal loads; LDAPR/STLUR (bit 24) */
        if (bits(i, 24, 24) && bits(i, 21, 21) == 0) {
            return bits(i, 23, 22) == 0 ? C_STORE : C_LOAD;
        }
        *q = v && bits(i, 31, 30) == 2;
        return C_LOAD;
    default: /* exclusives, SIMD structure loads/stores: L is bit 22 */
        if (bits(i, 22, 22)) {
            *q = v && bits(i, 30, 30);
            return C_LOAD;
        }
        return C_STORE;
    }
}

/* Advanced SIMD vector instructions (bit 31 = 0, bits 28:24 = 01110 or 01111). */
static int classify_simd_vector(uint32_t i)
{
    int qf = bits(i, 30, 30);
    uint32_t u = bits(i, 29, 29), size = bits(i, 23, 22);

    if (bits(i, 28, 24) == 0x0F) { /* 01111: by element, shift by immediate, modified immediate */
        if (bits(i, 10, 10) == 0) { /* vector × indexed element */
            uint32_t opc = bits(i, 15, 12);
            switch (opc) {
            case 0x1: case 0x5: case 0x9: /* FMLA, FMLS, FMUL/FMULX (element) */
                if (size == 0) {
                    return qf ? C_F16MLA_Q : C_F16MLA_D;
                }
                if (size == 2) {
                    return qf ? C_F32MLA_Q : C_F32MLA_D;
                }
                return C_FVEC_OTHER; /* fp64 */
            case 0x0: case 0x4: /* U=1: MLA/MLS (element); U=0: FMLAL/FMLSL (element) */
                if (!u) {
                    return qf ? C_F16MLA_Q : C_F16MLA_D;
                }
                return qf ? C_IMUL_Q : C_IMUL_D;
            case 0x8: /* U=1: FMLAL2/FMLSL2 (element) when size=10; U=0: MUL (element) */
            case 0xC:
                if (u && size == 2) {
                    return qf ? C_F16MLA_Q : C_F16MLA_D;
                }
                return qf ? C_IMUL_Q : C_IMUL_D;
            case 0xE: /* SDOT/UDOT (element) */
                return qf ? C_DOT_Q : C_DOT_D;
            case 0xF: /* U=0: SUDOT/USDOT (element); U=1: SQRDMLSH */
                if (!u) {
                    return qf ? C_DOT_Q : C_DOT_D;
                }
                return qf ? C_IMUL_Q : C_IMUL_D;
            default: /* [SU]MLAL, [SU]MLSL, [SU]MULL, SQDMULL..., SQ(R)DMULH, SQRDMLAH (element) */
                return qf ? C_IMUL_Q : C_IMUL_D;
            }
        }
        return qf ? C_SIMD_OTHER_Q : C_SIMD_OTHER_D; /* shifts by immediate, MOVI... */
    }

    /* 01110 */
    if (bits(i, 21, 21) == 1) {
        if (bits(i, 10, 10) == 1) { /* three same */
            uint32_t opc = bits(i, 15, 11);
            if (opc == 0x12 || opc == 0x13 || opc == 0x16) { /* MLA/MLS, MUL/PMUL, SQ(R)DMULH */
                return qf ? C_IMUL_Q : C_IMUL_D;
            }
            if (opc >= 0x18) { /* floating point */
                int sz = bits(i, 22, 22);
                int fmla = (opc == 0x19 && u == 0) || (opc == 0x1B && bits(i, 23, 23) == 0);
                if (opc == 0x1D && u == 0 && !sz) { /* FMLAL/FMLSL (vector) */
                    return qf ? C_F16MLA_Q : C_F16MLA_D;
                }
                if (fmla && !sz) {
                    return qf ? C_F32MLA_Q : C_F32MLA_D;
                }
                return C_FVEC_OTHER;
            }
            return qf ? C_SIMD_OTHER_Q : C_SIMD_OTHER_D;
        }
        if (bits(i, 11, 10) == 0) { /* three different */
            uint32_t opc = bits(i, 15, 12);
            if (opc >= 0x8 && opc <= 0xE) { /* [SU]MLAL, [SU]MLSL, [SU]MULL, SQDM*, PMULL */
                return qf ? C_IMUL_Q : C_IMUL_D;
            }
            return qf ? C_SIMD_OTHER_Q : C_SIMD_OTHER_D;
        }
        if (bits(i, 11, 10) == 2 && bits(i, 20, 17) == 0) { /* two-register misc */
            if (bits(i, 16, 12) == 0x06) { /* SADALP/UADALP */
                return qf ? C_PADAL_Q : C_PADAL_D;
            }
        }
        return qf ? C_SIMD_OTHER_Q : C_SIMD_OTHER_D;
    }
    /* bit 21 = 0 */
    if (bits(i, 22, 22) == 1 && bits(i, 15, 14) == 0 && bits(i, 10, 10) == 1) { /* three same FP16 */
        uint32_t opc = bits(i, 13, 11), a = bits(i, 23, 23);
        if ((opc == 1 && u == 0) || (opc == 3 && a == 0)) { /* FMLA/FMLS, FMULX/FMUL */
            return qf ? C_F16MLA_Q : C_F16MLA_D;
        }
        return C_F16_OTHER;
    }
    if (bits(i, 15, 15) == 1 && bits(i, 10, 10) == 1) { /* three same extra */
        uint32_t opc = bits(i, 14, 11);
        if (opc == 0x2 || (opc == 0x3 && u == 0)) { /* SDOT/UDOT, USDOT */
            return qf ? C_DOT_Q : C_DOT_D;
        }
        if (opc == 0x4 || opc == 0x5) { /* SMMLA/UMMLA, USMMLA */
            return C_MMLA;
        }
        return qf ? C_IMUL_Q : C_IMUL_D; /* SQRDMLAH/SH */
    }
    if (bits(i, 22, 17) == 0x3C && bits(i, 11, 10) == 2) { /* two-register misc FP16 */
        return C_F16_OTHER;
    }
    return qf ? C_SIMD_OTHER_Q : C_SIMD_OTHER_D; /* copy, permute, extract, table */
}

static inline int classify(uint32_t i, int *q)
{
    uint32_t op0 = bits(i, 28, 25);
    *q = 0;
    if ((op0 & 0x5) == 0x4) { /* x1x0 */
        return classify_ldst(i, q);
    }
    if ((op0 & 0x7) == 0x7) { /* x111: SIMD and FP */
        if (bits(i, 31, 31) == 0 && bits(i, 28, 25) == 0x7 && bits(i, 24, 24) <= 1 &&
            (bits(i, 28, 24) == 0x0E || bits(i, 28, 24) == 0x0F)) {
            return classify_simd_vector(i);
        }
        return C_FP_SCALAR;
    }
    if ((op0 & 0xE) == 0xA) { /* 101x: branches, exceptions, system */
        if ((i & 0x7C000000u) == 0x14000000u || (i & 0x7E000000u) == 0x34000000u ||
            (i & 0x7E000000u) == 0x36000000u || (i & 0xFF000010u) == 0x54000000u ||
            (i & 0xFE000000u) == 0xD6000000u) {
            return C_BRANCH;
        }
        return C_SCALAR;
    }
    return C_SCALAR; /* data processing (immediate, register), SVE/SME and the unallocated */
}

#endif /* INSN_CLASSES_H */
