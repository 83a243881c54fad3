// Command hash8gen writes hash8_amd64.s: keyed BLAKE3 of eight inputs of at
// most 64 bytes at once, one input per 32-bit lane of the AVX2 registers.
//
//	go generate ./syncfilter    (runs: go run ./internal/hash8gen -o hash8_amd64.s)
//
// Each input is a single block of a single chunk, so each lane computes one
// compression: the chaining value is the key, the counter is 0, the block
// length is the lane's input length and the flags are CHUNK_START |
// CHUNK_END | ROOT | KEYED_HASH. With one state word per register (v0 … v15 in Y0 … Y15) the
// diagonal step needs no shuffling, only other register tuples. Rotations
// by 16 and 8 are byte shuffles; by 12 and 7 they are two shifts and an OR
// and need a scratch register, which the c row provides: its first
// register is spilled to the stack while the b row rotates.
package main

import (
	"fmt"
	"io"

	"github.com/syncfilter/syncfilter/syncfilter/internal/asmgen"
)

var w io.Writer

func emit(format string, args ...any) { fmt.Fprintf(w, format+"\n", args...) }

func y(i int) string { return fmt.Sprintf("Y%d", i) }

// The frame holds the transposed message (16 words × 8 lanes) and a
// 32-byte spill slot.
const (
	msgOff   = 0
	spillOff = 512
	frame    = 544
)

func msg(j int) string { return fmt.Sprintf("%d(SP)", msgOff+32*j) }

// transpose8 turns rows Y0…Y7 (row r: eight 32-bit words) into columns
// Y8…Y15 (Y8+j: word j of every row), using Y0…Y15.
func transpose8() {
	for i := 0; i < 4; i++ { // interleave words of row pairs
		emit("	VPUNPCKLDQ %s, %s, %s", y(2*i+1), y(2*i), y(8+2*i))
		emit("	VPUNPCKHDQ %s, %s, %s", y(2*i+1), y(2*i), y(9+2*i))
	}
	for _, q := range []int{0, 4} { // interleave 64-bit pairs of row quads
		emit("	VPUNPCKLQDQ %s, %s, %s", y(10+q), y(8+q), y(0+q))
		emit("	VPUNPCKHQDQ %s, %s, %s", y(10+q), y(8+q), y(1+q))
		emit("	VPUNPCKLQDQ %s, %s, %s", y(11+q), y(9+q), y(2+q))
		emit("	VPUNPCKHQDQ %s, %s, %s", y(11+q), y(9+q), y(3+q))
	}
	for j := 0; j < 4; j++ { // join 128-bit halves: columns j and j+4
		emit("	VPERM2I128 $0x20, %s, %s, %s", y(4+j), y(j), y(8+j))
		emit("	VPERM2I128 $0x31, %s, %s, %s", y(4+j), y(j), y(12+j))
	}
}

// step is one G on four tuples at once (a column step or a diagonal
// step), with message words mx[i], my[i] for tuple i.
func step(tuples [4][4]int, mx, my [4]int) {
	half := func(m [4]int, rotD string, rotB int) {
		for i, t := range tuples {
			emit("\tVPADDD %s, %s, %s", msg(m[i]), y(t[0]), y(t[0]))
			emit("\tVPADDD %s, %s, %s", y(t[1]), y(t[0]), y(t[0]))
		}
		for _, t := range tuples {
			emit("\tVPXOR %s, %s, %s", y(t[0]), y(t[3]), y(t[3]))
			emit("\tVPSHUFB %s<>(SB), %s, %s", rotD, y(t[3]), y(t[3]))
		}
		for _, t := range tuples {
			emit("\tVPADDD %s, %s, %s", y(t[3]), y(t[2]), y(t[2]))
		}
		for _, t := range tuples {
			emit("\tVPXOR %s, %s, %s", y(t[2]), y(t[1]), y(t[1]))
		}
		// Spill the first c register and use it as scratch for the b row.
		scratch := tuples[0][2]
		emit("\tVMOVDQU %s, %d(SP)", y(scratch), spillOff)
		for _, t := range tuples {
			emit("\tVPSRLD $%d, %s, %s", rotB, y(t[1]), y(scratch))
			emit("\tVPSLLD $%d, %s, %s", 32-rotB, y(t[1]), y(t[1]))
			emit("\tVPOR %s, %s, %s", y(scratch), y(t[1]), y(t[1]))
		}
		emit("\tVMOVDQU %d(SP), %s", spillOff, y(scratch))
	}
	half(mx, "rot16", 12)
	half(my, "rot8", 7)
}

func main() { asmgen.Main("hash8gen", generate) }

func generate(out io.Writer) {
	w = out
	asmgen.Preamble(w, "hash8gen", "hash8_amd64.s")
	for _, r := range []struct {
		name string
		by   int
	}{{"rot16", 2}, {"rot8", 1}} {
		// Byte shuffle rotating each 32-bit word right by r.by bytes.
		for lane := 0; lane < 32; lane++ {
			word, b := lane/4, lane%4
			emit("DATA %s<>+%d(SB)/1, $%d", r.name, lane, 4*word+(b+r.by)%4)
		}
		emit("GLOBL %s<>(SB), RODATA|NOPTR, $32", r.name)
		emit("")
	}
	emit("// func hash8AVX2(key *[8]uint32, in *[8][64]byte, lens *[8]uint32, out *[8][32]byte)")
	emit("TEXT ·hash8AVX2(SB), 0, $%d-32", frame)
	emit("\tMOVQ key+0(FP), AX")
	emit("\tMOVQ in+8(FP), SI")
	emit("\tMOVQ lens+16(FP), BX")
	emit("\tMOVQ out+24(FP), DI")
	// Transpose the input blocks into the message area: words 0-7, then
	// words 8-15 of every lane.
	for half := 0; half < 2; half++ {
		for l := 0; l < 8; l++ {
			emit("\tVMOVDQU %d(SI), %s", 64*l+32*half, y(l))
		}
		transpose8()
		for j := 0; j < 8; j++ {
			emit("\tVMOVDQU %s, %s", y(8+j), msg(8*half+j))
		}
	}
	for i := 0; i < 8; i++ {
		emit("\tVPBROADCASTD %d(AX), %s", 4*i, y(i))
	}
	for i := 0; i < 4; i++ {
		emit("\tVPBROADCASTD iv<>+%d(SB), %s", 4*i, y(8+i))
	}
	emit("\tVPXOR Y12, Y12, Y12")
	emit("\tVPXOR Y13, Y13, Y13")
	emit("\tVMOVDQU (BX), Y14")
	emit("\tMOVL $%d, CX", asmgen.Flags)
	emit("\tMOVL CX, %d(SP)", spillOff)
	emit("\tVPBROADCASTD %d(SP), Y15", spillOff)
	asmgen.Steps(func(round int, diagonal bool, tuples [4][4]int, mx, my [4]int) {
		if !diagonal {
			emit("\t// round %d", round+1)
		}
		step(tuples, mx, my)
	})
	// Output word j of every lane is v_j ^ v_{j+8}; transpose to one
	// 32-byte digest per lane.
	for i := 0; i < 8; i++ {
		emit("\tVPXOR %s, %s, %s", y(8+i), y(i), y(i))
	}
	transpose8()
	for l := 0; l < 8; l++ {
		emit("\tVMOVDQU %s, %d(DI)", y(8+l), 32*l)
	}
	emit("\tVZEROUPPER")
	emit("\tRET")
	emit("")
	emit("// func cpuid(leaf, sub uint32) (eax, ebx, ecx, edx uint32)")
	emit("TEXT ·cpuid(SB), NOSPLIT, $0-24")
	emit("\tMOVL leaf+0(FP), AX")
	emit("\tMOVL sub+4(FP), CX")
	emit("\tCPUID")
	emit("\tMOVL AX, eax+8(FP)")
	emit("\tMOVL BX, ebx+12(FP)")
	emit("\tMOVL CX, ecx+16(FP)")
	emit("\tMOVL DX, edx+20(FP)")
	emit("\tRET")
	emit("")
	emit("// func xgetbv0() (eax uint32)")
	emit("TEXT ·xgetbv0(SB), NOSPLIT, $0-4")
	emit("\tMOVL $0, CX")
	emit("\tXGETBV")
	emit("\tMOVL AX, eax+0(FP)")
	emit("\tRET")
}
