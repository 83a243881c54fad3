package normalize_test

import (
	"errors"
	"fmt"

	"github.com/syncfilter/syncfilter/normalize"
)

func ExampleString() {
	nfd := "cafe\u0301" // "café" with a combining acute accent
	key, err := normalize.String(nfd)
	if err != nil {
		panic(err)
	}
	fmt.Printf("%+q -> %+q (%d bytes)\n", nfd, key, len(key))

	_, err = normalize.String("id-\xff")
	fmt.Println(err, errors.Is(err, normalize.ErrInvalidUTF8))
	// Output:
	// "cafe\u0301" -> "caf\u00e9" (5 bytes)
	// normalize key: invalid UTF-8 at byte offset 3 true
}

func ExampleEquivalents() {
	spellings, ok := normalize.Equivalents("Jos\u00e9", 16)
	fmt.Println(ok)
	for _, s := range spellings {
		fmt.Printf("%+q\n", s)
	}
	_, ok = normalize.Equivalents("KKKKK", 16) // 32 spellings
	fmt.Println(ok)
	// Output:
	// true
	// "Jos\u00e9"
	// "Jose\u0301"
	// "Jose\u0341"
	// false
}
