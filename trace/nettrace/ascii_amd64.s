//go:build !purego

#include "textflag.h"

// func asciiz(dst, src []byte) (n, end int)
//
// Sixteen code units at a time: PACKUSWB narrows words to bytes with
// unsigned saturation of signed words, so a unit is ASCII and not NUL
// exactly when its byte is neither 0 (NUL, or a unit from 0x8000 on) nor
// has its top bit set (0x80 to 0x7fff). At the first byte that is, the
// unit decides: NUL ends the text, anything else is not ASCII. When
// fewer than sixteen units are left, the last sixteen of src are taken
// (a payload's last string ends near its end); only a src shorter than
// sixteen units goes one unit at a time.
TEXT ·asciiz(SB), NOSPLIT, $0-64
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ src_base+24(FP), SI
	MOVQ src_len+32(FP), DX
	SHRQ $1, DX             // units in src
	CMPQ CX, DX
	JLT  notascii           // dst too short
	XORQ AX, AX             // units copied
	PXOR X2, X2

loop16:
	LEAQ 16(AX), BX
	CMPQ BX, DX
	JGT  tail
	MOVOU (SI)(AX*2), X0
	MOVOU 16(SI)(AX*2), X1
	PACKUSWB X1, X0
	MOVOU X0, X3
	PCMPEQB X2, X3
	PMOVMSKB X3, BX         // bytes that are 0
	PMOVMSKB X0, R9         // bytes from 0x80
	ORQ  BX, R9
	JNZ  stop
	MOVOU X0, (DI)(AX*1)
	ADDQ $16, AX
	JMP  loop16

stop:
	BSFQ R9, CX             // the first unit that is not ASCII text
	MOVOU X0, (DI)(AX*1)    // bytes from there on are past the text
	ADDQ CX, AX
	MOVWLZX (SI)(AX*2), BX
	TESTL BX, BX
	JNZ  notascii
	JMP  found

tail:
	CMPQ AX, DX
	JGE  whole
	CMPQ DX, $16
	JLT  tail1              // src holds fewer than sixteen units
	// The last sixteen units, overlapping units already copied: those
	// are ASCII text, so the first stop is among the new ones.
	LEAQ -16(DX), BX
	MOVOU (SI)(BX*2), X0
	MOVOU 16(SI)(BX*2), X1
	PACKUSWB X1, X0
	MOVOU X0, X3
	PCMPEQB X2, X3
	PMOVMSKB X3, CX
	PMOVMSKB X0, R9
	ORQ  CX, R9
	MOVOU X0, (DI)(BX*1)
	JZ   all
	BSFQ R9, CX
	LEAQ (BX)(CX*1), AX
	MOVWLZX (SI)(AX*2), BX
	TESTL BX, BX
	JNZ  notascii
	JMP  found

all:
	MOVQ DX, AX
	JMP  whole

tail1:
	CMPQ AX, DX
	JGE  whole
	MOVWLZX (SI)(AX*2), BX
	TESTL BX, BX
	JZ   found
	CMPL BX, $0x80
	JAE  notascii
	MOVB BX, (DI)(AX*1)
	INCQ AX
	JMP  tail1

found:
	MOVQ AX, n+48(FP)
	LEAQ 2(AX)(AX*1), BX
	MOVQ BX, end+56(FP)
	RET

whole:
	MOVQ AX, n+48(FP)
	MOVQ src_len+32(FP), BX
	MOVQ BX, end+56(FP)
	RET

notascii:
	MOVQ $0, n+48(FP)
	MOVQ $-1, end+56(FP)
	RET
