package syncfilter

import "math"

// The sizing model decides m and k by comparing a computed rate with the
// target, so a difference in the last bit of that rate can change the
// decision. Go's math functions are not the same bit for bit on every
// CPU: Exp is assembly on amd64, arm64 and s390x, Log on amd64 and s390x,
// Expm1 and Log1p on s390x, and the compiler fuses x*y + z into one
// multiply-add on arm64, s390x, ppc64, riscv64 and amd64 v3, in math's Go
// code as in ours. Under make cross, about one value of blockedFPR in six
// differed in its last bits from amd64's on arm64 and on s390x, and
// NewParams picked another m or k for targets near a boundary.
//
// The model therefore uses the functions below: IEEE-754 basic operations
// only, each correctly rounded on every CPU, and every product converted
// to float64 before it is added (an explicit conversion forbids fusing;
// the Go spec, "Floating-point operators"). Their values are the same on
// every CPU and every Go version, within a few units in the last place of
// math's.

const (
	ln2Hi = 6.93147180369123816490e-01 // ln 2, upper bits: k·ln2Hi is exact for |k| < 2^11
	ln2Lo = 1.90821492927058770002e-10 // ln 2 - ln2Hi
	log2e = 1.44269504088896338700e+00 // 1 / ln 2
)

// expSeries is the Taylor series of e^r - 1 for |r| ≤ ln2/2: the terms
// from r^1/1! to r^14/14! (the next is below 2^-60 of the sum).
func expSeries(r float64) float64 {
	p := 1.0 / 87178291200 // 1/14!
	for _, c := range [...]float64{1.0 / 6227020800, 1.0 / 479001600, 1.0 / 39916800, 1.0 / 3628800,
		1.0 / 362880, 1.0 / 40320, 1.0 / 5040, 1.0 / 720, 1.0 / 120, 1.0 / 24, 1.0 / 6, 1.0 / 2, 1} {
		p = float64(p*r) + c
	}
	return float64(p * r)
}

// expDet returns e^x.
func expDet(x float64) float64 {
	switch {
	case x != x:
		return x
	case x > 709.8:
		return math.Inf(1)
	case x < -745.2:
		return 0
	}
	k := math.Floor(float64(x*log2e) + 0.5) // x = k·ln 2 + r, |r| ≤ ln2/2 (a hair more)
	r := float64(x-float64(k*ln2Hi)) - float64(k*ln2Lo)
	return math.Ldexp(1+expSeries(r), int(k))
}

// powUint returns x^n by repeated squaring.
func powUint(x float64, n uint64) float64 {
	r := 1.0
	for ; n > 0; n >>= 1 {
		if n&1 == 1 {
			r *= x
		}
		x *= x
	}
	return r
}

// logDet returns ln x: -Inf for 0, NaN below 0.
func logDet(x float64) float64 {
	switch {
	case x != x || math.IsInf(x, 1):
		return x
	case x < 0:
		return math.NaN()
	case x == 0:
		return math.Inf(-1)
	}
	f, e := math.Frexp(x) // x = f·2^e, f in [1/2, 1)
	if f < math.Sqrt2/2 {
		f, e = 2*f, e-1 // f in [√½, √2)
	}
	// ln f = 2·atanh(s) = 2(s + s³/3 + s⁵/5 + ...) with s = (f-1)/(f+1),
	// |s| ≤ 0.172: the terms to s^25/25 (the next is below 2^-60 of the sum).
	s := (f - 1) / (f + 1)
	s2 := float64(s * s)
	p := 1.0 / 25
	for j := 23.0; j >= 3; j -= 2 {
		p = float64(p*s2) + 1/j
	}
	lnf := float64(2*s) + float64(float64(2*s)*float64(s2*p))
	ef := float64(e)
	return float64(ef*ln2Hi) + (float64(ef*ln2Lo) + lnf)
}

// lnFactorial returns ln(x!) = lgamma(x+1) for a whole x ≥ 0.
func lnFactorial(x float64) float64 {
	if x < 20 {
		f := 1.0 // exact: every factorial up to 22! is a float64
		for j := 2.0; j <= x; j++ {
			f *= j
		}
		return logDet(f)
	}
	// Stirling's series: x ln x - x + ln(2πx)/2 + 1/(12x) - 1/(360x³) +
	// 1/(1260x⁵) - 1/(1680x⁷) + 1/(1188x⁹); for x ≥ 20 the next term is
	// below 2^-56 of the sum.
	const halfLn2Pi = 0.918938533204672741780329736406 // ln(2π)/2
	r := 1 / x
	r2 := float64(r * r)
	c := 1.0 / 1188
	for _, t := range [...]float64{-1.0 / 1680, 1.0 / 1260, -1.0 / 360, 1.0 / 12} {
		c = float64(c*r2) + t
	}
	lx := logDet(x)
	return float64(x*lx) - x + (float64(0.5*lx) + halfLn2Pi + float64(c*r))
}
