//go:build amd64 && !purego

package syncfilter

func cpuid(leaf, sub uint32) (eax, ebx, ecx, edx uint32)

func xgetbv0() (eax uint32)

// cpu is what the processor and the operating system support, read once.
var cpu = detectCPU()

type cpuFeatures struct {
	amd    bool // AMD or Hygon: memory renaming (Zen 2 and later)
	zen5   bool // AMD family 26 or later (Zen 5): two-cycle vector latency
	sse41  bool // SSSE3 and SSE4.1
	avx2   bool // AVX2, with the OS saving YMM state
	avx512 bool // AVX-512 F, VL and BW, and BMI2, with the OS saving ZMM and mask state
}

func detectCPU() (f cpuFeatures) {
	maxLeaf, vendor1, vendor3, vendor2 := cpuid(0, 0)
	f.amd = vendor1 == 0x68747541 && vendor2 == 0x69746e65 && vendor3 == 0x444d4163 || // "AuthenticAMD"
		vendor1 == 0x6f677948 && vendor2 == 0x6e65476e && vendor3 == 0x656e6975 // "HygonGenuine"
	if maxLeaf < 1 {
		return f
	}
	eax1, _, ecx1, _ := cpuid(1, 0)
	f.zen5 = f.amd && cpuFamily(eax1) >= 26
	const ssse3, sse41, osxsave, avx = 1 << 9, 1 << 19, 1 << 27, 1 << 28
	f.sse41 = ecx1&ssse3 != 0 && ecx1&sse41 != 0
	if maxLeaf < 7 || ecx1&osxsave == 0 || ecx1&avx == 0 {
		return f
	}
	xcr0 := xgetbv0()
	_, ebx7, _, _ := cpuid(7, 0)
	const ymmState, zmmState = 1<<1 | 1<<2, 1<<5 | 1<<6 | 1<<7
	f.avx2 = xcr0&ymmState == ymmState && ebx7&(1<<5) != 0
	const bmi2, avx512f, avx512bw, avx512vl = 1 << 8, 1 << 16, 1 << 30, 1 << 31
	f.avx512 = f.avx2 && xcr0&zmmState == zmmState &&
		ebx7&(bmi2|avx512f|avx512bw|avx512vl) == bmi2|avx512f|avx512bw|avx512vl
	return f
}

// cpuFamily is the display family of CPUID leaf 1's EAX: the base family,
// plus the extended family when the base is 15.
func cpuFamily(eax1 uint32) uint32 {
	family := eax1 >> 8 & 0xf
	if family == 0xf {
		family += eax1 >> 20 & 0xff
	}
	return family
}
