// Command hash1gen writes hash1_amd64.s: keyed BLAKE3 of one input of at
// most 64 bytes, the single-key query and insert path, in five kernels for
// the instruction sets and latencies a CPU may have: three row-parallel
// vector kernels (below) and two in general-purpose registers (see
// scalar).
//
//	go generate ./syncfilter    (runs: go run ./internal/hash1gen -o hash1_amd64.s)
//
// The input is a single block of a single chunk, so its digest is one
// compression: the chaining value is the key, the counter 0, the block
// length the input's length, the flags CHUNK_START | CHUNK_END | ROOT |
// KEYED_HASH, and the digest the first half of the output XORed with the
// second.
//
// One compression is a chain of dependent operations, so it is computed
// row-parallel: the 4×4 state is four 128-bit rows a, b, c, d (words
// 0-3, 4-7, 8-11, 12-15), and one G on four columns at once is seven
// vector operations. For the diagonal step the rows are rotated across
// lanes so that the diagonals become columns. Rotating a, c and d and
// leaving b in place keeps the rotations off the critical path: b is the
// last row a step finishes and the first the next one needs (a += b),
// while a, c and d are finished earlier in the step. Lane i then holds
// diagonal (i+3) mod 4.
//
// The message words each G needs are gathered before the rounds, off the
// critical path, in the order the lanes need them: for round r, four
// vectors (column x, column y, diagonal x, diagonal y) of four words.
//
// The variants:
//
//	hash1SSE41   SSE4.1: two-operand forms; message vectors built with
//	             PINSRD from the block in memory; rotations by 16 and 8
//	             are byte shuffles, by 12 and 7 two shifts and an OR.
//	hash1AVX2    AVX2: three-operand VEX forms; a round's 16 message words
//	             come from two VPERMDs and a blend per 256-bit register.
//	hash1AVX512  AVX-512 (F, VL, BW): native rotations (VPRORD), a masked
//	             load of exactly the input's bytes (no copy, no padding in
//	             memory), and each round's message from one two-table
//	             permutation (VPERMI2D) per 256-bit register. Only 128- and
//	             256-bit registers are used.
package main

import (
	"fmt"
	"io"

	"github.com/syncfilter/syncfilter/syncfilter/internal/asmgen"
)

// Lane shuffles (PSHUFD immediates) that turn the rows' columns into
// diagonals (toDiag) and back (fromDiag), for rows a, c and d. Lane i of
// the result takes lane sel[i] of the source.
var (
	toDiag   = map[string][4]int{"a": {3, 0, 1, 2}, "c": {1, 2, 3, 0}, "d": {2, 3, 0, 1}}
	fromDiag = map[string][4]int{"a": {1, 2, 3, 0}, "c": {3, 0, 1, 2}, "d": {2, 3, 0, 1}}
)

func imm(sel [4]int) int { return sel[0] | sel[1]<<2 | sel[2]<<4 | sel[3]<<6 }

// layout returns the message word indexes of every round, 16 per round in
// the order column x, column y, diagonal x, diagonal y (lane by lane),
// with lane i of the diagonal vectors holding diagonal (i+3) mod 4.
func layout() [7][16]int {
	var out [7][16]int
	for r, s := range asmgen.Schedule() {
		for i := 0; i < 4; i++ {
			j := (i + 3) % 4
			out[r][i] = s[2*i]
			out[r][4+i] = s[2*i+1]
			out[r][8+i] = s[8+2*j]
			out[r][12+i] = s[8+2*j+1]
		}
	}
	return out
}

var w io.Writer

func emit(format string, args ...any) { fmt.Fprintf(w, format+"\n", args...) }

// A variant is one instruction set's spelling of the vector operations on
// rows held in 128-bit registers.
type variant struct {
	name string
	// op emits dst = dst <op> src for op in "add", "xor".
	op func(op, src, dst string)
	// ror emits x = x rotated right by n bits in each 32-bit lane.
	ror func(n int, x string)
	// shuffle emits dst = the lanes of src selected by sel.
	shuffle func(sel [4]int, src, dst string)
	// setup emits the message gathering and the rows' initial values;
	// msg(r, v) then names the register holding vector v (0 column x,
	// 1 column y, 2 diagonal x, 3 diagonal y) of round r.
	setup func()
	msg   func(r, v int) string
}

// Rows.
const ra, rb, rc, rd = "X0", "X1", "X2", "X3"

func compress(v variant) {
	v.setup()
	half := func(m string, r1, r2 int) {
		v.op("add", m, ra)
		v.op("add", rb, ra)
		v.op("xor", ra, rd)
		v.ror(r1, rd)
		v.op("add", rd, rc)
		v.op("xor", rc, rb)
		v.ror(r2, rb)
	}
	for r := 0; r < 7; r++ {
		emit("\t// round %d", r+1)
		half(v.msg(r, 0), 16, 12)
		half(v.msg(r, 1), 8, 7)
		for _, row := range []string{"a", "c", "d"} {
			reg := map[string]string{"a": ra, "c": rc, "d": rd}[row]
			v.shuffle(toDiag[row], reg, reg)
		}
		half(v.msg(r, 2), 16, 12)
		half(v.msg(r, 3), 8, 7)
		for _, row := range []string{"a", "c", "d"} {
			reg := map[string]string{"a": ra, "c": rc, "d": rd}[row]
			v.shuffle(fromDiag[row], reg, reg)
		}
	}
}

// Arguments, the same for every variant:
//
//	func hash1X(key *[8]uint32, in *byte, n uint64, out *[32]byte)
//
// in holds n ≤ 64 input bytes; the SSE4.1 and AVX2 variants read 64 bytes
// there (the caller pads), the AVX-512 variant exactly n.
func header(name string) {
	emit("// func %s(key *[8]uint32, in *byte, n uint64, out *[32]byte)", name)
	emit("TEXT ·%s(SB), NOSPLIT, $0-32", name)
	emit("\tMOVQ key+0(FP), AX")
	emit("\tMOVQ in+8(FP), SI")
	emit("\tMOVQ n+16(FP), BX")
	emit("\tMOVQ out+24(FP), DI")
}

// dRow emits row d = (0, 0, n, flags) into reg from BX, using CX.
func dRow(vex bool, reg string) {
	emit("\tMOVQ $%d, CX", uint64(asmgen.Flags)<<32)
	emit("\tORQ BX, CX")
	if vex {
		emit("\tVPXOR %s, %s, %s", reg, reg, reg)
		emit("\tVPINSRQ $1, CX, %s, %s", reg, reg)
	} else {
		emit("\tPXOR %s, %s", reg, reg)
		emit("\tPINSRQ $1, CX, %s", reg)
	}
}

func sse41() variant {
	lay := layout()
	v := variant{name: "hash1SSE41"}
	v.op = func(op, src, dst string) {
		emit("\t%s %s, %s", map[string]string{"add": "PADDL", "xor": "PXOR"}[op], src, dst)
	}
	v.ror = func(n int, x string) {
		switch n {
		case 16:
			emit("\tPSHUFB X4, %s", x)
		case 8:
			emit("\tPSHUFB X5, %s", x)
		default:
			emit("\tMOVO %s, X6", x)
			emit("\tPSRLL $%d, X6", n)
			emit("\tPSLLL $%d, %s", 32-n, x)
			emit("\tPOR X6, %s", x)
		}
	}
	v.shuffle = func(sel [4]int, src, dst string) { emit("\tPSHUFL $0x%02x, %s, %s", imm(sel), src, dst) }
	// Message vectors are built just before use, from the padded block,
	// into X7…X10 in turn; renaming lets the CPU build them early.
	next := 0
	v.msg = func(r, vec int) string {
		reg := fmt.Sprintf("X%d", 7+next%4)
		next++
		words := lay[r][4*vec : 4*vec+4]
		emit("\tMOVL %d(SI), %s", 4*words[0], reg)
		for lane := 1; lane < 4; lane++ {
			emit("\tPINSRD $%d, %d(SI), %s", lane, 4*words[lane], reg)
		}
		return reg
	}
	v.setup = func() {
		emit("\tMOVOU rot16<>(SB), X4")
		emit("\tMOVOU rot8<>(SB), X5")
		emit("\tMOVOU 0(AX), %s", ra)
		emit("\tMOVOU 16(AX), %s", rb)
		emit("\tMOVOU iv<>(SB), %s", rc)
		dRow(false, rd)
	}
	return v
}

func avx2() variant {
	lay := layout()
	v := variant{name: "hash1AVX2"}
	v.op = func(op, src, dst string) {
		emit("\t%s %s, %s, %s", map[string]string{"add": "VPADDD", "xor": "VPXOR"}[op], src, dst, dst)
	}
	v.ror = func(n int, x string) {
		switch n {
		case 16:
			emit("\tVPSHUFB X4, %s, %s", x, x)
		case 8:
			emit("\tVPSHUFB X5, %s, %s", x, x)
		default:
			emit("\tVPSRLD $%d, %s, X6", n, x)
			emit("\tVPSLLD $%d, %s, %s", 32-n, x, x)
			emit("\tVPOR X6, %s, %s", x, x)
		}
	}
	v.shuffle = func(sel [4]int, src, dst string) { emit("\tVPSHUFD $0x%02x, %s, %s", imm(sel), src, dst) }
	// A round's 16 words are two 256-bit registers: column x|y in Y8,
	// diagonal x|y in Y9; the upper halves go to X10 and X11. Each
	// 256-bit register takes its words from the block's lower and upper
	// eight words (two VPERMDs by the same index modulo 8) and a blend.
	v.msg = func(r, vec int) string {
		switch vec {
		case 0:
			for half, y := range []string{"Y8", "Y9"} {
				emit("\tVMOVDQU sched<>+%d(SB), Y12", 64*r+32*half)
				emit("\tVPERMD 0(SI), Y12, Y13")
				emit("\tVPERMD 32(SI), Y12, Y14")
				mask := 0
				for lane := 0; lane < 8; lane++ {
					if lay[r][8*half+lane] >= 8 {
						mask |= 1 << lane
					}
				}
				emit("\tVPBLENDD $0x%02x, Y14, Y13, %s", mask, y)
			}
			emit("\tVEXTRACTI128 $1, Y8, X10")
			emit("\tVEXTRACTI128 $1, Y9, X11")
			return "X8"
		case 1:
			return "X10"
		case 2:
			return "X9"
		}
		return "X11"
	}
	v.setup = func() {
		emit("\tVMOVDQU rot16<>(SB), X4")
		emit("\tVMOVDQU rot8<>(SB), X5")
		emit("\tVMOVDQU 0(AX), %s", ra)
		emit("\tVMOVDQU 16(AX), %s", rb)
		emit("\tVMOVDQU iv<>(SB), %s", rc)
		dRow(true, rd)
	}
	return v
}

func avx512() variant {
	v := variant{name: "hash1AVX512"}
	v.op = func(op, src, dst string) {
		emit("\t%s %s, %s, %s", map[string]string{"add": "VPADDD", "xor": "VPXORD"}[op], src, dst, dst)
	}
	v.ror = func(n int, x string) { emit("\tVPRORD $%d, %s, %s", n, x, x) }
	v.shuffle = func(sel [4]int, src, dst string) { emit("\tVPSHUFD $0x%02x, %s, %s", imm(sel), src, dst) }
	// The block's words are in Y16 (0-7) and Y17 (8-15). Round r's
	// column x|y words go to Y(18+2r), diagonal x|y to Y(19+2r), all
	// before the first round; upper halves are extracted per round.
	v.msg = func(r, vec int) string {
		lo, hi := 18+2*r, 19+2*r
		switch vec {
		case 0:
			emit("\tVEXTRACTI32X4 $1, Y%d, X%d", lo, 4+4*(r%2))
			emit("\tVEXTRACTI32X4 $1, Y%d, X%d", hi, 5+4*(r%2))
			return fmt.Sprintf("X%d", lo)
		case 1:
			return fmt.Sprintf("X%d", 4+4*(r%2))
		case 2:
			return fmt.Sprintf("X%d", hi)
		}
		return fmt.Sprintf("X%d", 5+4*(r%2))
	}
	v.setup = func() {
		// Mask registers: K1 selects the first min(n, 32) bytes, K2 the
		// rest; the masked-off bytes are neither read nor faulted on.
		emit("\tMOVQ $-1, CX")
		emit("\tBZHIQ BX, CX, CX") // the low n bits (all 64 when n = 64)
		emit("\tKMOVQ CX, K1")
		emit("\tKSHIFTRQ $32, K1, K2")
		emit("\tVMOVDQU8.Z 0(SI), K1, Y16")
		emit("\tVMOVDQU8.Z 32(SI), K2, Y17")
		for r := 0; r < 7; r++ {
			for half := 0; half < 2; half++ {
				dst := 18 + 2*r + half
				emit("\tVMOVDQU32 sched<>+%d(SB), Y%d", 64*r+32*half, dst)
				emit("\tVPERMI2D Y17, Y16, Y%d", dst)
			}
		}
		emit("\tVMOVDQU 0(AX), %s", ra)
		emit("\tVMOVDQU 16(AX), %s", rb)
		emit("\tVMOVDQU iv<>(SB), %s", rc)
		dRow(true, rd)
	}
	return v
}

// Scalar kernels. On CPUs whose vector operations take two cycles (AMD
// Zen 5), the row-parallel chain of 168 dependent vector operations is
// slower than the same chain in general-purpose registers, where each
// operation takes one cycle and the four columns of a step run side by
// side. The state is sixteen words and amd64 has fifteen registers
// besides SP, so v15 lives in the frame: CPUs that rename memory (Zen 3
// and later) forward those read-modify-writes without added latency.
// Message words are memory operands on a copy of the block in the frame.

// gpr holds state word i; v15 is the frame slot.
var gpr = [15]string{"AX", "BX", "CX", "DX", "SI", "DI", "BP", "R8", "R9", "R10", "R11", "R12", "R13", "R14", "R15"}

const (
	scalarMsg   = 0  // frame offset of the block copy
	scalarV15   = 64 // frame offset of v15
	scalarFrame = 72
)

func word(i int) string {
	if i == 15 {
		return fmt.Sprintf("%d(SP)", scalarV15)
	}
	return gpr[i]
}

// scalarStep is one G on four tuples (v indexes a, b, c, d) with message
// words mx, my, emitted operation by operation across the tuples.
func scalarStep(tuples [4][4]int, mx, my [4]int) {
	half := func(m [4]int, r1, r2 int) {
		for i, t := range tuples {
			emit("\tADDL %d(SP), %s", scalarMsg+4*m[i], word(t[0]))
		}
		for _, t := range tuples {
			emit("\tADDL %s, %s", word(t[1]), word(t[0]))
		}
		for _, t := range tuples {
			emit("\tXORL %s, %s", word(t[0]), word(t[3]))
		}
		for _, t := range tuples {
			emit("\tRORL $%d, %s", r1, word(t[3]))
		}
		for _, t := range tuples {
			emit("\tADDL %s, %s", word(t[3]), word(t[2]))
		}
		for _, t := range tuples {
			emit("\tXORL %s, %s", word(t[2]), word(t[1]))
		}
		for _, t := range tuples {
			emit("\tRORL $%d, %s", r2, word(t[1]))
		}
	}
	half(mx, 16, 12)
	half(my, 8, 7)
}

// scalar emits a scalar kernel. With masked, the block is loaded with
// AVX-512 masked loads of exactly n bytes (the caller passes the key's
// own bytes); without, the caller passes a zero-padded 64-byte copy.
func scalar(name string, masked bool) {
	emit("// func %s(key *[8]uint32, in *byte, n uint64, out *[32]byte)", name)
	emit("TEXT ·%s(SB), NOSPLIT, $%d-32", name, scalarFrame)
	emit("\tMOVQ in+8(FP), SI")
	if masked {
		emit("\tMOVQ n+16(FP), BX")
		emit("\tMOVQ $-1, CX")
		emit("\tBZHIQ BX, CX, CX")
		emit("\tKMOVQ CX, K1")
		emit("\tKSHIFTRQ $32, K1, K2")
		emit("\tVMOVDQU8.Z 0(SI), K1, Y0")
		emit("\tVMOVDQU8.Z 32(SI), K2, Y1")
		emit("\tVMOVDQU Y0, %d(SP)", scalarMsg)
		emit("\tVMOVDQU Y1, %d(SP)", scalarMsg+32)
		emit("\tVZEROUPPER")
	} else {
		for i := 0; i < 4; i++ {
			emit("\tMOVOU %d(SI), X%d", 16*i, i)
		}
		for i := 0; i < 4; i++ {
			emit("\tMOVOU X%d, %d(SP)", i, scalarMsg+16*i)
		}
	}
	emit("\tMOVL $%d, %d(SP)", asmgen.Flags, scalarV15)
	// The key words; AX holds the key pointer until v0 is loaded last.
	emit("\tMOVQ key+0(FP), AX")
	for i := 7; i >= 0; i-- {
		emit("\tMOVL %d(AX), %s", 4*i, gpr[i])
	}
	for i, v := range asmgen.IV {
		emit("\tMOVL $0x%08x, %s", v, gpr[8+i])
	}
	emit("\tXORL %s, %s", gpr[12], gpr[12])
	emit("\tXORL %s, %s", gpr[13], gpr[13])
	emit("\tMOVQ n+16(FP), %s", gpr[14])
	asmgen.Steps(func(round int, diagonal bool, tuples [4][4]int, mx, my [4]int) {
		if !diagonal {
			emit("\t// round %d", round+1)
		}
		scalarStep(tuples, mx, my)
	})
	// The digest: v[i] ^ v[i+8] for i < 8; v8's register then holds out.
	for i := 0; i < 8; i++ {
		emit("\tXORL %s, %s", word(8+i), gpr[i])
	}
	emit("\tMOVQ out+24(FP), %s", gpr[8])
	for i := 0; i < 8; i++ {
		emit("\tMOVL %s, %d(%s)", gpr[i], 4*i, gpr[8])
	}
	emit("\tRET")
	emit("")
}

func finish(vex bool) {
	// The digest: a ^ c, then b ^ d.
	if vex {
		emit("\tVPXOR %s, %s, %s", rc, ra, ra)
		emit("\tVPXOR %s, %s, %s", rd, rb, rb)
		emit("\tVMOVDQU %s, 0(DI)", ra)
		emit("\tVMOVDQU %s, 16(DI)", rb)
		emit("\tVZEROUPPER")
	} else {
		emit("\tPXOR %s, %s", rc, ra)
		emit("\tPXOR %s, %s", rd, rb)
		emit("\tMOVOU %s, 0(DI)", ra)
		emit("\tMOVOU %s, 16(DI)", rb)
	}
	emit("\tRET")
	emit("")
}

func main() { asmgen.Main("hash1gen", generate) }

func generate(out io.Writer) {
	w = out
	asmgen.Preamble(w, "hash1gen", "hash1_amd64.s")
	for _, r := range []struct {
		name string
		by   int
	}{{"rot16", 2}, {"rot8", 1}} {
		// Byte shuffle rotating each 32-bit word right by r.by bytes.
		for lane := 0; lane < 16; lane++ {
			word, b := lane/4, lane%4
			emit("DATA %s<>+%d(SB)/1, $%d", r.name, lane, 4*word+(b+r.by)%4)
		}
		emit("GLOBL %s<>(SB), RODATA|NOPTR, $16", r.name)
		emit("")
	}
	// The message schedule: for each round, 16 word indexes (one 32-bit
	// index per lane of two 256-bit registers). VPERMD reads them modulo
	// 8, VPERMI2D modulo 16.
	lay := layout()
	for r := range lay {
		for i, word := range lay[r] {
			emit("DATA sched<>+%d(SB)/4, $%d", 64*r+4*i, word)
		}
	}
	emit("GLOBL sched<>(SB), RODATA|NOPTR, $%d", 64*len(lay))
	emit("")
	for _, v := range []struct {
		v   variant
		vex bool
	}{{sse41(), false}, {avx2(), true}, {avx512(), true}} {
		header(v.v.name)
		compress(v.v)
		finish(v.vex)
	}
	scalar("hash1Scalar", false)
	scalar("hash1ScalarAVX512", true)
}
