//go:build !amd64 || purego

package nettrace

// asciiz copies the NUL-terminated ASCII text at the start of UTF-16LE
// src to dst, one byte per code unit, and returns its length and the
// bytes of src it took, terminator included (all of src, an odd byte
// included, when it has no NUL). It returns end -1 when a unit before the
// terminator is not ASCII, or when dst is shorter than len(src)/2. It may
// write all of dst[:len(src)/2].
func asciiz(dst, src []byte) (n, end int) { return asciizGo(dst, src) }
