package syncfilter

import (
	"context"
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/syncfilter/syncfilter/normalize"
)

func TestNewParamsRefusesBadInput(t *testing.T) {
	tests := []struct {
		name string
		n    uint64
		fpr  float64
		want error
	}{
		{"n zero", 0, 0.01, ErrInvalidParams},
		{"rate zero", 1000, 0, ErrInvalidParams},
		{"rate one", 1000, 1, ErrInvalidParams},
		{"rate negative", 1000, -0.5, ErrInvalidParams},
		{"rate above one", 1000, 1.5, ErrInvalidParams},
		{"rate NaN", 1000, math.NaN(), ErrInvalidParams},
		{"rate +Inf", 1000, math.Inf(1), ErrInvalidParams},
		{"beyond MaxBits", 1 << 40, 0.01, ErrTooLarge},
		{"rate too small for MaxBits", 1 << 30, 1e-300, ErrTooLarge},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := NewParams(tc.n, tc.fpr)
			if !errors.Is(err, tc.want) {
				t.Fatalf("NewParams(%d, %v) = %+v, %v; want %v", tc.n, tc.fpr, p, err, tc.want)
			}
		})
	}
}

func TestNewParamsMKAndValidate(t *testing.T) {
	if _, err := NewParamsMK(0, 7); !errors.Is(err, ErrInvalidParams) {
		t.Fatalf("m = 0: %v", err)
	}
	if _, err := NewParamsMK(1024, 0); !errors.Is(err, ErrInvalidParams) {
		t.Fatalf("k = 0: %v", err)
	}
	if _, err := NewParamsMK(1024, MaxK+1); !errors.Is(err, ErrInvalidParams) {
		t.Fatalf("k = MaxK+1: %v", err)
	}
	if _, err := NewParamsMK(MaxBits+1, 7); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("m = MaxBits+1: %v", err)
	}
	p, err := NewParamsMK(1000, 5)
	if err != nil {
		t.Fatal(err)
	}
	if p.M != 1024 || p.K != 5 {
		t.Fatalf("NewParamsMK(1000, 5) = m %d k %d, want m 1024 (rounded up to blocks) k 5", p.M, p.K)
	}
	good := p
	for _, tc := range []struct {
		name   string
		mutate func(*Params)
		want   error
	}{
		{"layout", func(p *Params) { p.Layout = 9 }, ErrInvalidParams},
		{"hash", func(p *Params) { p.Hash = 0 }, ErrInvalidParams},
		{"m not whole blocks", func(p *Params) { p.M = 1000 }, ErrInvalidParams},
		{"m zero", func(p *Params) { p.M = 0 }, ErrInvalidParams},
		{"m huge", func(p *Params) { p.M = 1 << 62 }, ErrTooLarge},
		{"k huge", func(p *Params) { p.K = 1 << 31 }, ErrInvalidParams},
	} {
		bad := good
		tc.mutate(&bad)
		if err := bad.Validate(); !errors.Is(err, tc.want) {
			t.Errorf("%s: Validate() = %v, want %v", tc.name, err, tc.want)
		}
		if _, err := New(bad); !errors.Is(err, tc.want) {
			t.Errorf("%s: New() = %v, want %v", tc.name, err, tc.want)
		}
	}
}

func TestSizingMeetsTargetWithFewBits(t *testing.T) {
	for _, tc := range []struct {
		n          uint64
		fpr        float64
		maxBitsKey float64
	}{
		{1_000_000, 0.01, 10.0},
		{10_000_000, 0.01, 10.0},
		{1_000_000, 0.001, 15.5},
		{1, 0.01, 512},
		{100, 0.5, 10},
	} {
		p, err := NewParams(tc.n, tc.fpr)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.ExpectedFPR(tc.n); got > tc.fpr {
			t.Errorf("n %d p %v: expected rate %v above target", tc.n, tc.fpr, got)
		}
		if bpk := p.BitsPerKey(tc.n); bpk > tc.maxBitsKey {
			t.Errorf("n %d p %v: %.2f bits per key, want <= %v", tc.n, tc.fpr, bpk, tc.maxBitsKey)
		}
		// One block fewer must miss the target, or the plan was not minimal.
		if p.M > BlockBits {
			smaller := p
			smaller.M -= BlockBits
			if smaller.ExpectedFPR(tc.n) <= tc.fpr {
				t.Errorf("n %d p %v: m = %d is not minimal for k = %d", tc.n, tc.fpr, p.M, p.K)
			}
		}
		if c := p.Capacity(tc.fpr); c < tc.n {
			t.Errorf("n %d p %v: Capacity = %d, want >= n", tc.n, tc.fpr, c)
		}
	}
}

// TestBlockedModelAgainstClassic checks the model where it has closed
// forms: with one key per block on average the rate approaches the classic
// Bloom formula from above, and an empty filter has rate 0.
func TestBlockedModelAgainstClassic(t *testing.T) {
	p := Params{Layout: LayoutBlocked512, Hash: HashBLAKE3Keyed, M: 512 * 100000, K: 7}
	if got := p.ExpectedFPR(0); got != 0 {
		t.Fatalf("empty filter rate = %v", got)
	}
	n := uint64(p.M / 10) // 10 bits per key
	classic := math.Pow(1-math.Exp(-7.0/10), 7)
	got := p.ExpectedFPR(n)
	if got < classic || got > classic*1.25 {
		t.Fatalf("blocked rate %v, classic %v: want slightly above classic", got, classic)
	}
}

// TestCompareBytesKeepsSpellingsApart: under CompareBytes a key's bits
// come from its bytes as given (NFC and NFD spellings land apart, as two
// keys), under CompareCanonical from its NFC form (they land together);
// every path (one key, a batch, Params.Positions, a Builder) agrees, and
// a key that is not UTF-8 is refused in both modes.
func TestCompareBytesKeepsSpellingsApart(t *testing.T) {
	nfd, nfc := "cafe\u0301", "caf\u00e9"
	for _, c := range []Compare{CompareCanonical, CompareBytes} {
		p, err := NewParams(1000, 0.01)
		if err != nil {
			t.Fatal(err)
		}
		p.Compare = c
		f, err := New(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Add(context.Background(), nfd); err != nil {
			t.Fatal(err)
		}
		a, _ := p.Positions(nfd)
		b, _ := p.Positions(nfc)
		if same := slices.Equal(a, b); same != (c == CompareCanonical) {
			t.Errorf("%v: NFC and NFD at the same positions: %v", c, same)
		}
		one, _ := f.MightContain(nfd)
		batch, _ := f.MightContainBatch(nil, []string{nfd, nfc})
		if !one || !batch[0] {
			t.Errorf("%v: the key added is not found: %v %v", c, one, batch)
		}
		if batch[1] != (c == CompareCanonical) { // bytes: a false positive here has odds near 1e-15
			t.Errorf("%v: the other spelling answered %v", c, batch[1])
		}
		if fp, _ := f.Positions(nfd); !slices.Equal(fp, a) {
			t.Errorf("%v: the filter's positions %v, Params' %v", c, fp, a)
		}
		bl, err := NewBuilder(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := bl.AddBatch([]string{nfd}); err != nil {
			t.Fatal(err)
		}
		if got, _ := bl.Image().MightContainBatch(nil, []string{nfd}); !got[0] {
			t.Errorf("%v: the builder lost the key", c)
		}
		if _, err := f.MightContain("\xff"); !errors.Is(err, normalize.ErrInvalidUTF8) {
			t.Errorf("%v: a key that is not UTF-8: %v", c, err)
		}
		f.Close()
	}
	if err := (Params{Layout: LayoutBlocked512, Hash: HashBLAKE3Keyed, M: 512, K: 3, Compare: 7}).Validate(); !errors.Is(err, ErrInvalidParams) {
		t.Errorf("unknown Compare: %v", err)
	}
	if c, ok := CompareOf(PolicyBytes); !ok || c != CompareBytes || CompareBytes.Policy() != PolicyBytes {
		t.Errorf("CompareOf(%q) = %v, %v", PolicyBytes, c, ok)
	}
}
