#include "textflag.h"
#include "go_asm.h"

// func commonRows8AVX2(y, v, diag *float64, cPtr *uint32, cSrc *int32, cIdx *uint16, val *float64, lo, hi, rowBytes int)
//
// For rows j = lo..hi-1 of one group of 8 lanes (rows rowBytes apart, y
// and v pointing at the group's first lane):
//
//	y[j] = diag[j]*v[j] + sum over e in cPtr[j]..cPtr[j+1] of val[cIdx[e]]*v[cSrc[e]]
//
// with every product rounded before it is added, in entry order: the same
// operations, in the same order, as commonRows8Go, so the results are
// bit-for-bit equal. Four lanes a register, two registers a row.
TEXT ·commonRows8AVX2(SB), NOSPLIT, $0-80
	MOVQ y+0(FP), DI
	MOVQ v+8(FP), SI
	MOVQ diag+16(FP), R8
	MOVQ cPtr+24(FP), R9
	MOVQ cSrc+32(FP), R10
	MOVQ cIdx+40(FP), R11
	MOVQ val+48(FP), R12
	MOVQ lo+56(FP), CX
	MOVQ hi+64(FP), DX
	MOVQ rowBytes+72(FP), R13
	CMPQ CX, DX
	JGE  done
	MOVQ CX, AX
	IMULQ R13, AX         // AX: byte offset of row j
	MOVL (R9)(CX*4), BX   // BX: entry e = cPtr[j]

row:
	VBROADCASTSD (R8)(CX*8), Y0
	VMULPD (SI)(AX*1), Y0, Y1
	VMULPD 32(SI)(AX*1), Y0, Y2
	MOVL 4(R9)(CX*4), R15 // R15: cPtr[j+1]
	CMPQ BX, R15
	JAE  store

entry:
	MOVWQZX (R11)(BX*2), R14
	VBROADCASTSD (R12)(R14*8), Y3
	MOVL (R10)(BX*4), R14 // source state (non-negative, zero-extended)
	IMULQ R13, R14
	VMULPD (SI)(R14*1), Y3, Y4
	VADDPD Y4, Y1, Y1
	VMULPD 32(SI)(R14*1), Y3, Y5
	VADDPD Y5, Y2, Y2
	INCQ BX
	CMPQ BX, R15
	JB   entry

store:
	VMOVUPD Y1, (DI)(AX*1)
	VMOVUPD Y2, 32(DI)(AX*1)
	ADDQ R13, AX
	INCQ CX
	CMPQ CX, DX
	JLT  row

done:
	VZEROUPPER
	RET

// func cpuid(eaxArg, ecxArg uint32) (eax, ebx, ecx, edx uint32)
TEXT ·cpuid(SB), NOSPLIT, $0-24
	MOVL eaxArg+0(FP), AX
	MOVL ecxArg+4(FP), CX
	CPUID
	MOVL AX, eax+8(FP)
	MOVL BX, ebx+12(FP)
	MOVL CX, ecx+16(FP)
	MOVL DX, edx+20(FP)
	RET

// func xgetbv0() (eax, edx uint32)
TEXT ·xgetbv0(SB), NOSPLIT, $0-8
	MOVL $0, CX
	XGETBV
	MOVL AX, eax+0(FP)
	MOVL DX, edx+4(FP)
	RET

// func specialRows8AVX2(a *rowArgs)
//
// For rows j = a.lo..a.hi-1 of one group of 8 lanes, adds to y[j] (its
// common part, already computed) the special entries, moves the mass of
// the lanes whose target j is into the sink, and adds the live lanes to
// the rest: the operations of specialRows8Go, in its order.
TEXT ·specialRows8AVX2(SB), NOSPLIT, $0-8
	MOVQ a+0(FP), DI
	MOVQ rowArgs_sink(DI), R8
	VMOVUPD (R8), Y6
	VMOVUPD 32(R8), Y7
	MOVQ rowArgs_rest(DI), R8
	VMOVUPD (R8), Y8
	VMOVUPD 32(R8), Y9
	MOVQ rowArgs_y(DI), R8
	MOVQ rowArgs_v(DI), SI
	MOVQ rowArgs_sPtr(DI), R9
	MOVQ rowArgs_sSrc(DI), R10
	MOVQ rowArgs_sIdx(DI), R11
	MOVQ rowArgs_val(DI), R12
	MOVQ rowArgs_rowBytes(DI), R13
	MOVQ rowArgs_lo(DI), CX
	CMPQ CX, rowArgs_hi(DI)
	JGE  sdone
	MOVQ CX, AX
	IMULQ R13, AX         // AX: byte offset of row j
	MOVL (R9)(CX*4), BX   // BX: entry e = sPtr[j]

srow:
	VMOVUPD (R8)(AX*1), Y1
	VMOVUPD 32(R8)(AX*1), Y2
	MOVL 4(R9)(CX*4), R15 // R15: sPtr[j+1]
	CMPQ BX, R15
	JAE  sfinish

sentry:
	MOVWQZX (R11)(BX*2), R14
	VBROADCASTSD (R12)(R14*8), Y3
	MOVL (R10)(BX*4), R14
	IMULQ R13, R14
	VMULPD (SI)(R14*1), Y3, Y4   // t = x*v[src]
	VMULPD 32(SI)(R14*1), Y3, Y5
	MOVQ BX, DX
	IMULQ rowArgs_groups(DI), DX
	MOVQ rowArgs_sMask(DI), R14
	MOVBQZX (R14)(DX*1), DX
	SHLQ $6, DX
	LEAQ ·keepLane(SB), R14
	VMULPD (R14)(DX*1), Y4, Y10  // k = t*keep
	VMULPD 32(R14)(DX*1), Y5, Y11
	VADDPD Y10, Y1, Y1           // acc += k
	VADDPD Y11, Y2, Y2
	VSUBPD Y10, Y4, Y4           // sink += t - k
	VSUBPD Y11, Y5, Y5
	VADDPD Y4, Y6, Y6
	VADDPD Y5, Y7, Y7
	INCQ BX
	CMPQ BX, R15
	JB   sentry

sfinish:
	MOVQ rowArgs_zero(DI), R14
	TESTQ R14, R14
	JZ   slive
	MOVQ CX, DX
	IMULQ rowArgs_groups(DI), DX
	MOVBQZX (R14)(DX*1), DX
	SHLQ $6, DX
	LEAQ ·takeLane(SB), R14
	VMULPD (R14)(DX*1), Y1, Y10  // sink += acc*take
	VMULPD 32(R14)(DX*1), Y2, Y11
	VADDPD Y10, Y6, Y6
	VADDPD Y11, Y7, Y7
	LEAQ ·keepLane(SB), R14
	VMULPD (R14)(DX*1), Y1, Y1   // acc *= keep
	VMULPD 32(R14)(DX*1), Y2, Y2

slive:
	MOVQ rowArgs_live(DI), R14
	MOVQ CX, DX
	IMULQ rowArgs_groups(DI), DX
	MOVBQZX (R14)(DX*1), DX
	SHLQ $6, DX
	LEAQ ·takeLane(SB), R14
	VMULPD (R14)(DX*1), Y1, Y10  // rest += acc*take
	VMULPD 32(R14)(DX*1), Y2, Y11
	VADDPD Y10, Y8, Y8
	VADDPD Y11, Y9, Y9
	VMOVUPD Y1, (R8)(AX*1)
	VMOVUPD Y2, 32(R8)(AX*1)
	ADDQ R13, AX
	INCQ CX
	CMPQ CX, rowArgs_hi(DI)
	JLT  srow

sdone:
	MOVQ rowArgs_sink(DI), R14
	VMOVUPD Y6, (R14)
	VMOVUPD Y7, 32(R14)
	MOVQ rowArgs_rest(DI), R14
	VMOVUPD Y8, (R14)
	VMOVUPD Y9, 32(R14)
	VZEROUPPER
	RET

// func step1AVX(a *step1Args)
//
// step1's rows a.lo..a.hi-1 for a single passage: the operations of
// step1Go, in its order (scalar; the VEX encoding only avoids mixing
// SSE and AVX code).
TEXT ·step1AVX(SB), NOSPLIT, $0-8
	MOVQ a+0(FP), DI
	MOVQ step1Args_v(DI), SI
	MOVQ step1Args_y(DI), R8
	MOVQ step1Args_cPtr(DI), R9
	MOVQ step1Args_cSrc(DI), R10
	MOVQ step1Args_cIdx(DI), R11
	MOVQ step1Args_val(DI), R12
	MOVQ step1Args_diag(DI), R13
	VMOVSD step1Args_sink(DI), X6
	VMOVSD step1Args_rest(DI), X7
	MOVQ step1Args_lo(DI), CX
	CMPQ CX, step1Args_hi(DI)
	JGE  odone

orow:
	VMOVSD (R13)(CX*8), X1
	VMULSD (SI)(CX*8), X1, X1    // acc = diag[j]*v[j]
	MOVL (R9)(CX*4), BX
	MOVL 4(R9)(CX*4), R15
	CMPQ BX, R15
	JAE  ospecial

oentry:
	MOVWQZX (R11)(BX*2), R14
	VMOVSD (R12)(R14*8), X2
	MOVL (R10)(BX*4), R14
	VMULSD (SI)(R14*8), X2, X2
	VADDSD X2, X1, X1            // acc += val*v[src]
	INCQ BX
	CMPQ BX, R15
	JB   oentry

ospecial:
	MOVQ step1Args_sPtr(DI), DX
	MOVL (DX)(CX*4), BX
	MOVL 4(DX)(CX*4), R15
	CMPQ BX, R15
	JAE  ozero
	MOVQ step1Args_sIdx(DI), AX
	MOVQ step1Args_sSrc(DI), DX

osentry:
	MOVWQZX (AX)(BX*2), R14
	VMOVSD (R12)(R14*8), X2
	MOVL (DX)(BX*4), R14
	VMULSD (SI)(R14*8), X2, X2
	VADDSD X2, X6, X6            // sink += val*v[src]
	INCQ BX
	CMPQ BX, R15
	JB   osentry

ozero:
	MOVQ step1Args_zero(DI), DX
	TESTQ DX, DX
	JZ   ostore
	MOVBQZX (DX)(CX*1), R14
	TESTQ R14, R14
	JZ   ostore
	VADDSD X1, X6, X6            // a target state: its mass is absorbed
	VXORPD X1, X1, X1

ostore:
	VMOVSD X1, (R8)(CX*8)
	MOVQ step1Args_live(DI), DX
	MOVBQZX (DX)(CX*1), R14
	TESTQ R14, R14
	JZ   onext
	VADDSD X1, X7, X7

onext:
	INCQ CX
	CMPQ CX, step1Args_hi(DI)
	JLT  orow

odone:
	VMOVSD X6, step1Args_sink(DI)
	VMOVSD X7, step1Args_rest(DI)
	VZEROUPPER
	RET

// func backwardRowsAVX(rowPtr *int64, col *int32, idx *uint16, val, d, s, u, y *float64, lo, hi int)
//
// backwardRowsGo's rows lo..hi-1, the same operations in the same order.
TEXT ·backwardRowsAVX(SB), NOSPLIT, $0-80
	MOVQ rowPtr+0(FP), R9
	MOVQ col+8(FP), R10
	MOVQ idx+16(FP), R11
	MOVQ val+24(FP), R12
	MOVQ d+32(FP), R13
	MOVQ s+40(FP), DX
	MOVQ u+48(FP), SI
	MOVQ y+56(FP), R8
	MOVQ lo+64(FP), CX
	CMPQ CX, hi+72(FP)
	JGE  bdone
	MOVQ (R9)(CX*8), BX   // BX: entry e = rowPtr[i]

brow:
	VMOVSD (R13)(CX*8), X1
	VMULSD (SI)(CX*8), X1, X1    // acc = d[i]*u[i]
	MOVQ 8(R9)(CX*8), R15        // R15: rowPtr[i+1]
	CMPQ BX, R15
	JGE  bend

bentry:
	MOVWQZX (R11)(BX*2), R14
	VMOVSD (R12)(R14*8), X2
	MOVL (R10)(BX*4), R14
	VMULSD (SI)(R14*8), X2, X2
	VADDSD X2, X1, X1            // acc += val*u[col]
	INCQ BX
	CMPQ BX, R15
	JLT  bentry

bend:
	VADDSD (DX)(CX*8), X1, X1    // y[i] = acc + s[i]
	VMOVSD X1, (R8)(CX*8)
	INCQ CX
	CMPQ CX, hi+72(FP)
	JLT  brow

bdone:
	VZEROUPPER
	RET

// func fusedRows8AVX2(a *rowArgs)
//
// commonRows8AVX2 and specialRows8AVX2 in one pass over rows a.lo..a.hi-1
// of one group: each row's common part, then its special entries, target
// lanes and live lanes, the very operations of commonRows8Go followed by
// specialRows8Go in their order. The row is stored once, with
// non-temporal stores: y is written whole every step and read only in
// the next, so its lines need not be fetched into the cache first (that
// fetch was a quarter of a step's memory traffic). y must be 32-byte
// aligned (the caller checks). SFENCE at the end orders the stores
// before whatever the caller does next. Each special entry first fetches
// the source row of the special entry 32 ahead (PREFETCHT0; sSrc has room
// for those reads past its end, specialAhead): those sources lie far from
// their rows, and their misses had cost half of a step.
TEXT ·fusedRows8AVX2(SB), NOSPLIT, $0-8
	MOVQ a+0(FP), DI
	MOVQ rowArgs_sink(DI), R8
	VMOVUPD (R8), Y6
	VMOVUPD 32(R8), Y7
	MOVQ rowArgs_rest(DI), R8
	VMOVUPD (R8), Y8
	VMOVUPD 32(R8), Y9
	MOVQ rowArgs_y(DI), R8
	MOVQ rowArgs_v(DI), SI
	MOVQ rowArgs_cPtr(DI), R9
	MOVQ rowArgs_cSrc(DI), R10
	MOVQ rowArgs_cIdx(DI), R11
	MOVQ rowArgs_val(DI), R12
	MOVQ rowArgs_rowBytes(DI), R13
	MOVQ rowArgs_lo(DI), CX
	CMPQ CX, rowArgs_hi(DI)
	JGE  fdone
	MOVQ CX, AX
	IMULQ R13, AX         // AX: byte offset of row j

frow:
	MOVQ rowArgs_diag(DI), DX
	VBROADCASTSD (DX)(CX*8), Y0
	VMULPD (SI)(AX*1), Y0, Y1
	VMULPD 32(SI)(AX*1), Y0, Y2
	MOVL (R9)(CX*4), BX   // BX: entry e = cPtr[j]
	MOVL 4(R9)(CX*4), R15 // R15: cPtr[j+1]
	CMPQ BX, R15
	JAE  fspecial

fentry:
	MOVWQZX (R11)(BX*2), R14
	VBROADCASTSD (R12)(R14*8), Y3
	MOVL (R10)(BX*4), R14 // source state (non-negative, zero-extended)
	IMULQ R13, R14
	VMULPD (SI)(R14*1), Y3, Y4
	VADDPD Y4, Y1, Y1
	VMULPD 32(SI)(R14*1), Y3, Y5
	VADDPD Y5, Y2, Y2
	INCQ BX
	CMPQ BX, R15
	JB   fentry

fspecial:
	MOVQ rowArgs_sPtr(DI), DX
	MOVL (DX)(CX*4), BX   // BX: entry e = sPtr[j]
	MOVL 4(DX)(CX*4), R15 // R15: sPtr[j+1]
	CMPQ BX, R15
	JAE  ffinish

fsentry:
	MOVQ rowArgs_sSrc(DI), R14
	MOVL 128(R14)(BX*4), DX      // the source of special entry e+32: fetch its row early
	IMULQ R13, DX
	PREFETCHT0 (SI)(DX*1)
	MOVQ rowArgs_sIdx(DI), R14
	MOVWQZX (R14)(BX*2), R14
	VBROADCASTSD (R12)(R14*8), Y3
	MOVQ rowArgs_sSrc(DI), R14
	MOVL (R14)(BX*4), R14
	IMULQ R13, R14
	VMULPD (SI)(R14*1), Y3, Y4   // t = x*v[src]
	VMULPD 32(SI)(R14*1), Y3, Y5
	MOVQ BX, DX
	IMULQ rowArgs_groups(DI), DX
	MOVQ rowArgs_sMask(DI), R14
	MOVBQZX (R14)(DX*1), DX
	SHLQ $6, DX
	LEAQ ·keepLane(SB), R14
	VMULPD (R14)(DX*1), Y4, Y10  // k = t*keep
	VMULPD 32(R14)(DX*1), Y5, Y11
	VADDPD Y10, Y1, Y1           // acc += k
	VADDPD Y11, Y2, Y2
	VSUBPD Y10, Y4, Y4           // sink += t - k
	VSUBPD Y11, Y5, Y5
	VADDPD Y4, Y6, Y6
	VADDPD Y5, Y7, Y7
	INCQ BX
	CMPQ BX, R15
	JB   fsentry

ffinish:
	MOVQ rowArgs_zero(DI), R14
	TESTQ R14, R14
	JZ   flive
	MOVQ CX, DX
	IMULQ rowArgs_groups(DI), DX
	MOVBQZX (R14)(DX*1), DX
	SHLQ $6, DX
	LEAQ ·takeLane(SB), R14
	VMULPD (R14)(DX*1), Y1, Y10  // sink += acc*take
	VMULPD 32(R14)(DX*1), Y2, Y11
	VADDPD Y10, Y6, Y6
	VADDPD Y11, Y7, Y7
	LEAQ ·keepLane(SB), R14
	VMULPD (R14)(DX*1), Y1, Y1   // acc *= keep
	VMULPD 32(R14)(DX*1), Y2, Y2

flive:
	MOVQ rowArgs_live(DI), R14
	MOVQ CX, DX
	IMULQ rowArgs_groups(DI), DX
	MOVBQZX (R14)(DX*1), DX
	SHLQ $6, DX
	LEAQ ·takeLane(SB), R14
	VMULPD (R14)(DX*1), Y1, Y10  // rest += acc*take
	VMULPD 32(R14)(DX*1), Y2, Y11
	VADDPD Y10, Y8, Y8
	VADDPD Y11, Y9, Y9
	VMOVNTPD Y1, (R8)(AX*1)
	VMOVNTPD Y2, 32(R8)(AX*1)
	ADDQ R13, AX
	INCQ CX
	CMPQ CX, rowArgs_hi(DI)
	JLT  frow

fdone:
	SFENCE
	MOVQ rowArgs_sink(DI), R14
	VMOVUPD Y6, (R14)
	VMOVUPD Y7, 32(R14)
	MOVQ rowArgs_rest(DI), R14
	VMOVUPD Y8, (R14)
	VMOVUPD Y9, 32(R14)
	VZEROUPPER
	RET
