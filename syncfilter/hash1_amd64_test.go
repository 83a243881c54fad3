//go:build amd64 && !purego

package syncfilter

import "testing"

// TestBestKernel: the single-block kernel each CPU gets, as measured
// (-bench BlockKernelsLatency): the GPR kernel on Zen 5, the AVX-512 one
// on Zen 4 and on Intel with AVX-512.
func TestBestKernel(t *testing.T) {
	for _, c := range []struct {
		name string
		f    cpuFeatures
		want int
	}{
		{"zen5", cpuFeatures{amd: true, zen5: true, sse41: true, avx2: true, avx512: true}, kernelGPRMasked},
		{"zen5 without AVX-512", cpuFeatures{amd: true, zen5: true, sse41: true, avx2: true}, kernelGPR},
		{"zen4", cpuFeatures{amd: true, sse41: true, avx2: true, avx512: true}, kernelAVX512},
		{"zen3", cpuFeatures{amd: true, sse41: true, avx2: true}, kernelGPR},
		{"intel avx-512", cpuFeatures{sse41: true, avx2: true, avx512: true}, kernelAVX512},
		{"intel avx2", cpuFeatures{sse41: true, avx2: true}, kernelAVX2},
		{"sse4.1", cpuFeatures{sse41: true}, kernelSSE41},
		{"none", cpuFeatures{}, kernelGPR},
	} {
		if got := bestKernel(c.f); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, kernelNames[got], kernelNames[c.want])
		}
	}
	t.Logf("this CPU (%+v): %s", cpu, kernelNames[blockKernel])
}

// TestCPUFamily: the families of the two AMD CPUs measured here, and an
// Intel one, from their CPUID leaf 1 EAX.
func TestCPUFamily(t *testing.T) {
	for eax, want := range map[uint32]uint32{
		0x00a10f11: 25, // EPYC family 25, model 17 (Zen 4)
		0x00b00f21: 26, // EPYC family 26, model 2 (Zen 5)
		0x000806f8: 6,  // Xeon, family 6
		0x0ff00600: 6,  // an extended family beside a base below 15: not added
		0x00900f01: 24, // Hygon, family 0x18
	} {
		if got := cpuFamily(eax); got != want {
			t.Errorf("cpuFamily(%#x) = %d, want %d", eax, got, want)
		}
	}
}
