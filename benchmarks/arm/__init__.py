"""aarch64 without a board: instruction counts under qemu user-mode emulation
(docs/arm-evidence.md).

Restored from the retired ARM evidence (commit fb9978f) for issue 49's XNNPACK comparison:
`emulator` (the arm64 root, the CPU targets, the TCG plugin), `cores` (the per-core pipe
model), `guest` (what runs inside the root) and `xnnpack` (the comparison's aarch64 half).
"""
