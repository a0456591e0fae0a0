package passage

import "unsafe"

// The uniformization step's inner loop for 8 interleaved passages, in
// AVX2 assembly: two 4-lane multiplies and adds an entry where the Go
// loop issues eight of each. It performs the same roundings in the same
// order as commonRows8Go (no fused multiply-add), so switching between
// them never changes a result; the test checks that bit for bit.

//go:noescape
func commonRows8AVX2(y, v, diag *float64, cPtr *uint32, cSrc *int32, cIdx *uint16, val *float64, lo, hi, rowBytes int)

//go:noescape
func specialRows8AVX2(a *rowArgs)

func cpuid(eaxArg, ecxArg uint32) (eax, ebx, ecx, edx uint32)

func xgetbv0() (eax, edx uint32)

// hasAVX2 reports whether the processor has AVX2 and the operating system
// saves the 256-bit registers across context switches.
func hasAVX2() bool {
	maxLeaf, _, _, _ := cpuid(0, 0)
	if maxLeaf < 7 {
		return false
	}
	_, _, ecx1, _ := cpuid(1, 0)
	const osxsave, avx = 1 << 27, 1 << 28
	if ecx1&osxsave == 0 || ecx1&avx == 0 {
		return false
	}
	if xcr0, _ := xgetbv0(); xcr0&6 != 6 { // XMM and YMM state enabled
		return false
	}
	_, ebx7, _, _ := cpuid(7, 0)
	return ebx7&(1<<5) != 0
}

// commonRowsAsm is the assembly kernel when the processor can run it.
var commonRowsAsm = hasAVX2()

// commonRows8 computes rows lo..hi-1 of one group's common part (see
// commonRows8Go) with the assembly kernel when it may run. y and v start
// at the group's first lane; L is the row length. The caller guarantees
// what buildKernel does: every source index is below the number of rows
// of v, every rate index below len(val), and y and v hold hi rows.
func commonRows8(y, v, diag []float64, cPtr []uint32, cSrc []int32, cIdx []uint16, val []float64, lo, hi, L int) {
	if !commonRowsAsm || lo >= hi {
		commonRows8Go(y, v, diag, cPtr, cSrc, cIdx, val, lo, hi, L)
		return
	}
	_ = y[(hi-1)*L+7]
	_ = v[(hi-1)*L+7]
	_ = diag[hi-1]
	_ = cPtr[hi]
	if e := cPtr[hi]; e > 0 {
		_ = cSrc[e-1]
		_ = cIdx[e-1]
	}
	commonRows8AVX2(&y[0], &v[0], &diag[0], &cPtr[0], first(cSrc), first(cIdx), first(val), lo, hi, 8*L)
}

// first is the address of s[0], nil for an empty s (the kernel reads no
// entry then).
func first[T any](s []T) *T {
	if len(s) == 0 {
		return nil
	}
	return &s[0]
}

// specialRows8 runs specialRows8Go for group g of a block's kernel, in
// assembly when it may (y and v start at the group's first lane).
func specialRows8(a *rowArgs, k *kernel, g int, y, v []float64, sIdx []uint16) {
	if !commonRowsAsm || a.lo >= a.hi {
		specialRows8Go(a, k, g, y, v, sIdx)
		return
	}
	L, G := k.lanes, k.groups
	_ = y[(a.hi-1)*L+7]
	_ = v[(k.n-1)*L+7]
	_ = k.sPtr[a.hi]
	_ = k.live[(a.hi-1)*G+g]
	if k.zero != nil {
		_ = k.zero[(a.hi-1)*G+g]
		a.zero = &k.zero[g]
	}
	if e := k.sPtr[a.hi]; e > 0 {
		_ = k.sSrc[e-1]
		_ = sIdx[e-1]
		_ = k.sMask[int(e-1)*G+g]
	}
	a.y, a.v = &y[0], &v[0]
	a.sPtr, a.sSrc, a.sIdx, a.val = &k.sPtr[0], first(k.sSrc), first(sIdx), first(k.val)
	a.sMask, a.live = first(k.sMask[g:]), &k.live[g]
	specialRows8AVX2(a)
}

// hasAssemblyKernel reports whether the processor runs the assembly kernel.
func hasAssemblyKernel() bool { return hasAVX2() }

//go:noescape
func step1AVX(a *step1Args)

// step1Asm fills a's pointers from the kernel and runs step1AVX on rows
// a.lo..a.hi-1 (a.lo < a.hi).
func step1Asm(a *step1Args, k *kernel, cIdx, sIdx []uint16, v, y []float64) {
	n := k.n
	_ = y[a.hi-1]
	_ = v[n-1]
	_ = k.diag[n-1]
	_ = k.cPtr[a.hi]
	_ = k.sPtr[a.hi]
	_ = k.live[a.hi-1]
	if e := k.cPtr[a.hi]; e > 0 {
		_ = k.cSrc[e-1]
		_ = cIdx[e-1]
	}
	if e := k.sPtr[a.hi]; e > 0 {
		_ = k.sSrc[e-1]
		_ = sIdx[e-1]
	}
	a.y, a.v, a.diag = &y[0], &v[0], &k.diag[0]
	a.cPtr, a.cSrc, a.cIdx = &k.cPtr[0], first(k.cSrc), first(cIdx)
	a.sPtr, a.sSrc, a.sIdx = &k.sPtr[0], first(k.sSrc), first(sIdx)
	a.val, a.live = first(k.val), &k.live[0]
	if k.anyZ {
		_ = k.zero[a.hi-1]
		a.zero = &k.zero[0]
	}
	step1AVX(a)
}

//go:noescape
func backwardRowsAVX(rowPtr *int64, col *int32, idx *uint16, val, d, s, u, y *float64, lo, hi int)

// backwardRows runs backwardRowsGo, in assembly when it may. Every column
// is below len(u) and every index below len(val) (solveBackward builds
// them so).
func backwardRows(rowPtr []int64, col []int32, idx []uint16, val, d, s, u, y []float64, lo, hi int) {
	if !commonRowsAsm || lo >= hi {
		backwardRowsGo(rowPtr, col, idx, val, d, s, u, y, lo, hi)
		return
	}
	_ = rowPtr[hi]
	_ = d[hi-1]
	_ = s[hi-1]
	_ = u[hi-1]
	_ = y[hi-1]
	if e := rowPtr[hi]; e > 0 {
		_ = col[e-1]
		_ = idx[e-1]
	}
	backwardRowsAVX(&rowPtr[0], first(col), first(idx), first(val), &d[0], &s[0], &u[0], &y[0], lo, hi)
}

//go:noescape
func fusedRows8AVX2(a *rowArgs)

// fusedRowsAsm is the one-pass kernel (fusedRows8AVX2) when the processor
// can run it; a variable so that tests and benchmarks can compare it with
// the two passes it replaces.
var fusedRowsAsm = commonRowsAsm

// alignedForStreaming reports whether y's rows can take 32-byte
// non-temporal stores: its first element is 32-byte aligned (rows are
// multiples of 64 bytes apart). Go's allocator gives such vectors at
// least that alignment; this is checked, not assumed.
func alignedForStreaming(y []float64) bool {
	return len(y) > 0 && uintptr(unsafe.Pointer(&y[0]))%32 == 0
}

// fusedRows8 runs commonRows8Go then specialRows8Go on rows a.lo..a.hi-1
// of group g in one pass, in assembly (fusedRows8AVX2: the same
// operations in the same order, so the same bits). y and v start at the
// group's first lane; y must be 32-byte aligned.
func fusedRows8(a *rowArgs, k *kernel, g int, y, v []float64, cIdx, sIdx []uint16) {
	if a.lo >= a.hi {
		return
	}
	L, G := k.lanes, k.groups
	_ = y[(a.hi-1)*L+7]
	_ = v[(k.n-1)*L+7]
	_ = k.diag[a.hi-1]
	_ = k.cPtr[a.hi]
	_ = k.sPtr[a.hi]
	_ = k.live[(a.hi-1)*G+g]
	if k.zero != nil {
		_ = k.zero[(a.hi-1)*G+g]
		a.zero = &k.zero[g]
	}
	if e := k.cPtr[a.hi]; e > 0 {
		_ = k.cSrc[e-1]
		_ = cIdx[e-1]
	}
	if e := k.sPtr[a.hi]; e > 0 {
		_ = k.sSrc[e-1]
		_ = sIdx[e-1]
		_ = k.sMask[int(e-1)*G+g]
	}
	a.y, a.v, a.diag = &y[0], &v[0], &k.diag[0]
	a.cPtr, a.cSrc, a.cIdx = &k.cPtr[0], first(k.cSrc), first(cIdx)
	a.sPtr, a.sSrc, a.sIdx, a.val = &k.sPtr[0], first(k.sSrc), first(sIdx), first(k.val)
	a.sMask, a.live = first(k.sMask[g:]), &k.live[g]
	fusedRows8AVX2(a)
}
