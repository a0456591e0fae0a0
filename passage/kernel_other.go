//go:build !amd64

package passage

// commonRowsAsm: there is no assembly kernel on this architecture.
var commonRowsAsm = false

// commonRows8 is commonRows8Go (the assembly kernel is for amd64 only).
func commonRows8(y, v, diag []float64, cPtr []uint32, cSrc []int32, cIdx []uint16, val []float64, lo, hi, L int) {
	commonRows8Go(y, v, diag, cPtr, cSrc, cIdx, val, lo, hi, L)
}

// specialRows8 is specialRows8Go (the assembly kernel is for amd64 only).
func specialRows8(a *rowArgs, k *kernel, g int, y, v []float64, sIdx []uint16) {
	specialRows8Go(a, k, g, y, v, sIdx)
}

// hasAssemblyKernel: never, on this architecture.
func hasAssemblyKernel() bool { return false }

// step1Asm is never called here (commonRowsAsm is false).
func step1Asm(a *step1Args, k *kernel, cIdx, sIdx []uint16, v, y []float64) {
	panic("passage: no assembly kernel on this architecture")
}

// backwardRows is backwardRowsGo (the assembly kernel is for amd64 only).
func backwardRows(rowPtr []int64, col []int32, idx []uint16, val, d, s, u, y []float64, lo, hi int) {
	backwardRowsGo(rowPtr, col, idx, val, d, s, u, y, lo, hi)
}

// fusedRowsAsm: there is no assembly kernel on this architecture.
var fusedRowsAsm = false

// alignedForStreaming: never used here (fusedRowsAsm is false).
func alignedForStreaming(y []float64) bool { return false }

// fusedRows8 is never called here (fusedRowsAsm is false).
func fusedRows8(a *rowArgs, k *kernel, g int, y, v []float64, cIdx, sIdx []uint16) {
	panic("passage: no assembly kernel on this architecture")
}
